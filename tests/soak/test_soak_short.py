"""The soak's short form (``tox -e soak``, CI): ~10 minutes on the mini-cloud.

Three migrations at once (one with a Cinder volume), eight faults from
the catalogue with a fixed seed, at least two of them while a migration is
CUTTING_OVER (a fault whose phase is not seen within 30 s takes the phase
there is); every migration must end in an outcome the soak accepts and
pass every invariant (tests/soak/invariants.py). The long run is
``python -m tests.soak.run`` (doc/source/reliability.rst).
"""

import os

from tests.soak import runner

SEED = 2511
MIGRATIONS = 3
FAULTS = 8


class TestSoakShort(runner.SoakTestCase):

    # One wave: four migrations two at a time took 14 minutes (two waves).
    concurrency = 3
    phase_wait = 30

    def test_short_soak(self):
        report = self.soak(
            SEED, MIGRATIONS, FAULTS, duration_min=12, min_cutting_over=2,
            spacing=20, report_path=os.environ.get('FEDEX_SOAK_REPORT'),
            command='tox -e soak (seed %d, %d migrations, %d faults)' % (
                SEED, MIGRATIONS, FAULTS))
        self.assertEqual(FAULTS, len(report.faults), report.to_rst())
        self.assertGreaterEqual(report.at_cutover(), 1, report.to_rst())
        self.assertEqual([], report.violations, report.to_rst())
        self.assertEqual(MIGRATIONS, len(report.outcomes))
