"""Waves: one migration per server in one shipment group; cutovers in turns.

The bound (``max_parallel_cutovers``) is checked where every cutover
start asks (``cutover_ready``) and through the sweeper that starts them;
each server's cutover ends on its own (a rollback leaves the others be).
"""

import datetime

from oslo_config import cfg

from fedex_manager.actions import cutover as cutover_actions
from fedex_manager.actions import migrations as migration_actions
from fedex_manager.actions import wave as wave_actions
from fedex_manager.conductor import periodics
from fedex_manager.db import api as db
from fedex_manager import states
from lsrp import exception
from tests.unit.fedex_manager import test_conductor_periodics as tcp

CONF = cfg.CONF


CATCHING_UP = ('snapshot', 'export', 'seal', 'ship', 'deliver', 'import',
               'catch_up')
READY = CATCHING_UP + ('converge',)


def walk(ctx, mid, events):
    for ev in events:
        db.transition(ctx, 'migration', mid, ev)


def servers(n):
    return [{'server_id': 'vm%d' % i,
             'volumes': [{'source_image': 'vms/vm%d_disk' % i,
                          'size_bytes': 4 << 20}]} for i in range(n)]


class WaveTestCase(tcp.SweeperTestCase):

    def wave(self, n=3, **options):
        options.setdefault('cutover', 'approved')
        return wave_actions.wave_create(self.ctx, servers(n), 'site-a',
                                        'site-b', options=options)

    def ready(self, wave, approved=True):
        """Every member READY_FOR_CUTOVER (as after its catch-up).

        Since an hour: past the sweeper's grace.
        """
        since = datetime.datetime.utcnow() - datetime.timedelta(hours=1)
        for s in wave['servers']:
            walk(self.ctx, s['migration_id'], READY)
            db.update(self.ctx, 'migration', s['migration_id'], {
                'cutover_approved': approved, 'updated_at': since})

    def member_states(self, wave_id):
        return [s['state'] for s in
                wave_actions.wave_show(self.ctx, wave_id)['servers']]


class TestWaveCreate(WaveTestCase):

    def test_one_migration_per_server_in_one_shipment_group(self):
        w = self.wave(3, max_parallel_cutovers=1)
        self.assertTrue(w['id'].startswith('wave-'))
        self.assertEqual(['vm0', 'vm1', 'vm2'],
                         [s['server_id'] for s in w['servers']])
        ms = [db.get(self.ctx, 'migration', s['migration_id'])
              for s in w['servers']]
        # One group (the wave), one route, each its own migration.
        self.assertEqual({w['id']},
                         {m['options']['shipment_group'] for m in ms})
        self.assertEqual(1, len({(m['source_terminal_id'],
                                  m['dest_terminal_id']) for m in ms}))
        self.assertEqual(['%s-%d' % (w['id'], i) for i in (1, 2, 3)],
                         [m['name'] for m in ms])
        self.assertEqual([['vms/vm%d_disk' % i] for i in range(3)],
                         [s['images'] for s in w['servers']])
        # Each one's prepare posted once all existed.
        self.assertEqual(sorted(m['id'] for m in ms),
                         sorted(mid for mid, phase, _ in self.posted
                                if phase == 'prepare'))
        self.assertEqual(states.REQUESTED, w['state'])
        self.assertEqual(1, w['max_parallel_cutovers'])
        self.assertEqual(12 << 20, w['progress']['bytes_total'])
        shown = cutover_actions.progress.annotate(ms[0])
        self.assertEqual(w['id'], shown['wave'])

    def test_a_wave_is_closed_nobody_joins_it_later(self):
        w = self.wave(2)
        ms = [db.get(self.ctx, 'migration', s['migration_id'])
              for s in w['servers']]
        # Its leader packs at once: no shipment_group_window to wait.
        self.assertEqual([True, True], [m['options']['shipment_group_closed']
                                        for m in ms])
        e = self.assertRaises(
            exception.InvalidInput, migration_actions.migration_create,
            self.ctx, servers(1), 'site-a', 'site-b',
            options={'shipment_group': w['id']})
        self.assertIn('made whole by one request', str(e))

    def test_named_wave_and_bad_input(self):
        w = wave_actions.wave_create(self.ctx, servers(2), 'site-a',
                                     'site-b', name='rack-12')
        self.assertEqual('rack-12', w['id'])
        e = self.assertRaises(exception.InvalidInput,
                              wave_actions.wave_create, self.ctx,
                              servers(1), 'site-a', 'site-b',
                              name='rack-12')
        self.assertIn('exists already', str(e))
        e = self.assertRaises(exception.InvalidInput,
                              wave_actions.wave_create, self.ctx,
                              servers(1), 'site-a', 'site-b',
                              name='no spaces')
        self.assertIn('name', str(e))
        # A bad server: nothing of the wave is made.
        bad = servers(2) + [{'server_id': 'vm9', 'volumes': ['nopool']}]
        before = len(db.list_(self.ctx, 'migration'))
        self.assertRaises(exception.InvalidInput, wave_actions.wave_create,
                          self.ctx, bad, 'site-a', 'site-b')
        self.assertEqual(before, len(db.list_(self.ctx, 'migration')))
        e = self.assertRaises(exception.InvalidInput, self.wave, 1,
                              max_parallel_cutovers=0)
        self.assertIn('max_parallel_cutovers', str(e))
        self.assertRaises(exception.NotFound, wave_actions.wave_show,
                          self.ctx, 'wave-nothere')


class TestCutoverBound(WaveTestCase):

    def test_at_most_max_parallel_cutovers_at_once(self):
        w = self.wave(3)
        self.ready(w)
        ids = [s['migration_id'] for s in w['servers']]
        for mid in ids[:2]:
            self.assertTrue(cutover_actions.cutover_ready(self.ctx,
                                                          mid)['ready'])
            cutover_actions.migration_cutover_start(self.ctx, mid)
        third = cutover_actions.cutover_ready(self.ctx, ids[2])
        self.assertFalse(third['ready'])
        self.assertIn('2 server(s) of wave %s cutting over' % w['id'],
                      third['reasons'][0])
        self.assertIn('max_parallel_cutovers = 2', third['reasons'][0])
        e = self.assertRaises(exception.InvalidTransition,
                              cutover_actions.migration_cutover_start,
                              self.ctx, ids[2])
        self.assertIn('max_parallel_cutovers', str(e))
        shown = wave_actions.wave_show(self.ctx, w['id'])
        self.assertIn('waiting for one to end', shown['servers'][2]['waiting'])
        self.assertEqual(2, shown['progress']['cutting_over'])
        # One ends: the third's turn, started by whoever recorded the end
        # (not at the sweeper's next turn).
        cutover_actions.migration_cutover_finish(self.ctx, ids[0])
        self.assertEqual([states.COMPLETED, states.CUTTING_OVER,
                          states.CUTTING_OVER], self.member_states(w['id']))
        self.assertEqual(3, sum(1 for _, phase, _ in self.posted
                                if phase == 'cutover'))

    def test_start_in_turn_waits_for_a_slot_without_raising(self):
        # What a member's catch-up calls at its end (automatic cutover).
        w = self.wave(2, max_parallel_cutovers=1)
        self.ready(w)
        first, second = [db.get(self.ctx, 'migration', s['migration_id'])
                         for s in w['servers']]
        self.assertTrue(cutover_actions.start_in_turn(self.ctx, first))
        self.assertFalse(cutover_actions.start_in_turn(self.ctx, second))
        self.assertEqual([states.CUTTING_OVER, states.READY_FOR_CUTOVER],
                         self.member_states(w['id']))

    def test_a_rollback_frees_its_slot_at_once_too(self):
        w = self.wave(3, max_parallel_cutovers=1)
        self.ready(w)
        ids = [s['migration_id'] for s in w['servers']]
        cutover_actions.migration_cutover_start(self.ctx, ids[0])
        cutover_actions.migration_cutover_finish(
            self.ctx, ids[0], success=False, reason='final delta failed')
        self.assertEqual([states.CATCHING_UP, states.CUTTING_OVER,
                          states.READY_FOR_CUTOVER],
                         self.member_states(w['id']))

    def test_not_approved_members_are_not_started_when_a_slot_frees(self):
        w = self.wave(2, max_parallel_cutovers=1)
        self.ready(w, approved=False)
        ids = [s['migration_id'] for s in w['servers']]
        cutover_actions.migration_approve_cutover(self.ctx, ids[0])
        cutover_actions.migration_cutover_start(self.ctx, ids[0])
        cutover_actions.migration_cutover_finish(self.ctx, ids[0])
        self.assertEqual([states.COMPLETED, states.READY_FOR_CUTOVER],
                         self.member_states(w['id']))

    def test_the_bound_is_per_wave_and_a_migration_alone_has_none(self):
        w1, w2 = self.wave(2, max_parallel_cutovers=1), self.wave(2)
        self.ready(w1)
        self.ready(w2)
        cutover_actions.migration_cutover_start(
            self.ctx, w1['servers'][0]['migration_id'])
        self.assertFalse(cutover_actions.cutover_ready(
            self.ctx, w1['servers'][1]['migration_id'])['ready'])
        # Another wave is not held back by this one.
        for s in w2['servers']:
            self.assertTrue(cutover_actions.cutover_ready(
                self.ctx, s['migration_id'])['ready'])

    def test_the_sweeper_starts_approved_cutovers_in_turns(self):
        w = self.wave(3, max_parallel_cutovers=2)
        self.ready(w)
        periodics.ready_for_cutover(self.sweeper, self.ctx)
        self.assertEqual(sorted([states.CUTTING_OVER, states.CUTTING_OVER,
                                 states.READY_FOR_CUTOVER]),
                         sorted(self.member_states(w['id'])))
        self.assertEqual(2, sum(1 for _, phase, _ in self.posted
                                if phase == 'cutover'))
        # Nothing more while both run.
        periodics.ready_for_cutover(self.sweeper, self.ctx)
        self.assertEqual(2, sum(1 for _, phase, _ in self.posted
                                if phase == 'cutover'))
        running = [s['migration_id'] for s in wave_actions.wave_show(
            self.ctx, w['id'])['servers'] if s['state'] ==
            states.CUTTING_OVER]
        cutover_actions.migration_cutover_finish(self.ctx, running[0])
        # (The waiting one was kept warm meanwhile: a round, then READY
        # again, past the grace.)
        since = datetime.datetime.utcnow() - datetime.timedelta(hours=1)
        for s in wave_actions.wave_show(self.ctx, w['id'])['servers']:
            if s['state'] == states.READY_FOR_CUTOVER:
                db.update(self.ctx, 'migration', s['migration_id'],
                          {'updated_at': since})
        periodics.ready_for_cutover(self.sweeper, self.ctx)
        self.assertEqual(3, sum(1 for _, phase, _ in self.posted
                                if phase == 'cutover'))

    def test_the_cutover_window_still_holds(self):
        w = self.wave(2, cutover_window={'start': '00:00', 'end': '00:00'})
        self.ready(w)
        periodics.ready_for_cutover(self.sweeper, self.ctx)
        self.assertEqual([states.READY_FOR_CUTOVER] * 2,
                         self.member_states(w['id']))
        shown = wave_actions.wave_show(self.ctx, w['id'])
        self.assertIn('outside the cutover window',
                      shown['servers'][0]['waiting'])


class TestLongestFirst(WaveTestCase):
    """Members with more disks (longer cutovers) take the slots first."""

    def setUp(self):
        super().setUp()
        CONF.set_override('longest_cutover_first_wait', 120,
                          group='conductor')
        self.addCleanup(CONF.clear_override, 'longest_cutover_first_wait',
                        group='conductor')

    def long_wave(self, **options):
        # vm0 and vm1: a root disk; vm2: one volume more; vm3: two more.
        options.setdefault('cutover', 'approved')
        ss = servers(4)
        for i, extra in ((2, 1), (3, 2)):
            ss[i]['volumes'] += [{'source_image': 'volumes/v%d_%d' % (i, k),
                                  'size_bytes': 4 << 20}
                                 for k in range(extra)]
        w = wave_actions.wave_create(self.ctx, ss, 'site-a', 'site-b',
                                     options=options)
        ids = [s['migration_id'] for s in w['servers']]
        for mid in ids:
            walk(self.ctx, mid, CATCHING_UP)
            db.update(self.ctx, 'migration', mid, {'cutover_approved': True})
        return w, ids

    def converge(self, mid, ago=0):
        db.transition(self.ctx, 'migration', mid, 'converge')
        when = datetime.datetime.utcnow() - datetime.timedelta(seconds=ago)
        db.update(self.ctx, 'migration', mid, {'updated_at': when})
        return db.get(self.ctx, 'migration', mid)

    def test_short_ones_leave_the_last_slots_to_longer_ones(self):
        w, ids = self.long_wave(max_parallel_cutovers=2)
        first = self.converge(ids[0])
        # Two slots free, two longer members still catching up: it waits.
        self.assertFalse(cutover_actions.start_in_turn(self.ctx, first))
        waiting = wave_actions.wave_show(self.ctx, w['id'])['servers'][0][
            'waiting']
        self.assertIn('leaving the 2 free slot(s)', waiting)
        self.assertIn('longest_cutover_first_wait', waiting)
        self.assertIn(ids[3][:8] + ' CATCHING_UP', waiting)
        # The longest arrives and starts; then one slot, one longer member
        # still to come: the short ones still wait for it.
        longest = self.converge(ids[3])
        self.assertTrue(cutover_actions.start_in_turn(self.ctx, longest))
        self.assertEqual([], cutover_actions.start_waiting_members(
            self.ctx, longest))
        second = self.converge(ids[2])
        self.assertTrue(cutover_actions.start_in_turn(self.ctx, second))
        self.assertEqual([states.READY_FOR_CUTOVER, states.CATCHING_UP,
                          states.CUTTING_OVER, states.CUTTING_OVER],
                         self.member_states(w['id']))
        # The longer ones end: the short ones take their slots at once.
        cutover_actions.migration_cutover_finish(self.ctx, ids[3])
        self.assertEqual(states.CUTTING_OVER,
                         self.member_states(w['id'])[0])

    def test_the_slots_left_are_taken_when_the_longer_one_starts(self):
        w, ids = self.long_wave(max_parallel_cutovers=3)
        for mid in ids[:2]:
            self.converge(mid)
        self.converge(ids[2])
        longest = self.converge(ids[3])
        # What the catch-up's end does: its own start, then the others'.
        self.assertTrue(cutover_actions.start_in_turn(self.ctx, longest))
        started = cutover_actions.start_waiting_members(self.ctx, longest)
        # The longer first: vm2, then one of the two short ones.
        self.assertEqual([ids[2], ids[0]], started)
        self.assertEqual([states.CUTTING_OVER, states.READY_FOR_CUTOVER,
                          states.CUTTING_OVER, states.CUTTING_OVER],
                         self.member_states(w['id']))

    def test_the_wait_is_bounded(self):
        w, ids = self.long_wave(max_parallel_cutovers=1)
        first = self.converge(ids[0], ago=121)
        self.assertTrue(cutover_actions.start_in_turn(self.ctx, first))

    def test_off_with_zero(self):
        CONF.set_override('longest_cutover_first_wait', 0,
                          group='conductor')
        w, ids = self.long_wave(max_parallel_cutovers=1)
        self.assertTrue(cutover_actions.start_in_turn(
            self.ctx, self.converge(ids[0])))

    def test_a_longer_member_that_waits_for_its_approval_holds_nothing(self):
        w, ids = self.long_wave(max_parallel_cutovers=1)
        for mid in ids[2:]:
            db.update(self.ctx, 'migration', mid, {'cutover_approved': False})
        self.assertTrue(cutover_actions.start_in_turn(
            self.ctx, self.converge(ids[0])))

    def test_the_sweeper_starts_the_longest_first(self):
        w, ids = self.long_wave(max_parallel_cutovers=1)
        for mid in ids:
            self.converge(mid, ago=3600)
        periodics.ready_for_cutover(self.sweeper, self.ctx)
        self.assertEqual([states.READY_FOR_CUTOVER] * 3 +
                         [states.CUTTING_OVER],
                         self.member_states(w['id']))


class TestPerServerCutovers(WaveTestCase):

    def test_a_rollback_leaves_the_others_be(self):
        w = self.wave(3, max_parallel_cutovers=3)
        self.ready(w)
        ids = [s['migration_id'] for s in w['servers']]
        for mid in ids:
            cutover_actions.migration_cutover_start(self.ctx, mid)
        cutover_actions.migration_cutover_finish(self.ctx, ids[0])
        cutover_actions.migration_cutover_finish(
            self.ctx, ids[1], success=False, reason='final delta failed')
        cutover_actions.migration_cutover_finish(self.ctx, ids[2])
        shown = wave_actions.wave_show(self.ctx, w['id'])
        self.assertEqual([states.COMPLETED, states.CATCHING_UP,
                          states.COMPLETED],
                         [s['state'] for s in shown['servers']])
        # The wave is as far as its slowest server; its catch-up posted.
        self.assertEqual(states.CATCHING_UP, shown['state'])
        self.assertIn((ids[1], 'catchup'),
                      [(mid, phase) for mid, phase, _ in self.posted])
        self.assertEqual('final delta failed',
                         shown['servers'][1]['last_error'])
        outcomes = [[c['outcome'] for c in s['cutovers']]
                    for s in shown['servers']]
        self.assertEqual([[states.COMPLETED], [states.ROLLED_BACK],
                          [states.COMPLETED]], outcomes)
        for s in shown['servers']:
            self.assertIsNotNone(s['cutovers'][0]['started_at'])
            self.assertIsNotNone(s['cutovers'][0]['seconds'])
        self.assertEqual(2, shown['progress']['completed'])
        self.assertEqual({states.COMPLETED: 2, states.CATCHING_UP: 1},
                         shown['states'])

    def test_wave_cutover_approves_and_abort_spares_the_cut_over(self):
        w = self.wave(3, max_parallel_cutovers=1)
        self.ready(w, approved=False)
        ids = [s['migration_id'] for s in w['servers']]
        shown = wave_actions.wave_show(self.ctx, w['id'])
        self.assertIn('approve_cutover', shown['allowed_actions'])
        self.assertIn('not approved', shown['servers'][0]['waiting'])
        shown = wave_actions.wave_cutover(self.ctx, w['id'])
        self.assertEqual([True] * 3,
                         [s['cutover_approved'] for s in shown['servers']])
        cutover_actions.migration_cutover_start(self.ctx, ids[0])
        cutover_actions.migration_cutover_finish(self.ctx, ids[0])
        # The next one's turn came at once; the abort spares it too.
        shown = wave_actions.wave_abort(self.ctx, w['id'], reason='test')
        self.assertEqual([states.COMPLETED, states.CUTTING_OVER,
                          states.ABORTING],
                         [s['state'] for s in shown['servers']])


class TestWaveETA(WaveTestCase):

    def test_eta_is_the_data_then_the_cutovers_in_turns(self):
        w = self.wave(4, max_parallel_cutovers=2)
        ids = [s['migration_id'] for s in w['servers']]
        for mid in ids:
            walk(self.ctx, mid, CATCHING_UP)
            db.update(self.ctx, 'migration', mid, {'eta_seconds': 50.0})
        db.update(self.ctx, 'migration', ids[1], {'eta_seconds': 80.0})
        shown = wave_actions.wave_show(self.ctx, w['id'])
        # No cutover measured yet: the data's ETA, its slowest server's.
        self.assertEqual(80.0, shown['progress']['eta_seconds'])
        self.assertEqual(50.0,
                         shown['servers'][0]['progress']['eta_seconds'])
        servers_ = [dict(s, cutovers=[]) for s in shown['servers']]
        servers_[0] = dict(servers_[0], state=states.COMPLETED, cutovers=[
            {'outcome': states.COMPLETED, 'seconds': 30.0}])
        from fedex_manager import waves
        # Three left, two at a time: two turns of 30 s after the data.
        self.assertEqual(80.0 + 2 * 30.0, waves.eta(servers_, 2))
