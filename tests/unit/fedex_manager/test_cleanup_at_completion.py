"""The cleanup of a migration kept for no days, posted when it completes.

Not by the sweeper (one thread of one conductor, one migration after
another: doc/source/manager.rst, "Scale"), which stays the safety net;
the servers are unlocked in Nova at the cleanup's start, once.
"""

import time
import types
from unittest import mock

from oslo_config import cfg

from fedex_manager.actions import cutover as cutover_actions
from fedex_manager.conductor import periodics
from fedex_manager.db import api as db
from fedex_manager.flows.tasks import cleanup as cleanup_tasks
from fedex_manager.flows.tasks import common
from fedex_manager import nova
from fedex_manager import states
from tests.unit.fedex_manager import test_conductor_periodics as sweeping
from tests.unit.fedex_manager import test_nova_cutover as base
from tests.unit.fedex_manager import test_nova_lock

CONF = cfg.CONF


class CompletionTestCase(base.NovaCutoverTestCase):

    def setUp(self):
        super().setUp()
        self.servers = test_nova_lock.FakeNova({'vm0': {'locked': False}})

    def migration(self, retention_days=0):
        m = self.ready_migration()
        db.update(self.ctx, 'migration', m['id'], {'options': dict(
            m['options'], retention_days=retention_days)})
        with mock.patch.object(nova, '_adapter',
                               lambda conf=None: self.servers):
            common.lock_servers(self.ctx, m)
        return self.cutting_over(m)

    def report(self, m, event, **details):
        """What fedex-api records of a nova_fedex report."""
        db.add_event(self.ctx, 'migration', m['id'], 'cutover',
                     'nova: %s (reported by a1)' % event,
                     migration_id=m['id'], details=dict(details, event=event))

    def complete(self, m, **details):
        """nova_fedex's ``completed``, and fedex-api's COMPLETED."""
        self.report(m, 'completed', dest='b1', **details)
        cutover_actions.migration_cutover_finish(self.ctx, m['id'])
        return db.get(self.ctx, 'migration', m['id'])

    def cleanups(self, m):
        return [p for p in self.posted if p[:2] == (m['id'], 'cleanup')]


class TestPostedAtCompletion(CompletionTestCase):

    def test_retention_0_posts_the_cleanup_at_once(self):
        m = self.complete(self.migration(), final_state_check_timeout=0)
        self.assertEqual(states.COMPLETED, m['state'])
        self.assertEqual([(m['id'], 'cleanup', m['generation'])],
                         self.cleanups(m))

    def test_retention_2_does_not(self):
        m = self.complete(self.migration(retention_days=2),
                          final_state_check_timeout=0)
        self.assertEqual(states.COMPLETED, m['state'])
        self.assertEqual([], self.cleanups(m))

    def test_posted_once_whoever_asks_again(self):
        m = self.complete(self.migration(), final_state_check_timeout=0)
        self.assertIsNone(cutover_actions.cleanup_when_due(self.ctx, m['id']))
        self.assertEqual(1, len(self.cleanups(m)))

    def test_waits_for_nova_fedex_s_final_state_check(self):
        # The check reads B's record of the final state, which the cleanup
        # removes: posted on the check's report, not on ``completed``.
        m = self.complete(self.migration(), final_state_check_timeout=900)
        self.assertEqual([], self.cleanups(m))
        self.report(m, 'final_state_checked')
        self.assertTrue(cutover_actions.cleanup_when_due(self.ctx, m['id']))
        self.assertEqual(1, len(self.cleanups(m)))

    def test_a_check_that_never_reports_is_waited_for_boundedly(self):
        m = self.complete(self.migration(), final_state_check_timeout=1)
        self.assertEqual([], self.cleanups(m))
        self.assertTrue(cutover_actions.final_state_pending(self.ctx, m))
        with mock.patch.object(cutover_actions, 'FINAL_STATE_REPORT_GRACE',
                               -1):
            time.sleep(1.1)
            self.assertFalse(cutover_actions.final_state_pending(self.ctx,
                                                                 m))


class TestUnlockInTheCleanup(CompletionTestCase):

    def test_the_cleanup_unlocks_once_and_not_twice(self):
        m = self.complete(self.migration(), final_state_check_timeout=0)
        self.assertEqual([('vm0', {'lock': mock.ANY})], self.servers.actions)
        begin = cleanup_tasks.BeginCleanup()
        with mock.patch.object(nova, '_adapter',
                               lambda conf=None: self.servers):
            begin.execute(m['id'], m['generation'])
            self.assertFalse(self.servers.servers['vm0']['locked'])
            # A job of the phase run again (its conductor died), then the
            # sweeper's net.
            begin.execute(m['id'], m['generation'])
            common.unlock_once(self.ctx, m)
        self.assertEqual([('vm0', {'unlock': None})],
                         self.servers.actions[1:])
        self.assertFalse(self.servers.servers['vm0']['locked'])
        said = [e['message'] for e in db.events(
            self.ctx, {'migration_id': m['id'], 'kind': 'nova'})]
        self.assertEqual(['servers locked in Nova: vm0 locked',
                          'servers unlocked in Nova: vm0 unlocked'], said)


class TestSweeperNet(CompletionTestCase):

    def setUp(self):
        super().setUp()
        CONF.set_override('sweep_interval', 1, group='conductor')
        self.addCleanup(CONF.clear_override, 'sweep_interval',
                        group='conductor')
        self.zk, self.board = sweeping.FakeZK(), sweeping.FakeBoard()
        self.sweeper = periodics.Sweeper(self.board, self.zk, 'sweeper-t')

    def sweep(self):
        with mock.patch.object(nova, '_adapter',
                               lambda conf=None: self.servers):
            self.sweeper.run(periodics.completed)

    def test_a_live_cleanup_job_is_left_alone(self):
        m = self.complete(self.migration(), final_state_check_timeout=0)
        self.board.jobs = [types.SimpleNamespace(details={
            'migration_id': m['id'], 'generation': m['generation']})]
        time.sleep(1.1)     # older than the grace
        self.sweep()
        self.assertEqual(1, len(self.cleanups(m)))
        self.assertEqual(m['generation'], db.get(
            self.ctx, 'migration', m['id'])['generation'])
        # Nor unlocked by the sweeper: the cleanup's job does it.
        self.assertEqual(1, len(self.servers.actions))
        # Its job gone (lost): the net posts it again, and unlocks.
        self.board.jobs = []
        self.sweep()
        self.assertEqual(2, len(self.cleanups(m)))
        self.assertEqual(('vm0', {'unlock': None}), self.servers.actions[-1])

    def test_retention_kept_unlocked_by_the_sweeper_not_cleaned(self):
        m = self.complete(self.migration(retention_days=2),
                          final_state_check_timeout=0)
        time.sleep(1.1)
        self.sweep()
        self.sweep()
        self.assertEqual([], self.cleanups(m))
        self.assertEqual([('vm0', {'unlock': None})],
                         self.servers.actions[1:])

    def test_nor_during_nova_fedex_s_final_state_check(self):
        m = self.complete(self.migration(), final_state_check_timeout=900)
        time.sleep(1.1)
        self.sweep()
        self.assertEqual([], self.cleanups(m))
        self.report(m, 'final_state_unchecked', reason='timeout')
        self.sweep()
        self.assertEqual(1, len(self.cleanups(m)))
