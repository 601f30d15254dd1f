"""The planner's write rate comes from real changed extents between two
snapshots of a real RBD image, and agrees with ``rbd diff``."""

import time

from fedex_manager import planner
from tests.functional import base

MiB = 1 << 20


class TestMeasuredWriteRate(base.FunctionalTestCase):

    def test_rate_between_snapshots(self):
        pool, name = self.new_image(64 * MiB)
        with pool.open_image(name) as img:
            img.write(0, b'a' * (4 * MiB))
            img.create_snapshot('s1')
            # Rewrite 1 MiB of old data and 2 MiB of new, far apart.
            img.write(MiB, b'b' * MiB)
            img.write(32 * MiB, b'c' * (2 * MiB))
            time.sleep(2.1)
            img.create_snapshot('s2')
            # Writes after the later snapshot do not count.
            img.write(48 * MiB, b'd' * MiB)
        spec = 'vms/%s@s2' % name
        by_cli = sum(e['length'] for e in self.cli_diff('site-a', spec, 's1'))
        self.assertEqual(3 * MiB, by_cli)
        rate = planner.measure_write_rate(pool, name, 's1', 's2',
                                          interval=10.0)
        self.assertEqual(by_cli / 10.0, rate)
        # From the snapshots' own timestamps: 2 or 3 whole seconds apart.
        rate = planner.measure_write_rate(pool, name, 's1', 's2')
        self.assertIn(rate, (by_cli / 2.0, by_cli / 3.0))
