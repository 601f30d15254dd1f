"""``openstack fedex plan show`` of a stored forecast of a migration request."""

import testtools

from fedex_manager.actions import forecast
from nova_fedex.osc.v1 import plan as plan_cmd


class TestForecastRows(testtools.TestCase):

    def test_no_prices_and_the_warnings(self):
        route = forecast.Route(
            link_rate=12.5e6, round_trip=0.02, catch_up_rate=12.5e6,
            export_rate=200e6, import_rate=200e6, transit=18.0, devices=3,
            shipments=1, threshold=8 << 20, max_rounds=10,
            round_overhead=2.0, memory_downtime=0.5, pause_fixed=0.34,
            plain_pause_fixed=0.22, cutover_setup=30.0)
        busy = forecast.Server('vm1', 1 << 30, 512 << 20, 25e6, 1e5)
        rows = dict(plan_cmd.plan_rows(forecast.forecast([busy], route)))
        self.assertEqual('-', rows['cost_fedex'])
        self.assertEqual('-', rows['wan_bytes_fedex'])
        self.assertEqual('-', rows['fedex_expected_pause'])
        self.assertIn('server vm1 will not converge', rows['warnings'])
