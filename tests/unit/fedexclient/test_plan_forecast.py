"""fedexclient's forecast of a migration request (POST /v1/plans)."""

from tests.unit.fedexclient import base
from tests.unit.fedexclient.base import API


class TestForecast(base.TestCase):

    def test_forecast_sends_the_migration_request(self):
        self.requests.post(API + '/plans', status_code=201,
                           json={'plan': {'id': 'p1', 'kind': 'forecast'}})
        migration = {'servers': ['vm1'], 'source_site': 'site-a',
                     'dest_site': 'site-b'}
        plan = self.client.plans.forecast(migration, dirty_rate=2 ** 20,
                                          write_rate=None)
        self.assertEqual('forecast', plan['kind'])
        self.assertSent('POST', API + '/plans',
                        {'migration': migration, 'dirty_rate': 2 ** 20})
