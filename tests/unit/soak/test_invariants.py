"""The soak's "no operation executed twice" check, from agents' logs."""

import os
import tempfile

import testtools

from tests.soak import invariants

LOG = '''\
2026-11-28 23:23:45.131 4931 INFO fedex_manager.agent.agent [-] \
terminal-site-a: started final_delta m1.final_delta.2 (attempt 1)
2026-11-28 23:23:45.347 4931 ERROR fedex_manager.agent.agent [-] \
terminal-site-a: final_delta m1.final_delta.2 failed: terminal \
terminal-site-b at 10.77.175.2:20811: unreachable: Invalid argument
2026-11-28 23:23:48.614 4931 INFO fedex_manager.agent.agent [-] \
terminal-site-a: started final_delta m1.final_delta.2 (attempt 2)
2026-11-28 23:24:00.000 4931 INFO fedex_manager.agent.agent [-] \
terminal-site-a: started export m1.export (attempt 1)
2026-11-28 23:25:00.000 4931 INFO fedex_manager.agent.agent [-] \
terminal-site-a: started export m1.export (attempt 2)
'''


class TestOpsOnce(testtools.TestCase):

    def setUp(self):
        super().setUp()
        fd, self.log = tempfile.mkstemp()
        self.addCleanup(os.unlink, self.log)
        with os.fdopen(fd, 'w') as f:
            f.write(LOG)

    def test_a_retry_after_a_failure_is_no_second_execution(self):
        starts = invariants.agent_starts(self.log)
        failures = invariants.agent_failures(self.log)
        self.assertEqual([('terminal-site-a', 'm1.final_delta.2')],
                         [(t, op) for _, t, op in failures])
        found = invariants.check_ops_once(
            starts, {}, {'m1.final_delta.2', 'm1.export'}, failures)
        # The export started twice with neither a failure nor a crash.
        self.assertEqual(1, len(found), found)
        self.assertIn('export m1.export started again at attempt 2',
                      found[0][1])

    def test_a_crash_in_between_is_no_second_execution(self):
        starts = invariants.agent_starts(self.log)
        killed = starts[-1][0] - 1
        self.assertEqual([], invariants.check_ops_once(
            starts, {'terminal-site-a': [killed]}, {'m1.export'}))
