"""The one model of a guest's memory copy and the cutover's verdict."""

import testtools

from fedex_manager.actions import forecast
from fedex_manager import planner

MIB = float(1 << 20)
LINK = 8 * MIB


def model(dirty, memory=80 * MIB, budget=2.0, policy='auto-converge',
          working_set=None, other=0.4):
    return planner.memory_forecast(memory, dirty, LINK, 0.5,
                                   other_pause=other, budget=budget,
                                   policy=policy, working_set=working_set)


class TestMemoryForecast(testtools.TestCase):

    def test_idle_guest_pre_copy(self):
        f = model(0.0)
        self.assertEqual('pre-copy', f.means)
        self.assertIsNone(f.reason)
        # One round of its 80 MiB at 8 MiB/s, nothing left for the pause
        # but the rest of it.
        self.assertAlmostEqual(10.0, f.copy_seconds)
        self.assertAlmostEqual(0.4, f.pause_seconds)

    def test_pre_copy_is_the_stock_model(self):
        f = model(2 * MIB)
        copy = planner.memory_copy(80 * MIB, 2 * MIB, LINK, 0.5)
        self.assertEqual('pre-copy', f.means)
        self.assertAlmostEqual(copy.time, f.copy_seconds)
        self.assertAlmostEqual(copy.pause + 0.4, f.pause_seconds)

    def test_faster_than_the_link_refused_with_the_forecast(self):
        f = model(20 * MIB, policy='refuse', working_set=20 * MIB)
        self.assertFalse(f.converges)
        self.assertIsNone(f.means)
        # Forced over, the pause would be its working set over the link.
        self.assertAlmostEqual(20 / 8 + 0.4, f.pause_seconds)
        self.assertEqual(
            "dirty rate 21.0 MB/s exceeds the link's 8.4 MB/s; expected "
            "pause 2.9 s > budget 2 s", f.reason)

    def test_faster_than_the_link_auto_converges(self):
        f = model(20 * MIB, working_set=20 * MIB)
        self.assertEqual('auto-converge', f.means)
        self.assertIn('exceeds the link', f.reason)
        # QEMU's steps: 20 %, then +10: enough once what the guest dirties
        # in a round fits the downtime limit.
        self.assertGreaterEqual(f.throttle, 0.6)
        self.assertLessEqual(f.throttle, planner.THROTTLE_MAX)
        self.assertLessEqual(f.pause_seconds, 2.0)
        self.assertLessEqual(f.memory_pause_seconds, 0.5)
        self.assertGreater(f.copy_seconds, 10.0)

    def test_even_full_throttle_is_not_enough(self):
        # 1 % of 2 GiB/s is still above the link.
        f = model(2048 * MIB)
        self.assertIsNone(f.means)
        self.assertIn('auto-converge would not help', f.reason)

    def test_converging_but_over_the_budget(self):
        # The rest of the pause (a large final delta) alone exceeds it:
        # throttling the memory cannot help.
        f = model(1 * MIB, other=5.0)
        self.assertIsNone(f.means)
        self.assertIn('> budget 2 s', f.reason)
        self.assertIn('nor with auto-converge', f.reason)

    def test_no_budget_any_convergent_copy(self):
        self.assertEqual('pre-copy', model(1 * MIB, other=5.0,
                                           budget=None).means)

    def test_throttled_copy_rises_as_qemu_raises_it(self):
        copy = planner.auto_converge_copy(80 * MIB, 20 * MIB, LINK, 0.5,
                                          working_set=20 * MIB)
        slow = planner.auto_converge_copy(80 * MIB, 9 * MIB, LINK, 0.5,
                                          working_set=9 * MIB)
        self.assertGreater(copy.throttle, slow.throttle)
        self.assertGreater(copy.time, slow.time)

    def test_no_memory_nothing_to_copy(self):
        f = model(20 * MIB, memory=0)
        self.assertEqual(('pre-copy', 0.0), (f.means, f.copy_seconds))


class TestPlannerUsesIt(testtools.TestCase):
    """The fleet planner's cutover is the same model."""

    def link(self, **kw):
        return planner.Link(wan_bandwidth=10e6, transit_time=3600, **kw)

    def test_dirty_rate_of_a_vm_group(self):
        vm = planner.VMProfile(size=10 * 10 ** 9, memory=4 * 10 ** 9,
                               write_rate=10e3, dirty_rate=1e6)
        result = planner.plan([vm], self.link())
        self.assertEqual([], result.warnings)
        busy = planner.VMProfile(size=10 * 10 ** 9, memory=4 * 10 ** 9,
                                 write_rate=10e3, dirty_rate=50e6)
        result = planner.plan([busy], self.link())
        warning, = result.warnings
        self.assertIn('VM group 0 will not converge by pre-copy alone',
                      warning)
        self.assertIn('auto-converge', warning)
        self.assertIn('warnings', result.as_dict())

    def test_refused_vm_group_cannot_converge(self):
        busy = planner.VMProfile(size=10 * 10 ** 9, memory=4 * 10 ** 9,
                                 write_rate=10e3, dirty_rate=50e6)
        self.assertRaises(planner.PlanCannotConverge, planner.fedex, [busy],
                          self.link(convergence='refuse'))

    def test_without_dirty_rate_the_thesis_figures_stay(self):
        vm = planner.VMProfile(size=10 * 10 ** 9, memory=4 * 10 ** 9,
                               write_rate=1e6)
        old = planner.live_copy(vm.memory + vm.write_rate * 0.5, 1e6, 10e6,
                                0.5)
        got = planner.fedex([vm], self.link())
        self.assertAlmostEqual(old.time, got.phases['cutover'])


class TestRequestForecastUsesIt(testtools.TestCase):

    def route(self, **kw):
        values = dict(link_rate=LINK, round_trip=0.02, catch_up_rate=LINK,
                      export_rate=200e6, import_rate=200e6, transit=3600.0,
                      devices=2, shipments=1, threshold=8 << 20,
                      max_rounds=10, round_overhead=1.0,
                      memory_downtime=0.5, pause_fixed=0.34,
                      plain_pause_fixed=0.22, cutover_setup=30.0)
        values.update(kw)
        return forecast.Route(**values)

    def test_busy_server_auto_converges_in_the_preview(self):
        busy = forecast.Server('busy', 1 << 30, 256 << 20, 20 * MIB, 1e3)
        result = forecast.forecast([busy], self.route(
            convergence='auto-converge', downtime_budget=2.0))
        row, = result['servers']
        self.assertEqual('auto-converge', row['means'])
        self.assertTrue(row['converges'])
        self.assertLessEqual(row['pause_seconds'], 2.0)
        self.assertIn('auto-converge', result['warnings'][0])

    def test_busy_server_refused_in_the_preview(self):
        busy = forecast.Server('busy', 1 << 30, 256 << 20, 20 * MIB, 1e3)
        result = forecast.forecast([busy], self.route(
            convergence='refuse', downtime_budget=2.0))
        row, = result['servers']
        self.assertIsNone(row['means'])
        self.assertIsNone(row['pause_seconds'])
        self.assertIn('refused before the pause', result['warnings'][0])
