"""The soak's report (tests/soak/report.py): no cloud."""

import testtools

from tests.soak import report as report_mod


def made():
    r = report_mod.Report(7, 'python -m tests.soak.run --seed 7')
    r.add_fault(0, 'kill-conductor', 'EXPORTING', 'EXPORTING', 'm-1', 10.0,
                6.5)
    r.add_fault(1, 'kill-conductor', 'CUTTING_OVER', 'CUTTING_OVER', 'm-1',
                50.0, 8.5)
    r.add_fault(2, 'cut-wan', 'CATCHING_UP', 'CATCHING_UP', 'm-2', 70.0,
                31.0)
    r.add_fault(3, 'user-abort', 'IN_TRANSIT', 'IN_TRANSIT', 'm-2', 90.0,
                None)
    r.add_outcome(0, 'aaaaaaaa-1111', 's-1', True, 'COMPLETED', 'COMPLETED',
                  200.0, faults=['kill-conductor*', 'cut-wan'])
    r.add_outcome(1, 'bbbbbbbb-2222', 's-2', False, 'ABORTED', 'ABORTED',
                  120.0, operator=['retry (x)'])
    r.wall_seconds = 321
    return r


class TestReport(testtools.TestCase):

    def test_faults_per_phase_and_recovery(self):
        r = made()
        self.assertEqual({'kill-conductor': {'EXPORTING': 1,
                                             'CUTTING_OVER': 1},
                          'cut-wan': {'CATCHING_UP': 1},
                          'user-abort': {'IN_TRANSIT': 1}},
                         r.faults_per_phase())
        self.assertEqual({'kill-conductor': (2, 7.5, 8.5),
                          'cut-wan': (1, 31.0, 31.0)}, r.recovery())
        self.assertEqual(1, r.at_cutover())
        self.assertEqual({'COMPLETED': 1, 'ABORTED': 1}, r.outcome_counts())

    def test_rst(self):
        text = made().to_rst()
        self.assertIn('Seed 7; 2 migrations, 4 faults (1 during '
                      'CUTTING_OVER); wall time 321 s; invariant '
                      'violations: **0**.', text)
        self.assertIn('Invariant violations: none.', text)
        lines = text.splitlines()
        # The per-phase table: phases in a migration's order, totals.
        header = [ln for ln in lines if ln.startswith('fault ') and
                  'EXPORTING' in ln][0]
        self.assertLess(header.index('EXPORTING'), header.index(
            'IN_TRANSIT'))
        self.assertLess(header.index('CATCHING_UP'), header.index(
            'CUTTING_OVER'))
        total = [ln for ln in lines if ln.startswith('total')][0]
        self.assertEqual(['total', '1', '1', '1', '1', '4'], total.split())
        self.assertIn('kill-conductor  2  7.5     8.5', text)

    def test_violations_listed(self):
        r = made()
        r.violation('aaaaaaaa-1111', 'disk-exact', 'vms/x: A 1 != B 2')
        text = r.to_rst()
        self.assertIn('violations: **1**', text)
        self.assertIn('aaaaaaaa   disk-exact  vms/x: A 1 != B 2', text)

    def test_simple_table(self):
        self.assertEqual('=  ==\na  bb\n=  ==\n1  -\n=  ==',
                         report_mod.rst_table(['a', 'bb'], [[1, None]]))

    def test_abort_latencies_of_deleted_servers(self):
        r = made()
        self.assertNotIn('Servers deleted', r.to_rst())
        r.abort_latencies += [2.4, 11.0]
        self.assertIn('Servers deleted by their user: each migration '
                      'aborted 2.4, 11.0 s after Nova took the delete (the '
                      'bound: 10 s).', r.to_rst())
        self.assertEqual([2.4, 11.0], r.to_dict()['abort_latencies'])
