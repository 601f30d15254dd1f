"""Every resource of fedex-api, its policy, its errors (in process)."""

from fedex_manager.api import app as app_mod
from fedex_manager.db import api as db
from fedex_manager import states
from tests.unit.fedex_manager.api import base

ADMIN = 'admin,member,reader'
MEMBER = 'member,reader'
READER = 'reader'
SERVICE = 'service'


class TestRoot(base.APITestCase):

    def test_versions_need_no_token(self):
        resp = self.call('GET', '/', project=None, status=200)
        v, = resp.json['versions']
        self.assertEqual('v1.0', v['id'])
        self.assertTrue(v['links'][0]['href'].endswith('/v1'))
        self.assertEqual('CURRENT', self.call(
            'GET', '/v1', project=None, status=200).json['version']['status'])

    def test_401_without_identity(self):
        resp = self.call('GET', '/v1/migrations', project=None, status=401)
        self.assertIn('Keystone token', self.errors(resp)[0])
        self.assertIn('Keystone', resp.headers['WWW-Authenticate'])

    def test_404_and_405(self):
        self.assertIn('no resource', self.errors(
            self.call('GET', '/v1/nothing', status=404))[0])
        resp = self.call('PUT', '/v1/migrations', body={}, status=405)
        self.assertEqual('GET, POST', resp.headers['Allow'])


class Fixture(base.APITestCase):
    """Two sites, a terminal each (up), blank devices at site-a."""

    def setUp(self):
        super().setUp()
        for site in ('site-a', 'site-b'):
            self.call('POST', '/v1/sites', {'name': site,
                                            'availability_zone': 'az-' +
                                            site[-1]}, status=201)

    def terminals(self, up=True):
        for site in ('site-a', 'site-b'):
            self.call('POST', '/v1/terminals', {
                'name': 'term-' + site[-1], 'site': site, 'slots': 2},
                roles=SERVICE, status=201)
            if up:
                self.call('PUT', '/v1/terminals/term-%s/health' % site[-1],
                          {'state': 'UP', 'info': {'slots': 2}},
                          roles=SERVICE, status=200)

    def devices(self, n=2, capacity=1 << 30):
        for i in range(n):
            self.call('POST', '/v1/devices', {
                'serial': 'SN-%d' % i, 'capacity_bytes': capacity,
                'terminal': 'term-a', 'slot': i}, status=201)

    def body(self, servers=('vm1',), **kw):
        return dict({'servers': list(servers), 'source_site': 'site-a',
                     'dest_site': 'site-b'}, **kw)

    def create(self, project='p1', **kw):
        return self.call('POST', '/v1/migrations', self.body(**kw),
                         roles=MEMBER, project=project,
                         status=201).json['migration']


class TestPreflight(Fixture):

    def test_every_reason_at_once(self):
        resp = self.call('POST', '/v1/migrations', self.body(),
                         roles=MEMBER, status=409)
        errors = self.errors(resp)
        self.assertEqual(3, len(errors), errors)
        self.assertIn('source site site-a has no terminal', errors[0])
        self.assertIn('destination site site-b has no terminal', errors[1])
        self.assertIn('no blank device', errors[2])
        self.assertEqual([], db.list_(self.ctx, 'migration'))

    def test_terminals_down_and_unknown_site(self):
        self.terminals(up=False)
        resp = self.call('POST', '/v1/migrations', self.body(
            dest_site='nowhere'), roles=MEMBER, status=409)
        errors = self.errors(resp)
        self.assertIn('dest_site: no site nowhere (known: site-a, site-b)',
                      errors)
        self.assertTrue(any('no terminal is up (term-a UNKNOWN)' in e
                            for e in errors), errors)

    def test_parity_needs_more_devices(self):
        self.terminals()
        self.devices(n=1)
        resp = self.call('POST', '/v1/migrations', self.body(),
                         roles=MEMBER, status=409)
        self.assertIn('parity 1 needs more than 1', self.errors(resp)[0])


class TestMigrations(Fixture):

    def setUp(self):
        super().setUp()
        self.terminals()
        self.devices()

    def test_create_show_list(self):
        m = self.create(name='wave-1', servers=['vm1', {
            'server_id': 'vm2', 'volumes': ['vms/vm2_disk',
                                            'volumes/volume-v9']}])
        self.assertEqual(states.REQUESTED, m['state'])
        self.assertEqual('p1', m['project_id'])
        self.assertEqual(['vms/vm1_disk', 'vms/vm2_disk',
                          'volumes/volume-v9'],
                         [v['source_image'] for v in m['volumes']])
        self.assertIn('progress', m)
        self.assertTrue(m['events'])
        got = self.call('GET', '/v1/migrations/%s' % m['id'], roles=READER,
                        status=200).json['migration']
        self.assertEqual(m['id'], got['id'])
        items = self.call('GET', '/v1/migrations?server=vm2', roles=READER,
                          status=200).json['migrations']
        self.assertEqual([m['id']], [i['id'] for i in items])
        self.assertEqual([], self.call(
            'GET', '/v1/migrations?server=vm7', roles=READER,
            status=200).json['migrations'])
        self.assertEqual([], self.call(
            'GET', '/v1/migrations?state=FAILED', roles=READER,
            status=200).json['migrations'])

    def test_project_isolation(self):
        mine = self.create(project='p1')
        theirs = self.create(project='p2', servers=['vm9'])
        listed = self.call('GET', '/v1/migrations', roles=MEMBER,
                           status=200).json['migrations']
        self.assertEqual([mine['id']], [m['id'] for m in listed])
        # Another project's migration is not found, as an unknown id:
        # the same answer, which tells nothing of its existence (Nova and
        # Cinder do the same).
        unknown = self.errors(self.call(
            'GET', '/v1/migrations/%s' % ('0' * 32), roles=MEMBER,
            status=404))[0]
        for method, path, body in (
                ('GET', '', None), ('PATCH', '', {'rate_cap': 5}),
                ('DELETE', '', None), ('POST', '/action', {'abort': {}})):
            resp = self.call(method, '/v1/migrations/%s%s' % (
                theirs['id'], path), body, roles=MEMBER, status=404)
            self.assertEqual(unknown.replace('0' * 32, theirs['id']),
                             self.errors(resp)[0])
        self.assertEqual(states.REQUESTED, self.call(
            'GET', '/v1/migrations/%s' % theirs['id'], roles=ADMIN,
            status=200).json['migration']['state'])
        # all_projects: admin and service only.
        self.call('GET', '/v1/migrations?all_projects=true', roles=MEMBER,
                  status=403)
        every = self.call('GET', '/v1/migrations?all_projects=1',
                          roles=SERVICE, status=200).json['migrations']
        self.assertEqual({mine['id'], theirs['id']},
                         {m['id'] for m in every})
        self.assertEqual([theirs['id']], [m['id'] for m in self.call(
            'GET', '/v1/migrations?project=p2', roles=ADMIN,
            status=200).json['migrations']])

    def test_reader_looks_only(self):
        m = self.create()
        for method, path, body in (
                ('POST', '/v1/migrations', self.body()),
                ('PATCH', '/v1/migrations/%s' % m['id'], {'rate_cap': 5}),
                ('POST', '/v1/migrations/%s/action' % m['id'],
                 {'cutover': {}}),
                ('DELETE', '/v1/migrations/%s' % m['id'], None)):
            resp = self.call(method, path, body, roles=READER, status=403)
            self.assertIn('policy does not allow fedex:migration:',
                          self.errors(resp)[0])

    def test_update_abort_conflicts_delete(self):
        m = self.create()
        path = '/v1/migrations/%s' % m['id']
        got = self.call('PATCH', path, {
            'rate_cap': 10485760, 'downtime_budget': 3,
            'cutover_window': {'start': '01:00', 'end': '05:00'}},
            roles=MEMBER, status=200).json['migration']
        self.assertEqual(10485760, got['options']['rate_cap'])
        self.assertEqual({'start': '01:00', 'end': '05:00'},
                         got['options']['cutover_window'])
        resp = self.call('POST', path + '/action', {'retry': {}},
                         roles=MEMBER, status=409)
        self.assertIn('REQUESTED', self.errors(resp)[0])
        resp = self.call('DELETE', path, roles=MEMBER, status=409)
        self.assertIn('REQUESTED', self.errors(resp)[0])
        resp = self.call('POST', path + '/action', {'abort': {
            'reason': 'changed my mind'}}, roles=MEMBER, status=202)
        self.assertEqual(states.ABORTING,
                         resp.json['migration']['state'])
        self.assertTrue(resp.location.endswith(path))
        resp = self.call('POST', path + '/action', {'abort': {}},
                         roles=MEMBER, status=409)
        self.assertIn('ABORTING', self.errors(resp)[0])
        # The conductor finishes the abort; then it may be deleted.
        db.transition(self.ctx, 'migration', m['id'], target=states.ABORTED)
        self.call('DELETE', path, roles=MEMBER, status=204)
        self.call('GET', path, status=404)

    def test_cutover_approval(self):
        m = self.create()
        path = '/v1/migrations/%s' % m['id']
        for ev in ('snapshot', 'export', 'seal', 'ship', 'deliver',
                   'import', 'catch_up', 'converge'):
            db.transition(self.ctx, 'migration', m['id'], ev)
        got = self.call('POST', path + '/action', {'cutover': {}},
                        roles=MEMBER, status=202).json['migration']
        self.assertTrue(got['cutover_approved'])

    def test_bad_bodies_name_the_field(self):
        cases = [
            ({'source_site': 'site-a', 'dest_site': 'site-b'}, 'servers'),
            (self.body(servers=[]), 'servers'),
            (self.body(colour='red'), 'colour'),
            (self.body(options={'rate_cap': -1}), 'options/rate_cap'),
            (self.body(options={'cutover': 'now'}), 'options/cutover'),
            # One limit at both doors (fedex_manager.options.SCHEMA).
            (self.body(options={'max_rounds': 0}), 'options/max_rounds'),
            (self.body(servers=[{'server_id': 'x', 'volumes': ['nopool']}]),
             'servers/0'),
        ]
        for body, field in cases:
            resp = self.call('POST', '/v1/migrations', body, roles=MEMBER,
                             status=400)
            self.assertIn('invalid body field %s' % field,
                          self.errors(resp)[0], body)
        resp = self.call('POST', '/v1/migrations', raw=b'{nope',
                         roles=MEMBER, status=400)
        self.assertIn('not valid JSON', self.errors(resp)[0])
        self.call('POST', '/v1/migrations', raw=b'x=1', roles=MEMBER,
                  content_type='application/x-www-form-urlencoded',
                  status=415)
        m = self.create()
        for body, field in (({}, '(body)'),
                            ({'rate_cap': 'fast'}, 'rate_cap'),
                            ({'cutover_window': {'start': '25:00',
                                                 'end': '01:00'}},
                             'cutover_window')):
            resp = self.call('PATCH', '/v1/migrations/%s' % m['id'], body,
                             roles=MEMBER, status=400)
            self.assertIn(field, self.errors(resp)[0])
        resp = self.call('POST', '/v1/migrations/%s/action' % m['id'],
                         {'abort': {}, 'retry': {}}, roles=MEMBER,
                         status=400)
        resp = self.call('POST', '/v1/migrations/%s/action' % m['id'],
                         {'explode': {}}, roles=MEMBER, status=400)
        self.assertIn('explode', self.errors(resp)[0])

    def test_bad_queries(self):
        for query, word in (('limit=0', 'limit'), ('limit=x', 'limit'),
                            ('sort_key=colour', 'sort_key'),
                            ('sort_dir=up', 'sort_dir'),
                            ('colour=red', 'colour'),
                            ('state=FLYING', 'state'),
                            ('marker=nope', 'marker')):
            resp = self.call('GET', '/v1/migrations?' + query, status=400)
            self.assertIn(word, self.errors(resp)[0], query)

    def test_pagination(self):
        ids = [self.create(servers=['vm%d' % i])['id'] for i in range(5)]
        seen, url = [], '/v1/migrations?limit=2&sort_key=created_at' \
                        '&sort_dir=asc'
        while url:
            page = self.call('GET', url, status=200).json
            seen += [m['id'] for m in page['migrations']]
            links = page.get('links')
            url = links[0]['href'].split('localhost', 1)[1] if links \
                else None
        self.assertEqual(ids, seen)
        desc = self.call('GET', '/v1/migrations?sort_dir=desc&'
                         'sort_key=created_at', status=200).json
        self.assertEqual(list(reversed(ids)),
                         [m['id'] for m in desc['migrations']])

    def test_pagination_by_name_with_unnamed_ones(self):
        named = {self.create(name=n, servers=['vm-' + n])['id']: n
                 for n in ('b', 'a')}
        unnamed = {self.create(servers=['vm%d' % i])['id'] for i in (1, 2)}
        seen, url = [], '/v1/migrations?limit=1&sort_key=name&sort_dir=asc'
        while url:
            page = self.call('GET', url, status=200).json
            seen += page['migrations']
            links = page.get('links')
            url = links[0]['href'].split('localhost', 1)[1] if links \
                else None
        self.assertEqual(4, len(seen))
        self.assertEqual(unnamed, {m['id'] for m in seen[:2]})
        self.assertEqual(['a', 'b'], [named[m['id']] for m in seen[2:]])
        # A list counts images; a show lists them.
        self.assertEqual(1, seen[0]['image_count'])
        self.assertNotIn('volumes', seen[0])
        self.assertEqual(['server_id', 'name', 'state'],
                         list(seen[0]['servers'][0]))

    def test_show_pages_its_events(self):
        m = self.create()
        for i in range(5):
            db.add_event(None, 'migration', m['id'], 'progress',
                         'round %d' % i, migration_id=m['id'])
        path = '/v1/migrations/%s' % m['id']
        got = self.call('GET', path + '?events_limit=2',
                        status=200).json['migration']
        self.assertEqual(['round 4', 'round 3'],
                         [e['message'] for e in got['events']])
        older = self.call('GET', got['events_links'][0]['href'].split(
            'localhost', 1)[1], status=200).json['events']
        self.assertEqual(['round 2', 'round 1'],
                         [e['message'] for e in older])
        got = self.call('GET', path + '?events_limit=0',
                        status=200).json['migration']
        self.assertEqual([], got['events'])
        self.assertNotIn('events_links', got)
        resp = self.call('GET', path + '?events_limit=-1', status=400)
        self.assertIn('events_limit', self.errors(resp)[0])


class TestLogistics(Fixture):

    def setUp(self):
        super().setUp()
        self.terminals()
        self.devices()

    def test_terminals_and_sites_are_paged_and_sorted(self):
        for kind, first, second in (('terminals', 'term-a', 'term-b'),
                                    ('sites', 'site-a', 'site-b')):
            page = self.call('GET', '/v1/%s?limit=1' % kind, roles=ADMIN,
                             status=200).json
            self.assertEqual([first], [x['name'] for x in page[kind]])
            nxt = page['links'][0]['href'].split('localhost', 1)[1]
            page = self.call('GET', nxt, roles=ADMIN, status=200).json
            self.assertEqual([second], [x['name'] for x in page[kind]])
            desc = self.call('GET', '/v1/%s?sort_dir=desc' % kind,
                             roles=ADMIN, status=200).json[kind]
            self.assertEqual([second, first], [x['name'] for x in desc])
            resp = self.call('GET', '/v1/%s?sort_key=colour' % kind,
                             roles=ADMIN, status=400)
            self.assertIn('sort_key', self.errors(resp)[0])

    def shipment(self):
        s = db.create(self.ctx, 'shipment', {
            'name': 'ship-1', 'state': states.S_SEALED, 'carrier': 'manual'})
        return s

    def test_terminals_and_sites(self):
        ts = self.call('GET', '/v1/terminals', status=200).json['terminals']
        self.assertEqual(['UP', 'UP'], [t['health'] for t in ts])
        self.call('GET', '/v1/terminals', roles=MEMBER, status=403)
        self.call('POST', '/v1/terminals', {'name': 't', 'site': 'site-a'},
                  roles=MEMBER, status=403)
        resp = self.call('PUT', '/v1/terminals/term-a/health',
                         {'state': 'SLEEPY'}, roles=SERVICE, status=400)
        self.assertIn('state', self.errors(resp)[0])
        # Sites: any reader sees names and zones, never Ceph credentials.
        self.call('POST', '/v1/sites', {'name': 'site-c', 'ceph_conf':
                                        '/etc/ceph/c.conf'}, status=201)
        sites = self.call('GET', '/v1/sites', roles=READER,
                          status=200).json['sites']
        self.assertEqual(['site-a', 'site-b', 'site-c'],
                         [s['name'] for s in sites])
        self.assertNotIn('ceph_conf', sites[2])
        self.assertEqual('/etc/ceph/c.conf', self.call(
            'GET', '/v1/sites/site-c', status=200).json['site']['ceph_conf'])
        self.call('POST', '/v1/sites', {'name': 'x'}, roles=SERVICE,
                  status=403)
        resp = self.call('POST', '/v1/sites', {'name': 'site-a'},
                         status=409)
        self.assertIn('exists already', self.errors(resp)[0])

    def test_devices_and_custody(self):
        ds = self.call('GET', '/v1/devices?terminal=term-a',
                       roles=SERVICE, status=200).json['devices']
        self.assertEqual(['SN-0', 'SN-1'], sorted(d['serial'] for d in ds))
        self.call('GET', '/v1/devices', roles=MEMBER, status=403)
        self.call('POST', '/v1/devices', {'serial': 'SN-9', 'terminal':
                                          'term-a', 'capacity_bytes': 1},
                  roles=SERVICE, status=403)
        resp = self.call('POST', '/v1/devices', {'serial': 'SN-9',
                                                 'terminal': 'term-a'},
                         status=400)
        self.assertIn('capacity_bytes', self.errors(resp)[0])
        resp = self.call('POST', '/v1/devices', {
            'serial': 'SN 9', 'terminal': 'term-a', 'capacity_bytes': 1},
            status=400)
        self.assertIn('invalid body field serial', self.errors(resp)[0])
        d = self.call('POST', '/v1/devices/SN-0/custody', {
            'holder': 'alice (dock 3)', 'location': 'site-a loading bay'},
            roles=SERVICE, status=201).json['device']
        self.assertIn('custody: alice (dock 3) at site-a loading bay',
                      [e['message'] for e in d['events']])
        self.call('GET', '/v1/devices/SN-404', status=404)

    def test_carrier_events(self):
        s = self.shipment()
        path = '/v1/shipments/%s/events' % s['id']
        resp = self.call('POST', path, {'event': 'handed_to_carrier'},
                         roles=SERVICE, status=400)
        self.assertIn('tracking_number', self.errors(resp)[0])
        got = self.call('POST', path, {
            'event': 'handed_to_carrier', 'tracking_number': '7946 1234',
            'location': 'site-a dock'}, roles=SERVICE,
            status=200).json['shipment']
        self.assertEqual(states.S_HANDED_TO_CARRIER, got['state'])
        self.assertEqual('7946 1234', got['tracking_number'])
        self.call('POST', path, {'event': 'in_transit'}, roles=SERVICE,
                  status=409)    # hand_over -> depart first
        self.call('POST', path, {'event': 'departed'}, roles=SERVICE,
                  status=200)
        self.call('POST', path, {'event': 'in_transit'}, roles=SERVICE,
                  status=200)
        self.call('POST', path, {'event': 'teleported'}, roles=SERVICE,
                  status=400)
        self.call('POST', path, {'event': 'lost'}, roles=MEMBER, status=403)
        shown = self.call('GET', '/v1/shipments/%s' % s['id'],
                          status=200).json['shipment']
        self.assertEqual(states.S_IN_TRANSIT, shown['state'])
        listed = self.call('GET', '/v1/shipments?tracking_number=7946 1234',
                           roles=SERVICE, status=200).json['shipments']
        self.assertEqual([s['id']], [x['id'] for x in listed])
        evs = self.call('GET', '/v1/events?shipment=%s&type=custody'
                        % s['id'], status=200).json['events']
        self.assertTrue(any('refused' in e['message'] for e in evs))


class TestEventsAndPlans(Fixture):

    def test_events(self):
        self.terminals()
        self.devices()
        m = self.create()
        evs = self.call('GET', '/v1/events?migration=%s' % m['id'],
                        roles=READER, status=200).json['events']
        self.assertEqual(states.REQUESTED, evs[0]['to_state'])
        # Another project's: not found, as an unknown migration.
        resp = self.call('GET', '/v1/events?migration=%s' % m['id'],
                         roles=READER, project='p2', status=404)
        self.assertEqual('migration %s does not exist' % m['id'],
                         self.errors(resp)[0])
        self.call('GET', '/v1/events', roles=READER, status=403)
        self.call('GET', '/v1/events?since=yesterday', status=400)
        self.call('POST', '/v1/events', {'migration': m['id'],
                                         'message': 'cutover: paused',
                                         'kind': 'cutover'},
                  roles=SERVICE, status=201)
        self.call('POST', '/v1/events', {'migration': m['id'],
                                         'message': 'x'},
                  roles=MEMBER, status=403)
        page = self.call('GET', '/v1/events?migration=%s&limit=1'
                         % m['id'], roles=READER, status=200).json
        self.assertEqual(1, len(page['events']))
        self.assertIn('marker=', page['links'][0]['href'])

    def test_plan_thesis_t3(self):
        plan = self.call('POST', '/v1/plans', {
            'vms': [{'size': '50GB', 'count': 1000}],
            'wan_bandwidth': '44.76Mbit/s', 'transit_time': '12h'},
            roles=MEMBER, status=201).json['plan']
        self.assertEqual(103, int(plan['wan']['total_time'] / 86400))
        self.assertEqual('fedex', plan['recommended'])
        self.assertIn('ship', plan['fedex']['phases'])

    def test_plans_are_stored_per_project(self):
        body = {'name': 'dc-move', 'vms': [{'size': '50GB', 'count': 1000}],
                'wan_bandwidth': '44.76Mbit/s', 'transit_time': '12h'}
        resp = self.call('POST', '/v1/plans', body, roles=MEMBER,
                         status=201)
        made = resp.json['plan']
        self.assertTrue(resp.location.endswith('/v1/plans/' + made['id']))
        theirs = self.call('POST', '/v1/plans', dict(body, name='other'),
                           roles=MEMBER, project='p2',
                           status=201).json['plan']
        shown = self.call('GET', '/v1/plans/' + made['id'], roles=READER,
                          status=200).json['plan']
        self.assertEqual(made['wan'], shown['wan'])
        self.assertEqual(made['fedex'], shown['fedex'])
        self.assertEqual(body, shown['request'])
        self.assertEqual(1000, shown['inputs']['vms'][0]['count'])
        self.assertEqual('p1', shown['project_id'])
        listed = self.call('GET', '/v1/plans', roles=READER,
                           status=200).json['plans']
        self.assertEqual([made['id']], [p['id'] for p in listed])
        self.assertEqual(('dc-move', 1000, 'fedex', 103),
                         (listed[0]['name'], listed[0]['vms'],
                          listed[0]['recommended'],
                          int(listed[0]['wan_total_time'] / 86400)))
        # Another project's plan: not shown, not listed, unless admin.
        resp = self.call('GET', '/v1/plans/' + theirs['id'], roles=READER,
                         status=403)
        self.assertIn('fedex:plan:show', self.errors(resp)[0])
        self.call('GET', '/v1/plans?all_projects=1', roles=READER,
                  status=403)
        every = self.call('GET', '/v1/plans?all_projects=1', roles=ADMIN,
                          status=200).json['plans']
        self.assertEqual({made['id'], theirs['id']},
                         {p['id'] for p in every})
        self.call('GET', '/v1/plans/nope', roles=READER, status=404)
        # A refused plan is not stored.
        self.call('POST', '/v1/plans', {
            'vms': [{'size': '10GB', 'write_rate': '200Mbit/s'}],
            'wan_bandwidth': '100Mbit/s'}, roles=MEMBER, status=409)
        self.assertEqual(1, len(self.call('GET', '/v1/plans', roles=READER,
                                          status=200).json['plans']))

    def test_plans_are_deleted_by_their_project(self):
        body = {'vms': [{'size': '50GB', 'count': 10}],
                'wan_bandwidth': '44.76Mbit/s'}
        mine = self.call('POST', '/v1/plans', body, roles=MEMBER,
                         status=201).json['plan']
        theirs = self.call('POST', '/v1/plans', body, roles=MEMBER,
                           project='p2', status=201).json['plan']
        # A reader looks only; another project's member may not.
        resp = self.call('DELETE', '/v1/plans/' + mine['id'], roles=READER,
                         status=403)
        self.assertIn('fedex:plan:delete', self.errors(resp)[0])
        self.call('DELETE', '/v1/plans/' + theirs['id'], roles=MEMBER,
                  status=403)
        self.call('DELETE', '/v1/plans/' + mine['id'], roles=MEMBER,
                  status=204)
        self.call('GET', '/v1/plans/' + mine['id'], roles=READER,
                  status=404)
        self.call('DELETE', '/v1/plans/' + mine['id'], roles=MEMBER,
                  status=404)
        self.call('DELETE', '/v1/plans/' + theirs['id'], roles=ADMIN,
                  status=204)
        self.assertEqual([], self.call('GET', '/v1/plans?all_projects=1',
                                       roles=ADMIN,
                                       status=200).json['plans'])

    def test_a_name_two_plans_share_is_refused_not_guessed(self):
        body = {'name': 'twin', 'vms': [{'size': '50GB', 'count': 10}],
                'wan_bandwidth': '44.76Mbit/s'}
        first = self.call('POST', '/v1/plans', body, roles=MEMBER,
                          status=201).json['plan']
        self.assertEqual(first['id'], self.call(
            'GET', '/v1/plans/twin', roles=READER,
            status=200).json['plan']['id'])
        self.call('POST', '/v1/plans', body, roles=MEMBER, status=201)
        resp = self.call('GET', '/v1/plans/twin', roles=READER, status=409)
        self.assertIn('several have this name; use the id',
                      self.errors(resp)[0])
        self.call('DELETE', '/v1/plans/twin', roles=MEMBER, status=409)
        self.call('GET', '/v1/plans/' + first['id'], roles=READER,
                  status=200)

    def test_plan_refusals(self):
        resp = self.call('POST', '/v1/plans', {
            'vms': [{'size': '10GB', 'write_rate': '200Mbit/s'}],
            'wan_bandwidth': '100Mbit/s'}, roles=MEMBER, status=409)
        self.assertIn('writes of 200.00 Mbit/s while the WAN carries '
                      '100.00 Mbit/s', self.errors(resp)[0])
        resp = self.call('POST', '/v1/plans', {
            'vms': [{'size': '10 parsecs'}], 'wan_bandwidth': '1Gbit/s'},
            roles=MEMBER, status=400)
        self.assertIn('vms/0/size', self.errors(resp)[0])
        resp = self.call('POST', '/v1/plans', {'vms': []}, roles=MEMBER,
                         status=400)
        self.assertEqual(2, len(self.errors(resp)))    # vms, wan_bandwidth
        self.call('POST', '/v1/plans', {'vms': [{'size': 1}],
                                        'wan_bandwidth': 1},
                  roles=READER, status=403)


class TestEveryRouteIsGuarded(Fixture):
    """A token without roles gets 403 on every route but / and /v1.

    Like placement's test_verify_policy: no handler forgets its rule.
    """

    def test_no_roles_no_access(self):
        self.terminals()
        self.devices()
        m = self.create()
        plan = self.call('POST', '/v1/plans', {
            'vms': [{'size': 1}], 'wan_bandwidth': 1}, roles=MEMBER,
            status=201).json['plan']
        wave = self.call('POST', '/v1/waves', {
            'servers': ['vm7'], 'source_site': 'site-a',
            'dest_site': 'site-b'}, roles=MEMBER, status=201).json['wave']
        ids = {'migration_id': m['id'], 'shipment_id': 'x',
               'device_id': 'SN-0', 'terminal_id': 'term-a',
               'site_id': 'site-a', 'server_id': 'vm1',
               'plan_id': plan['id'], 'wave_id': wave['id']}
        bodies = {'/v1/migrations/{migration_id}/action': {'abort': {}},
                  '/v1/waves/{wave_id}/action': {'abort': {}}}
        checked = 0
        for path, methods in app_mod.ROUTES.items():
            if path in app_mod.PUBLIC:
                continue
            for method in methods:
                url = path.format(**ids)
                resp = self.call(method, url, bodies.get(path, {}),
                                 roles='')
                self.assertEqual(403, resp.status_int,
                                 '%s %s: %s' % (method, url, resp.text))
                checked += 1
        self.assertEqual(34, checked)    # every route but / and /v1
