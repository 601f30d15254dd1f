"""The soak's checks: no operation executed twice, the user's stop."""

import os
import tempfile
from unittest import mock

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


class TestStopTookEffect(testtools.TestCase):

    def env(self, events):
        env = mock.Mock()
        env.openstack.return_value = events
        return env

    def test_a_stop_nova_failed_leaves_the_server_active(self):
        track = mock.Mock(server_id='s1')
        self.assertFalse(invariants.stop_took_effect(self.env([
            {'Action': 'create', 'Start Time': '2026-11-28T23:23:40',
             'Message': None},
            {'Action': 'stop', 'Start Time': '2026-11-28T23:26:38',
             'Message': 'Error'}]), track))

    def test_the_last_stop_counts(self):
        track = mock.Mock(server_id='s1')
        self.assertTrue(invariants.stop_took_effect(self.env([
            {'Action': 'stop', 'Start Time': '2026-11-28T23:30:00',
             'Message': None},
            {'Action': 'stop', 'Start Time': '2026-11-28T23:26:38',
             'Message': 'Error'}]), track))
        self.assertFalse(invariants.stop_took_effect(self.env([]), track))
