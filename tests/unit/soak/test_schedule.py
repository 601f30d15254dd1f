"""The soak's plan from a seed (tests/soak/schedule.py): no cloud."""

import testtools

from tests.soak import faults
from tests.soak import schedule


class TestPlan(testtools.TestCase):

    def test_same_seed_same_plan(self):
        a = schedule.Plan(7, 30, 64, min_cutting_over=12)
        b = schedule.Plan(7, 30, 64, min_cutting_over=12)
        self.assertEqual(a.as_dict(), b.as_dict())
        self.assertNotEqual(a.as_dict(),
                            schedule.Plan(8, 30, 64,
                                          min_cutting_over=12).as_dict())

    def test_long_run_covers_every_kind_twice(self):
        plan = schedule.Plan(7, 30, 64, min_cutting_over=12)
        kinds, phases = plan.counts()
        self.assertEqual(set(schedule.KINDS), set(kinds))
        self.assertGreaterEqual(min(kinds.values()), 2)
        self.assertEqual(64, len(plan.faults))
        self.assertGreaterEqual(phases[schedule.CUTTING_OVER], 12)
        self.assertEqual(30, len(plan.migrations))
        # Each migration takes one user act at most.
        self.assertLessEqual(sum(1 for f in plan.faults if f.is_user), 30)

    def test_short_form(self):
        plan = schedule.Plan(2511, 3, 8, min_cutting_over=2, spacing=20)
        kinds, phases = plan.counts()
        self.assertEqual(8, len(plan.faults))
        self.assertGreaterEqual(phases[schedule.CUTTING_OVER], 2)
        # Most migrations must reach their cutover: one user act at most.
        self.assertLessEqual(sum(1 for f in plan.faults if f.is_user), 1)
        self.assertEqual({True, False},
                         {m.with_volume for m in plan.migrations})
        self.assertEqual(0, plan.migrations[0].start_after)

    def test_cutting_over_faults_are_service_faults(self):
        plan = schedule.Plan(3, 30, 64, min_cutting_over=20)
        at = [f for f in plan.faults if f.phase == schedule.CUTTING_OVER]
        self.assertGreaterEqual(len(at), 20)
        for f in plan.faults:
            self.assertIn(f.phase, schedule.PHASES)
            if f.is_user and f.kind != 'user-abort':
                self.assertNotEqual(schedule.CUTTING_OVER, f.phase)

    def test_holds(self):
        for f in schedule.Plan(1, 30, 64).faults:
            if f.kind == 'cut-wan':
                self.assertEqual(30.0, f.hold)
            elif f.is_user:
                self.assertEqual(0.0, f.hold)
            else:
                self.assertGreater(f.hold, 0)

    def test_impossible_counts_refused(self):
        # 17 kinds twice need 34 faults.
        self.assertRaises(ValueError, schedule.Plan, 1, 30, 20, min_each=2)
        # Every user act twice needs 8 migrations.
        self.assertRaises(ValueError, schedule.Plan, 1, 4, 40, min_each=2)
        self.assertRaises(ValueError, schedule.Plan, 1, 0, 4)

    def test_every_kind_has_a_fault_class(self):
        self.assertEqual(set(schedule.KINDS), set(faults.CATALOGUE))
