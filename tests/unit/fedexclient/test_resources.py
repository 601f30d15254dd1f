"""Each call of the client: its method, path, query and body."""

from tests.unit.fedexclient import base

API = base.API


class TestMigrations(base.TestCase):

    def setUp(self):
        super().setUp()
        self.m = {'id': 'm1', 'state': 'REQUESTED'}

    def test_create_leaves_out_what_is_not_given(self):
        self.requests.post(API + '/migrations', status_code=202,
                           json={'migration': self.m})
        out = self.client.migrations.create(
            'site-b', servers=[{'server_id': 's1'}], source_site='site-a',
            name=None, options={'cutover': 'approved'})
        self.assertEqual(self.m, out)
        self.assertSent('POST', API + '/migrations', {
            'dest_site': 'site-b', 'servers': [{'server_id': 's1'}],
            'source_site': 'site-a', 'options': {'cutover': 'approved'}})
        self.client.migrations.create('site-b', volumes=[{'volume_id': 'v'}])
        self.assertSent('POST', API + '/migrations', {
            'dest_site': 'site-b', 'volumes': [{'volume_id': 'v'}]})

    def test_show_update_delete(self):
        self.requests.get(API + '/migrations/m1', json={'migration': self.m})
        self.assertEqual(self.m, self.client.migrations.get('m1'))
        self.assertSent('GET', API + '/migrations/m1')
        self.client.migrations.get('m1', events_limit=5)
        self.assertSent('GET', API + '/migrations/m1?events_limit=5')
        self.requests.patch(API + '/migrations/m1',
                            json={'migration': self.m})
        self.client.migrations.update('m1', rate_cap=100, name=None)
        self.assertSent('PATCH', API + '/migrations/m1', {'rate_cap': 100})
        self.requests.delete(API + '/migrations/m1', status_code=204)
        self.assertIsNone(self.client.migrations.delete('m1'))
        self.assertSent('DELETE', API + '/migrations/m1')

    def test_actions(self):
        self.requests.post(API + '/migrations/m1/action', status_code=202,
                           json={'migration': self.m})
        url = API + '/migrations/m1/action'
        self.assertEqual(self.m, self.client.migrations.abort('m1'))
        self.assertSent('POST', url, {'abort': {}})
        self.client.migrations.abort('m1', reason='wrong site')
        self.assertSent('POST', url, {'abort': {'reason': 'wrong site'}})
        self.client.migrations.retry('m1')
        self.assertSent('POST', url, {'retry': {}})
        self.client.migrations.cutover('m1')
        self.assertSent('POST', url, {'cutover': {}})
        self.client.migrations.reship('m1', seed_over_wan=True)
        self.assertSent('POST', url, {'reship': {'seed_over_wan': True}})
        self.client.migrations.action('m1', 'retry')
        self.assertSent('POST', url, {'retry': {}})

    def test_list_one_page_with_filters(self):
        self.requests.get(API + '/migrations',
                          json={'migrations': [self.m]})
        self.assertEqual([self.m], self.client.migrations.list(
            all_projects=True, state='CATCHING_UP', server=None, limit=10))
        self.assertSent('GET', API + '/migrations?all_projects=true&'
                        'state=CATCHING_UP&limit=10')

    def test_list_all_follows_the_pages(self):
        pages = [{'migrations': [{'id': 'a'}, {'id': 'b'}],
                  'links': [{'rel': 'next', 'href': 'x'}]},
                 {'migrations': [{'id': 'c'}],
                  'links': [{'rel': 'next', 'href': 'y'}]},
                 {'migrations': []}]
        self.requests.get(API + '/migrations',
                          [{'json': p} for p in pages])
        items = self.client.migrations.list_all(state='X')
        self.assertEqual(['a', 'b', 'c'], [m['id'] for m in items])
        self.assertEqual(
            [API + '/migrations?state=X', API + '/migrations?state=X&marker=b',
             API + '/migrations?state=X&marker=c'],
            [r.url for r in self.requests.request_history])

    def test_list_all_stops_at_its_limit(self):
        self.requests.get(API + '/plans', json={
            'plans': [{'id': 'a'}, {'id': 'b'}],
            'links': [{'rel': 'next', 'href': 'x'}]})
        self.assertEqual([{'id': 'a'}],
                         self.client.plans.list_all(limit=1))
        self.assertEqual(1, self.requests.call_count)

    def test_names_are_quoted(self):
        self.requests.get(API + '/plans/dc%20move%2F2',
                          json={'plan': {'id': 'p'}})
        self.assertEqual({'id': 'p'}, self.client.plans.get('dc move/2'))


class TestCutover(base.TestCase):

    def test_plan_and_report(self):
        self.requests.get(API + '/servers/s1/cutover',
                          json={'cutover': {'id': 'm1'}})
        self.assertEqual({'id': 'm1'}, self.client.cutover.get('s1'))
        self.requests.post(API + '/migrations/m1/cutover-events',
                           status_code=202, json={'event': 'resumed'})
        self.client.cutover.report('m1', 'resumed', 'h1',
                                   {'pause_seconds': 0.4})
        self.assertSent('POST', API + '/migrations/m1/cutover-events', {
            'event': 'resumed', 'host': 'h1',
            'details': {'pause_seconds': 0.4}})
        self.client.cutover.report('m1', 'completed', 'h1')
        self.assertSent('POST', API + '/migrations/m1/cutover-events', {
            'event': 'completed', 'host': 'h1', 'details': {}})


class TestPlans(base.TestCase):

    def test_create(self):
        self.requests.post(API + '/plans', status_code=201,
                           json={'plan': {'id': 'p1'}})
        vms = [{'size': '50GB', 'count': 10}]
        self.assertEqual({'id': 'p1'}, self.client.plans.create(
            vms, '155Mbit/s', name='dc', transit_time=None))
        self.assertSent('POST', API + '/plans', {
            'vms': vms, 'wan_bandwidth': '155Mbit/s', 'name': 'dc'})


class TestLogistics(base.TestCase):

    def test_shipments(self):
        self.requests.get(API + '/shipments/s1', json={'shipment': {}})
        self.client.shipments.get('s1')
        self.requests.post(API + '/shipments/s1/events',
                           json={'shipment': {'id': 's1'}})
        self.assertEqual({'id': 's1'}, self.client.shipments.event(
            's1', 'handed_to_carrier', tracking_number='1Z', location=None,
            devices_missing=['D2']))
        self.assertSent('POST', API + '/shipments/s1/events', {
            'event': 'handed_to_carrier', 'tracking_number': '1Z',
            'devices_missing': ['D2']})

    def test_devices(self):
        self.requests.post(API + '/devices', status_code=201,
                           json={'device': {'id': 'd1'}})
        self.client.devices.create('SN-1', 10 ** 12, 'term-a', slot=None)
        self.assertSent('POST', API + '/devices', {
            'serial': 'SN-1', 'capacity_bytes': 10 ** 12,
            'terminal': 'term-a'})
        self.requests.post(API + '/devices/d1/custody', status_code=201,
                           json={'device': {'id': 'd1'}})
        self.assertEqual({'id': 'd1'}, self.client.devices.custody(
            'd1', 'dock 3', message='signed'))
        self.assertSent('POST', API + '/devices/d1/custody', {
            'holder': 'dock 3', 'message': 'signed'})
        self.requests.get(API + '/devices', json={'devices': []})
        self.client.devices.list(terminal='term-a', state=None)
        self.assertSent('GET', API + '/devices?terminal=term-a')

    def test_terminals_and_sites(self):
        self.requests.post(API + '/terminals', status_code=201,
                           json={'terminal': {'id': 't1'}})
        self.client.terminals.register('term-a', 'site-a', slots=4)
        self.assertSent('POST', API + '/terminals', {
            'name': 'term-a', 'site': 'site-a', 'slots': 4})
        self.requests.put(API + '/terminals/t1/health',
                          json={'terminal': {'id': 't1'}})
        self.client.terminals.health('t1')
        self.assertSent('PUT', API + '/terminals/t1/health', {'state': 'UP'})
        self.requests.post(API + '/sites', status_code=201,
                           json={'site': {'id': 's'}})
        self.client.sites.register('site-a', availability_zone='az-a')
        self.assertSent('POST', API + '/sites', {
            'name': 'site-a', 'availability_zone': 'az-a'})
        self.requests.get(API + '/sites/site-a', json={'site': {'id': 's'}})
        self.assertEqual({'id': 's'}, self.client.sites.get('site-a'))


class TestEvents(base.TestCase):

    def test_list_and_create(self):
        self.requests.get(API + '/events', json={'events': [{'id': 1}]})
        self.assertEqual([{'id': 1}], self.client.events.list(
            migration='m1', limit=1000))
        self.assertSent('GET', API + '/events?migration=m1&limit=1000')
        self.requests.post(API + '/events', status_code=201,
                           json={'event': {'id': 2}})
        self.assertEqual({'id': 2}, self.client.events.create(
            'm1', 'paused for a window', kind='note'))
        self.assertSent('POST', API + '/events', {
            'migration': 'm1', 'message': 'paused for a window',
            'kind': 'note'})
