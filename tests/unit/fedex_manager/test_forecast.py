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
