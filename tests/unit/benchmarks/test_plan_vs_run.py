"""The forecast against the run (tests/benchmarks/plan_vs_run.py): no cloud."""

import testtools

from fedex_manager.actions import forecast as model
from fedex_manager import states
from tests.benchmarks import plan_vs_run

MIB = 1 << 20
LINK = 125e6                      # 1 Gbit/s


def route(**kw):
    values = dict(link_rate=LINK, round_trip=0.002, catch_up_rate=LINK,
                  export_rate=200e6, import_rate=200e6, transit=4.0,
                  devices=3, shipments=1, threshold=8 * MIB, max_rounds=10,
                  round_overhead=1.0, memory_downtime=0.5, pause_fixed=0.34,
                  plain_pause_fixed=0.22, cutover_setup=30.0)
    values.update(kw)
    return model.Route(**values)


def servers(n=2, dirty_rate=1e6):
    return [model.Server('%08d-aaaa' % i, 48 * MIB, 256 * MIB, dirty_rate,
                         200 * 1024) for i in range(n)]


class TestVerdict(testtools.TestCase):

    def test_within_twenty_percent_either_way(self):
        for measured, ok in ((100, True), (120, True), (80, True),
                             (121, False), (79, False), (300, False)):
            ratio, within, said = plan_vs_run.verdict(100, measured)
            self.assertAlmostEqual(measured / 100.0, ratio)
            self.assertEqual(ok, within, measured)
            self.assertEqual('within' if ok else 'outside', said)

    def test_tolerance_is_a_parameter(self):
        self.assertEqual((1.3, True, 'within'),
                         plan_vs_run.verdict(10, 13, tolerance=0.3))

    def test_a_zero_forecast_has_no_ratio(self):
        self.assertEqual((None, True, 'within'),
                         plan_vs_run.verdict(0, 0))
        self.assertEqual((None, False, 'outside'),
                         plan_vs_run.verdict(0, 5))
        self.assertEqual((None, False, 'outside'),
                         plan_vs_run.verdict(0.0, 0.4))

    def test_a_missing_side(self):
        self.assertEqual((None, None, 'not measured'),
                         plan_vs_run.verdict(10, None))
        self.assertEqual((None, None, 'not forecast'),
                         plan_vs_run.verdict(None, 10))
        # A measured 0 is a value, not a missing one.
        self.assertEqual((0.0, False, 'outside'),
                         plan_vs_run.verdict(10, 0))


class TestCompare(testtools.TestCase):

    def test_rows_of_both_sides_forecast_first(self):
        rows = plan_vs_run.compare(
            {'total_time': 100.0, 'wan_bytes': 10 * MIB, 'devices': 3,
             'phase.ship': 0},
            {'phase.requested': 2.0, 'total_time': 110.0, 'devices': 3,
             'phase.ship': 4.0},
            notes={'total_time': 'wall clock'})
        self.assertEqual(['total_time', 'wan_bytes', 'devices',
                          'phase.ship', 'phase.requested'],
                         [r['figure'] for r in rows])
        by = {r['figure']: r for r in rows}
        self.assertEqual(('s', 100.0, 110.0, 'within', True, 'wall clock'),
                         tuple(by['total_time'][k] for k in (
                             'unit', 'forecast', 'measured', 'verdict',
                             'within', 'note')))
        self.assertAlmostEqual(1.1, by['total_time']['ratio'])
        self.assertEqual(('B', 'not measured', None, None),
                         tuple(by['wan_bytes'][k] for k in (
                             'unit', 'verdict', 'within', 'measured')))
        self.assertEqual(('n', 1.0), (by['devices']['unit'],
                                      by['devices']['ratio']))
        self.assertEqual(('outside', None), (by['phase.ship']['verdict'],
                                             by['phase.ship']['ratio']))
        self.assertEqual(('not forecast', None),
                         (by['phase.requested']['verdict'],
                          by['phase.requested']['forecast']))

    def test_summary_names_what_was_not_compared(self):
        rows = plan_vs_run.compare({'a_bytes': 10, 'b_bytes': 10,
                                    'c_bytes': 10},
                                   {'a_bytes': 11, 'b_bytes': 20,
                                    'd_bytes': 1})
        self.assertEqual({'compared': 2, 'within': 1,
                          'outside': ['b_bytes'],
                          'not_measured': ['c_bytes'],
                          'not_forecast': ['d_bytes'],
                          'all_within': False},
                         plan_vs_run.summary(rows))
        self.assertTrue(plan_vs_run.summary(rows[:1])['all_within'])
        # Nothing compared is not a success.
        self.assertFalse(plan_vs_run.summary(rows[2:])['all_within'])

    def test_table_one_line_per_figure(self):
        rows = plan_vs_run.compare(
            {'total_time': 100.0, 'wan_bytes': 4 * MIB, 'devices': 3,
             'phase.export': 0.0},
            {'total_time': 150.0, 'devices': 3, 'phase.export': 12.0,
             'pause.abcdefgh': 0.5})
        lines = plan_vs_run.table(rows).splitlines()
        self.assertEqual(6, len(lines))
        self.assertIn('within 20 %', lines[0])
        self.assertEqual(['total_time', '100', 's', '150', 's', '1.50',
                          'NO'], lines[1].split())
        self.assertEqual(['wan_bytes', '4.00', 'MiB', '-', '-',
                          'not', 'measured'], lines[2].split())
        self.assertEqual(['devices', '3', '3', '1.00', 'yes'],
                         lines[3].split())
        self.assertEqual(['phase.export', '0.00', 's', '12', 's', '-', 'NO'],
                         lines[4].split())
        self.assertEqual(['pause.abcdefgh', '-', '0.50', 's', '-', 'not',
                          'forecast'], lines[5].split())


class TestUnits(testtools.TestCase):

    def test_every_figure_of_a_forecast_has_its_unit(self):
        got = plan_vs_run.forecast_figures(model.forecast(servers(1),
                                                          route()))
        units = {f: plan_vs_run.unit_of(f) for f in got}
        self.assertEqual({'total_time': 's', 'phase.export': 's',
                          'phase.ship': 's', 'phase.import': 's',
                          'phase.catch_up': 's', 'phase.cutover': 's',
                          'wan_bytes': 'B', 'catch_up_bytes': 'B',
                          'final_delta_bytes': 'B',
                          'disk_bytes_over_wan': 'B',
                          'memory_bytes_over_wan': 'B', 'devices': 'n',
                          'shipments': 'n', 'expected_pause': 's',
                          'pause.00000000': 's'}, units)


class TestForecastFigures(testtools.TestCase):
    """The figures read from the forecast the API answers (its model's)."""

    def test_figures_of_a_wave(self):
        members = servers(3)
        plan = model.forecast(members, route())
        got = plan_vs_run.forecast_figures(plan)
        fx = plan['fedex']
        self.assertEqual(fx['total_time'], got['total_time'])
        self.assertEqual(set(fx['phases']), {
            f.split('.', 1)[1] for f in got if f.startswith('phase.')})
        self.assertAlmostEqual(sum(fx['phases'].values()),
                               sum(v for f, v in got.items()
                                   if f.startswith('phase.')))
        rows = plan['servers']
        final = sum(r['final_delta_bytes'] for r in rows)
        memory = sum(r['memory_bytes_over_wan'] for r in rows)
        self.assertAlmostEqual(final, got['final_delta_bytes'])
        self.assertAlmostEqual(plan['catch_up']['bytes'],
                               got['catch_up_bytes'])
        self.assertAlmostEqual(plan['catch_up']['bytes'] + final,
                               got['disk_bytes_over_wan'])
        # The forecast's WAN bytes are the disks' and the memory's.
        self.assertAlmostEqual(fx['wan_bytes'],
                               got['disk_bytes_over_wan'] + memory)
        self.assertEqual((3, 1), (got['devices'], got['shipments']))
        pauses = [got[plan_vs_run.pause_key(s.server_id)] for s in members]
        self.assertEqual(3, len(set(plan_vs_run.pause_key(s.server_id)
                                    for s in members)))
        self.assertAlmostEqual(max(pauses), got['expected_pause'])
        self.assertTrue(all(p > 0.34 for p in pauses), pauses)

    def test_a_copy_that_never_ends_is_not_forecast(self):
        # Dirtying faster than the link carries: no pause, no total.
        plan = model.forecast(servers(1, dirty_rate=10 * LINK), route())
        got = plan_vs_run.forecast_figures(plan)
        self.assertIsNone(got['total_time'])
        self.assertIsNone(got['wan_bytes'])
        self.assertIsNone(got['memory_bytes_over_wan'])
        self.assertIsNone(got[plan_vs_run.pause_key('00000000-aaaa')])
        rows = plan_vs_run.compare(got, {'total_time': 60.0,
                                         'catch_up_bytes': 1.0})
        by = {r['figure']: r['verdict'] for r in rows}
        self.assertEqual('not forecast', by['total_time'])
        # What the forecast still gives is compared.
        self.assertIn(by['catch_up_bytes'], ('within', 'outside'))

    def test_assumed_notes(self):
        plan = {'assumes': {
            'link': 'The link a-b: 100 Mbit/s, 20 ms round trip assumed: '
                    'no [planner] wan_link names it.',
            'transit': 'Courier simulated: 3 s door to door (its '
                       'timetable).',
            'dirty_rate': 'Memory dirtied at 0.95 MiB/s: a default '
                          '([planner] default_dirty_rate), not measured.',
            # A figure's gathering of the notes above: not again.
            'total_time': 'The link a-b: ... assumed ...'}}
        self.assertEqual(['dirty_rate: Memory dirtied at 0.95 MiB/s: a '
                          'default ([planner] default_dirty_rate), not '
                          'measured.',
                          'link: The link a-b: 100 Mbit/s, 20 ms round '
                          'trip assumed: no [planner] wan_link names it.'],
                         plan_vs_run.assumed_notes(plan))
        self.assertEqual([], plan_vs_run.assumed_notes({}))


class TestWavePhases(testtools.TestCase):

    def test_the_wave_is_as_far_as_its_slowest_member(self):
        s = states
        common = [(0, s.REQUESTED), (2, s.SNAPSHOTTING), (3, s.EXPORTING),
                  (10, s.SEALED), (11, s.IN_TRANSIT), (15, s.DELIVERED),
                  (16, s.IMPORTING), (20, s.CATCHING_UP)]
        transitions = {
            # Caught up first: its cutover runs while b still catches up.
            'a': common + [(25, s.READY_FOR_CUTOVER),
                           (26, s.CUTTING_OVER), (60, s.COMPLETED),
                           (70, s.CLEANED)],
            'b': [(1, s.REQUESTED)] + common[1:] + [
                (40, s.READY_FOR_CUTOVER), (41, s.CUTTING_OVER),
                (80, s.COMPLETED)]}
        phases, started, ended = plan_vs_run.wave_phases(transitions)
        self.assertEqual((0, 80), (started, ended))
        self.assertEqual({'requested': 2, 'export': 9, 'ship': 4,
                          'import': 5, 'catch_up': 20, 'cutover': 40},
                         phases)
        self.assertEqual(list(plan_vs_run.PHASES), list(phases))
        self.assertEqual(ended - started, sum(phases.values()))

    def test_a_rollback_is_cutover_time_and_an_unfinished_wave_no_end(self):
        s = states
        transitions = {
            'a': [(0, s.REQUESTED), (1, s.CATCHING_UP),
                  (5, s.READY_FOR_CUTOVER), (6, s.CUTTING_OVER),
                  (9, s.ROLLED_BACK), (10, s.CUTTING_OVER),
                  (20, s.COMPLETED)],
            'b': [(0, s.REQUESTED), (1, s.CATCHING_UP), (3, s.FAILED)]}
        phases, started, ended = plan_vs_run.wave_phases(transitions)
        self.assertIsNone(ended)
        # FAILED ranks first: from 3 s on the wave is FAILED.
        self.assertEqual({'requested': 1, 'catch_up': 2, 'failed': 17},
                         phases)
        transitions['b'] = transitions['a']
        phases, _, ended = plan_vs_run.wave_phases(transitions)
        self.assertEqual(20, ended)
        self.assertEqual({'requested': 1, 'catch_up': 4, 'cutover': 15},
                         phases)

    def test_nothing_happened(self):
        self.assertEqual(({}, None, None), plan_vs_run.wave_phases({}))


class TestWriteRate(testtools.TestCase):

    def test_since_the_base_snapshot_to_the_round_s(self):
        # Snapshot at 100 s; the round ended at 160 s after 10 s: its
        # snapshot at 150 s, 50 s of writes.
        self.assertEqual(2048.0, plan_vs_run.first_round_write_rate(
            100.0, 160.0, 10.0, 50 * 2048))

    def test_unknown(self):
        self.assertIsNone(plan_vs_run.first_round_write_rate(
            None, 160.0, 10.0, 1))
        self.assertIsNone(plan_vs_run.first_round_write_rate(
            100.0, 160.0, 60.0, 1))
        self.assertIsNone(plan_vs_run.first_round_write_rate(
            100.0, 160.0, 1.0, None))
