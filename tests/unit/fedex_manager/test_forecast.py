"""The forecast of one migration request: its arithmetic, figure by figure."""

import testtools

from fedex_manager.actions import forecast
from fedex_manager import planner

GIB = 1 << 30
MIB = 1 << 20
LINK = 100e6 / 8                  # 100 Mbit/s


def route(**kw):
    values = dict(link_rate=LINK, round_trip=0.02, catch_up_rate=LINK,
                  export_rate=200e6, import_rate=200e6, transit=18.0,
                  devices=3, shipments=1, threshold=8 * MIB, max_rounds=10,
                  round_overhead=2.0, memory_downtime=0.5, pause_fixed=0.34,
                  plain_pause_fixed=0.22, cutover_setup=30.0)
    values.update(kw)
    return forecast.Route(**values)


def server(sid='vm1', allocated=GIB, memory=512 * MIB, dirty_rate=1e6,
           write_rate=100 * 1024):
    return forecast.Server(sid, allocated, memory, dirty_rate, write_rate)


class TestOneServer(testtools.TestCase):
    """The Horizon preview's case: one server with a 1 GiB disk."""

    def test_wan_only_bytes_are_its_disk_and_memory(self):
        result = forecast.forecast([server()], route())
        wan = result['wan']['wan_bytes']
        # Not the fleet planner's 500 GiB default: the disk and the memory
        # once, and what the guest wrote and dirtied meanwhile.
        self.assertGreater(wan, GIB + 512 * MIB)
        self.assertLess(wan, (GIB + 512 * MIB) * 1.1)
        self.assertEqual(3, result['fedex']['devices'])
        self.assertEqual(0, result['wan']['devices'])

    def test_pause_is_the_model_s(self):
        s, r = server(), route()
        result = forecast.forecast([s], r)
        row, = result['servers']
        copy = planner.memory_copy(s.memory, s.dirty_rate, r.link_rate,
                                   r.memory_downtime)
        self.assertGreater(copy.pause, 0)
        self.assertEqual(copy.rounds, row['memory_copy_rounds'])
        self.assertAlmostEqual(copy.time, row['memory_copy_seconds'])
        # The final delta: what the catch-up left, and the disks' writes
        # during Nova's steps and the memory copy.
        left = result['catch_up']['left_bytes']
        delta = left + s.write_rate * (r.cutover_setup + copy.time)
        self.assertAlmostEqual(delta, row['final_delta_bytes'])
        pause = (r.pause_fixed + copy.pause + delta / r.link_rate
                 + r.round_trip)
        self.assertAlmostEqual(pause, row['pause_seconds'])
        self.assertAlmostEqual(pause, result['fedex']['expected_pause'])
        self.assertTrue(row['converges'])
        # Over the WAN alone: the disks' mirror stays in step, so no delta.
        self.assertAlmostEqual(r.plain_pause_fixed + copy.pause
                               + r.round_trip,
                               result['wan']['expected_pause'])
        self.assertEqual([], result['warnings'])

    def test_phases_add_up(self):
        result = forecast.forecast([server()], route())
        fx = result['fedex']
        self.assertEqual(['export', 'ship', 'import', 'catch_up', 'cutover'],
                         list(fx['phases']))
        self.assertAlmostEqual(GIB / 200e6, fx['phases']['export'])
        self.assertEqual(18.0, fx['phases']['ship'])
        self.assertAlmostEqual(sum(fx['phases'].values()), fx['total_time'])
        self.assertEqual('fedex', result['recommended'])
        # Nova's steps, the memory copy (its paused last round included),
        # the rest of the pause.
        row, = result['servers']
        copy = planner.memory_copy(512 * MIB, 1e6, LINK, 0.5)
        self.assertAlmostEqual(
            30.0 + copy.time + row['pause_seconds'] - copy.pause,
            fx['phases']['cutover'])

    def test_no_memory_no_memory_copy(self):
        result = forecast.forecast([server(memory=0)], route())
        row, = result['servers']
        self.assertEqual(0, row['memory_copy_seconds'])
        self.assertGreater(row['pause_seconds'], 0.34)


class TestConvergence(testtools.TestCase):

    def test_guest_dirtying_faster_than_the_link_is_warned(self):
        busy = server('busy', dirty_rate=2 * LINK)
        result = forecast.forecast([server('idle'), busy], route())
        idle_row, busy_row = result['servers']
        self.assertTrue(idle_row['converges'])
        self.assertFalse(busy_row['converges'])
        self.assertIsNone(busy_row['pause_seconds'])
        self.assertIsNone(result['fedex']['expected_pause'])
        self.assertIsNone(result['fedex']['total_time'])
        self.assertIsNone(result['fedex']['wan_bytes'])
        self.assertIsNone(result['wan']['total_time'])
        self.assertIsNone(result['recommended'])
        warning, = result['warnings']
        self.assertIn('server busy will not converge', warning)
        self.assertIn('200.00 Mbit/s', warning)
        self.assertIn('100.00 Mbit/s', warning)

    def test_dirty_rate_at_the_link_rate_does_not_converge(self):
        result = forecast.forecast([server(dirty_rate=LINK)], route())
        self.assertFalse(result['servers'][0]['converges'])

    def test_catch_up_rounds_stop_at_the_threshold(self):
        # 1 MB/s for about 28 s (export, ship, import): the first round
        # sends 28 MB, the next is expected at 1 MB/s x its 4.3 s.
        result = forecast.forecast([server(write_rate=1e6)], route())
        catch = result['catch_up']
        self.assertEqual(1, catch['rounds'])
        self.assertTrue(catch['converges'])

    def test_catch_up_capped_below_the_writes_never_converges(self):
        result = forecast.forecast(
            [server(write_rate=2 * MIB)], route(catch_up_rate=MIB,
                                                max_rounds=4))
        catch = result['catch_up']
        self.assertEqual(4, catch['rounds'])
        self.assertFalse(catch['converges'])
        self.assertTrue(any('catch-up will not converge' in w
                            for w in result['warnings']))
        # Ready anyway: the cutover still has a pause, with a larger delta.
        self.assertIsNotNone(result['fedex']['expected_pause'])

    def test_wan_only_disk_written_faster_than_the_link(self):
        result = forecast.forecast([server(write_rate=2 * LINK)], route())
        self.assertIsNone(result['wan']['total_time'])
        self.assertTrue(any('over the WAN alone, server vm1 will not '
                            'converge' in w for w in result['warnings']))


class TestDetachedVolumes(testtools.TestCase):

    def test_no_guest_no_pause(self):
        vols = forecast.Server('detached volumes', GIB, 0, 0.0, 0.0,
                               guest=False)
        result = forecast.forecast([vols], route())
        self.assertEqual(0, result['fedex']['expected_pause'])
        self.assertIsNone(result['servers'][0]['pause_seconds'])
        self.assertAlmostEqual(GIB, result['wan']['wan_bytes'])

    def test_assumptions_become_sentences(self):
        result = forecast.forecast([server()], route(), assumes={
            'expected_pause': ['a.', 'b.']}, warnings=['w'])
        self.assertEqual('a. b.', result['assumes']['expected_pause'])
        self.assertEqual(['w'], result['warnings'])


class TestMemoryCopy(testtools.TestCase):

    def test_rounds_until_the_downtime_limit(self):
        # 1 GB over 100 MB/s, dirtied at 50 MB/s: 10 s, 5, 2.5, 1.25,
        # 0.625, 0.3125 -> 6 rounds, the last one paused.
        copy = planner.memory_copy(10 ** 9, 50e6, 100e6, 0.5)
        self.assertEqual(6, copy.rounds)
        self.assertAlmostEqual(0.3125, copy.pause)

    def test_never_converges_at_or_above_the_link(self):
        self.assertIsNone(planner.memory_copy(GIB, 100e6, 100e6, 0.5))

    def test_no_memory(self):
        self.assertEqual(0, planner.memory_copy(0, 1e9, 1e6, 0.5).time)

    def test_milliseconds(self):
        self.assertAlmostEqual(0.02, planner.parse_duration('20ms'))
        self.assertEqual(1024, planner.parse_rate('1KiB/s'))


FAST = 10e9 / 8                   # 10 Gbit/s: Nova's steps dominate


def fleet(n, **kw):
    return [server('vm%d' % (i + 1), **kw) for i in range(n)]


def cutover_phase(servers, r):
    return forecast.forecast(servers, r)['fedex']['phases']['cutover']


class TestParallelCutovers(testtools.TestCase):
    """A wave's members cut over max_parallel_cutovers at a time."""

    def test_two_at_a_time_halve_the_phase_on_a_fast_link(self):
        r1 = route(link_rate=FAST, catch_up_rate=FAST)
        r2 = route(link_rate=FAST, catch_up_rate=FAST, parallel_cutovers=2)
        one, two = cutover_phase(fleet(4), r1), cutover_phase(fleet(4), r2)
        # 4 x (30 s of Nova's steps + a short copy), then 2 x: about half,
        # a little more (the copies share the link two by two).
        self.assertGreater(one, 4 * 30.0)
        self.assertGreater(two, one / 2)
        self.assertLess(two, one / 2 * 1.02)
        fx = forecast.forecast(fleet(4), r2)['fedex']
        self.assertAlmostEqual(sum(fx['phases'].values()), fx['total_time'])

    def test_turns_lengthen_the_final_delta(self):
        # The third and fourth wait for a slot: their disks are written
        # meanwhile, so their final delta (from the catch-up's end to
        # their own pause) is larger than the first two's.
        result = forecast.forecast(fleet(4), route(parallel_cutovers=2))
        deltas = [row['final_delta_bytes'] for row in result['servers']]
        self.assertAlmostEqual(deltas[0], deltas[1])
        self.assertAlmostEqual(deltas[2], deltas[3])
        self.assertGreater(deltas[2], deltas[0] + 100 * 1024 * 30)

    def test_copies_at_once_share_a_slow_link(self):
        s = server()
        alone = planner.memory_copy(s.memory, s.dirty_rate, LINK, 0.5)
        half = planner.memory_copy(s.memory, s.dirty_rate, LINK / 2, 0.5)
        k1 = forecast.forecast(fleet(4), route())
        k2 = forecast.forecast(fleet(4), route(parallel_cutovers=2))
        for row in k1['servers']:
            self.assertAlmostEqual(alone.time, row['memory_copy_seconds'])
        # Two copies at a time, each at half the link: longer, and more
        # memory dirtied meanwhile crosses the WAN.
        for row in k2['servers']:
            self.assertAlmostEqual(half.time, row['memory_copy_seconds'])
            self.assertGreater(row['memory_copy_seconds'],
                               2 * alone.time * 0.99)
            self.assertGreater(row['memory_bytes_over_wan'],
                               k1['servers'][0]['memory_bytes_over_wan'])
        one = k1['fedex']['phases']['cutover']
        two = k2['fedex']['phases']['cutover']
        # Only Nova's steps overlap for free: far from half.
        self.assertLess(two, one)
        self.assertGreater(two, one / 2 + alone.time)
        self.assertGreater(k2['fedex']['wan_bytes'], k1['fedex']['wan_bytes'])

    def test_the_last_one_alone_has_the_whole_link(self):
        s = server()
        alone = planner.memory_copy(s.memory, s.dirty_rate, LINK, 0.5)
        result = forecast.forecast(fleet(3), route(parallel_cutovers=2))
        first, second, third = result['servers']
        self.assertAlmostEqual(first['memory_copy_seconds'],
                               second['memory_copy_seconds'])
        self.assertGreater(first['memory_copy_seconds'], alone.time * 1.9)
        self.assertAlmostEqual(alone.time, third['memory_copy_seconds'])

    def test_more_slots_than_servers(self):
        four = route(parallel_cutovers=4)
        ten = route(parallel_cutovers=10)
        self.assertEqual(cutover_phase(fleet(4), four),
                         cutover_phase(fleet(4), ten))
        # All start at once: the phase is one cutover at a quarter link.
        row = forecast.forecast(fleet(4), ten)['servers'][0]
        s, r = server(), ten
        quarter = planner.memory_copy(s.memory, s.dirty_rate, LINK / 4, 0.5)
        self.assertAlmostEqual(quarter.time, row['memory_copy_seconds'])
        self.assertAlmostEqual(
            r.cutover_setup + quarter.time + r.pause_fixed
            + row['final_delta_bytes'] / (LINK / 4) + r.round_trip,
            cutover_phase(fleet(4), ten))

    def test_one_server_or_one_slot_is_one_after_another(self):
        one = forecast.forecast([server()], route())
        for k in (1, 2, 10):
            same = forecast.forecast([server()], route(parallel_cutovers=k))
            self.assertEqual(one['fedex'], same['fedex'])
            self.assertEqual(one['servers'], same['servers'])
        # k = 1: the phase is the sum of the cutovers, each delta counting
        # the ones before it.
        result = forecast.forecast(fleet(3), route(parallel_cutovers=1))
        self.assertEqual(forecast.forecast(fleet(3), route()), result)
        r = route()
        took = [r.cutover_setup + row['memory_copy_seconds']
                + row['pause_seconds'] - planner.memory_copy(
                    row['memory_bytes'], row['dirty_rate'], LINK,
                    0.5).pause for row in result['servers']]
        self.assertAlmostEqual(sum(took),
                               result['fedex']['phases']['cutover'])

    def test_a_guest_that_converges_alone_but_not_on_its_share(self):
        busy = fleet(2, dirty_rate=0.7 * LINK)
        alone = forecast.forecast(busy, route(convergence='refuse'))
        self.assertTrue(all(r['converges'] for r in alone['servers']))
        shared = forecast.forecast(busy, route(convergence='refuse',
                                               parallel_cutovers=2))
        self.assertIsNone(shared['fedex']['total_time'])
        self.assertIn('server vm1 will not converge: its guest dirties '
                      'memory at 70.00 Mbit/s, the link carries 50.00 '
                      'Mbit/s, its share of a 100.00 Mbit/s link shared by '
                      '2 cutovers at once', shared['warnings'][0])
