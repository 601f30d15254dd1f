"""The sweeper's periodic jobs: their order, spacings and lock."""

import datetime
import threading
import time
import types

import fixtures
from oslo_config import cfg

from fedex_manager.actions import lifecycle
from fedex_manager.actions import wave as wave_actions
from fedex_manager.conductor import periodics
from fedex_manager.db import api as db
from fedex_manager import states
from tests.unit.fedex_manager import test_actions

CONF = cfg.CONF


class FakeLock(object):

    def __init__(self, free=True, contenders=()):
        self.free, self.held = free, False
        self._contenders = list(contenders)

    def acquire(self, blocking=True):
        self.held = self.free
        return self.free

    def release(self):
        self.held = False

    def contenders(self):
        return self._contenders


class FakeZK(object):
    """The sweeper lock, and a migration's post/run locks (contenders)."""

    def __init__(self):
        self.sweeper_lock = FakeLock()
        self.contenders = {}    # lock path -> who holds it

    def Lock(self, path, identifier=None):
        if path.endswith('-sweeper'):
            return self.sweeper_lock
        return FakeLock(contenders=self.contenders.get(path, ()))


class FakeBoard(object):

    def __init__(self):
        self.jobs = []

    def iterjobs(self, ensure_fresh=False):
        return iter(self.jobs)


class SweeperTestCase(test_actions.ActionsTestCase):

    def setUp(self):
        super().setUp()
        for opt, value in (('sweep_interval', 30),
                           ('server_check_interval', 20),
                           ('compute_driver', 'nova')):
            CONF.set_override(opt, value, group='conductor')
            self.addCleanup(CONF.clear_override, opt, group='conductor')
        self.zk, self.board = FakeZK(), FakeBoard()
        self.sweeper = periodics.Sweeper(self.board, self.zk, 'sweeper-t')


class TestWorker(SweeperTestCase):

    def test_jobs_in_order_with_their_spacings(self):
        got = [(cb.__name__, cb._periodic_spacing)
               for cb, _, _ in periodics.callables(self.sweeper)]
        self.assertEqual([
            ('repost_lost_phases', 30), ('ready_for_cutover', 30),
            ('cutting_over', 30), ('completed', 30), ('courier_events', 30),
            ('wipe_returned_devices', 30), ('return_devices_home', 30),
            ('deleted_servers', 20), ('remove_ended_locks', 30)], got)

    def test_no_look_in_nova_without_nova(self):
        CONF.set_override('compute_driver', 'none', group='conductor')
        names = [cb.__name__ for cb, _, _ in
                 periodics.callables(self.sweeper)]
        self.assertNotIn('deleted_servers', names)
        self.assertEqual(8, len(names))

    def test_jobs_due_together_run_in_their_order(self):
        ran = []
        done = threading.Event()

        def recorder(name, last=False):
            def fn(sweeper, ctx):
                ran.append(name)
                if last:
                    done.set()
            fn.__name__ = name
            return fn
        self.useFixture(fixtures.MonkeyPatch(
            'fedex_manager.conductor.periodics.JOBS', [
                (recorder(n, n == 'c'), periodics._sweep_interval,
                 periodics._always) for n in 'abc']))
        CONF.set_override('sweep_interval', 1, group='conductor')
        worker = periodics.worker(self.sweeper)
        t = threading.Thread(target=worker.start, daemon=True)
        t.start()
        self.addCleanup(worker.wait, 10)
        self.addCleanup(worker.stop)
        self.assertTrue(done.wait(10))
        self.assertEqual(['a', 'b', 'c'], ran[:3])
        self.assertFalse(self.zk.sweeper_lock.held)


class TestSweeperLock(SweeperTestCase):

    def test_job_skipped_while_another_conductor_sweeps(self):
        self.zk.sweeper_lock.free = False
        ran = []
        self.sweeper.run(lambda sweeper, ctx: ran.append(ctx))
        self.assertEqual([], ran)

    def test_lock_released_after_a_failed_job(self):
        def fails(sweeper, ctx):
            self.assertTrue(self.zk.sweeper_lock.held)
            raise RuntimeError('boom')
        self.assertRaises(RuntimeError, self.sweeper.run, fails)
        self.assertFalse(self.zk.sweeper_lock.held)


class TestRepostLostPhases(SweeperTestCase):

    def setUp(self):
        super().setUp()
        self.posted_before = len(self.posted)
        self.m = self.create(start=False)
        self.assertEqual(states.REQUESTED, self.m['state'])
        CONF.set_override('sweep_interval', 1, group='conductor')

    def sweep(self):
        self.sweeper.run(periodics.repost_lost_phases)
        return self.posted[self.posted_before:]

    def test_fresh_state_change_is_left_alone(self):
        CONF.set_override('sweep_interval', 3600, group='conductor')
        self.assertEqual([], self.sweep())

    def test_job_on_the_board_or_a_lock_held_is_not_posted_over(self):
        time.sleep(1.1)     # older than the grace
        self.board.jobs = [types.SimpleNamespace(details={
            'migration_id': self.m['id'],
            'generation': self.m['generation']})]
        self.assertEqual([], self.sweep())
        self.board.jobs = []
        path = '%s-locks/run-%s' % (CONF.jobboard.path, self.m['id'])
        self.zk.contenders[path] = ['conductor-2']
        self.assertEqual([], self.sweep())

    def test_board_list_read_without_each_jobs_state(self):
        # taskflow's ZooKeeper board: its list refreshed (_fetch_jobs), not
        # iterjobs, which asks ZooKeeper for the state of every job.
        time.sleep(1.1)
        job = types.SimpleNamespace(details={
            'migration_id': self.m['id'],
            'generation': self.m['generation']})
        fresh = []

        def fetch(ensure_fresh=False):
            fresh.append(ensure_fresh)
            return [job]

        def iterjobs(ensure_fresh=False):
            raise AssertionError('a ZooKeeper read per job')
        self.board._fetch_jobs, self.board.iterjobs = fetch, iterjobs
        self.assertEqual([], self.sweep())
        self.assertTrue(fresh and all(fresh))
        fresh[:] = []
        job.details = {}
        self.assertEqual(1, len(self.sweep()))
        self.assertTrue(fresh and all(fresh))

    def test_lost_phase_is_posted(self):
        time.sleep(1.1)
        gen = self.m['generation'] + 1
        self.assertEqual([(self.m['id'], 'prepare', gen)], self.sweep())
        self.assertEqual(gen, db.get(self.ctx, 'migration',
                                     self.m['id'])['generation'])


class TestFollowersLeftToTheirLeader(SweeperTestCase):
    """A group's followers, posted only when their leader is not prepared.

    While it is, it moves them on: they need no job of their own.
    """

    def setUp(self):
        super().setUp()
        CONF.set_override('sweep_interval', 1, group='conductor')
        w = wave_actions.wave_create(self.ctx, [
            {'server_id': 'vm%d' % i,
             'volumes': [{'source_image': 'vms/vm%d_disk' % i,
                          'size_bytes': 4 << 20}]} for i in range(3)],
            'site-a', 'site-b', options={'cutover': 'approved'})
        self.ids = [s['migration_id'] for s in w['servers']]
        self.lead, self.f1, self.f2 = self.ids
        # The followers' first prepare parked (their job ended): none of
        # theirs on the board.
        self.posted_before = len(self.posted)

    def sweep(self):
        # Every state older than the sweeper's grace.
        since = datetime.datetime.utcnow() - datetime.timedelta(hours=1)
        for mid in self.ids:
            db.update(self.ctx, 'migration', mid, {'updated_at': since})
        self.sweeper.run(periodics.repost_lost_phases)
        out = [mid for mid, _, _ in self.posted[self.posted_before:]]
        self.posted_before = len(self.posted)
        return out

    def live(self, *mids):
        """The jobs on the board: those of these migrations, as now."""
        self.board.jobs = [types.SimpleNamespace(details={
            'migration_id': mid, 'generation': db.get(
                self.ctx, 'migration', mid)['generation']}) for mid in mids]

    def walk(self, event, mids):
        for mid in mids:
            db.transition(self.ctx, 'migration', mid, event)

    def test_not_posted_while_the_leader_has_its_job(self):
        self.live(self.lead)
        self.assertEqual([], self.sweep())
        # Its job running (the run lock held): the same.
        self.board.jobs = []
        self.zk.contenders['%s-locks/run-%s' % (
            CONF.jobboard.path, self.lead)] = ['conductor-2']
        self.assertEqual([], self.sweep())

    def test_a_leader_without_job_is_posted_its_followers_are_not(self):
        # Its post lost, or parked (Pack short of devices): the sweeper
        # posts the leader, which works for the group.
        self.assertEqual([self.lead], self.sweep())
        self.live(self.lead)
        self.assertEqual([], self.sweep())

    def test_moved_on_by_the_leader_without_jobs_of_their_own(self):
        # As the leader's Snapshot, then Seal, moves the whole group.
        self.live(self.lead)
        self.walk('snapshot', self.ids)
        self.assertEqual([], self.sweep())
        self.walk('export', self.ids)
        self.assertEqual([], self.sweep())
        self.walk('seal', self.ids)
        self.board.jobs = []
        # SEALED: the courier's events move them on; nothing to post.
        self.assertEqual([], self.sweep())
        self.assertEqual([states.SEALED] * 3, [
            db.get(self.ctx, 'migration', mid)['state'] for mid in self.ids])

    def test_leader_failed_its_followers_are_posted(self):
        self.walk('snapshot', self.ids)
        self.walk('export', self.ids)
        db.transition(self.ctx, 'migration', self.lead, 'fail',
                      values={'failed_in': states.EXPORTING})
        self.assertEqual(sorted([self.f1, self.f2]), sorted(self.sweep()))

    def test_leader_aborted_the_next_takes_the_lead(self):
        lifecycle.migration_abort(self.ctx, self.lead, 'test')
        self.posted_before = len(self.posted)
        # The leader's abort runs: no longer the group's leader. The next
        # member is posted (it leads now), the third is left to it.
        self.live(self.lead)
        self.assertEqual([self.f1], self.sweep())
        self.live(self.lead, self.f1)
        self.assertEqual([], self.sweep())
        # The new leader's job gone too (aborted as well): the third leads.
        lifecycle.migration_abort(self.ctx, self.f1, 'test')
        self.posted_before = len(self.posted)
        self.live(self.lead, self.f1)
        self.assertEqual([self.f2], self.sweep())
