"""fedex-api over HTTP: real Keystone tokens, a real uwsgi, real policy.

Every resource, every persona allowed and denied, and bad inputs; a few
calls through the real ``openstack`` client (5-7 s each here, so few).
Keystone is the sandbox's own (``fedex-sandbox up --openstack``).
"""

import json
import os
import subprocess

import testtools

from tests.openstack import api_fixtures as fx
from tests.openstack import keystone_access

ADMIN, MEMBER1, READER1, MEMBER2, SVC = (
    'fedex-admin', 'fedex-member1', 'fedex-reader1', 'fedex-member2',
    'fedex-svc')


class APITestCase(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.auth_url, admin = keystone_access.admin_session()
        cls.identity = fx.Identity(admin, cls.auth_url).ensure()
        cls.server = fx.FedexAPIServer(fx.sandbox(), cls.auth_url).start()
        cls.sessions = {u: fx.session(cls.auth_url, u) for u in fx.USERS}

    @classmethod
    def tearDownClass(cls):
        cls.server.stop()
        super().tearDownClass()

    def call(self, user, method, path, body=None, status=None, token=True,
             headers=None):
        url = self.server.url + path
        kw = {'raise_exc': False, 'headers': dict(headers or {})}
        if body is not None:
            kw['json'] = body
        if user is None:
            import requests
            resp = requests.request(method, url, json=body,
                                    headers=kw['headers'], timeout=30)
        else:
            resp = self.sessions[user].request(url, method, **kw)
        if status is not None:
            self.assertEqual(status, resp.status_code,
                             '%s %s as %s: %s' % (method, path, user,
                                                  resp.text))
        return resp

    def details(self, resp):
        return [e['detail'] for e in resp.json()['errors']]


class TestAPIWithKeystone(APITestCase):
    """One fedex-api for the class: its catalog endpoint is this one."""

    def test_01_version_and_401(self):
        body = self.call(None, 'GET', '/', status=200).json()
        self.assertEqual('v1.0', body['versions'][0]['id'])
        resp = self.call(None, 'GET', '/v1/migrations', status=401)
        self.assertIn('Keystone uri="%s"' % self.auth_url,
                      resp.headers['WWW-Authenticate'])
        self.call(None, 'GET', '/v1/sites', status=401,
                  headers={'X-Auth-Token': 'not-a-token'})

    def test_02_catalog(self):
        """The mini-cloud registers the sandbox's fedex-api (+280)."""
        sb = fx.sandbox()
        ep = self.sessions[MEMBER1].get_endpoint(
            service_type=fx.SERVICE_TYPE, interface='public')
        self.assertEqual('http://127.0.0.1:%d' % sb.port(280),
                         ep.rstrip('/'))

    def test_03_each_resource_each_persona(self):
        c = self.call
        # Sites: admin registers; the service role may not; readers look.
        for name, zone in (('site-a', 'az-a'), ('site-b', 'az-b')):
            c(ADMIN, 'POST', '/v1/sites', {'name': name,
                                           'availability_zone': zone},
              status=201)
        c(SVC, 'POST', '/v1/sites', {'name': 'x'}, status=403)
        sites = c(READER1, 'GET', '/v1/sites', status=200).json()['sites']
        self.assertEqual(['site-a', 'site-b'], [s['name'] for s in sites])
        # Terminals register and report health with the service role.
        for t, site in (('term-a', 'site-a'), ('term-b', 'site-b')):
            c(SVC, 'POST', '/v1/terminals', {'name': t, 'site': site},
              status=201)
            c(SVC, 'PUT', '/v1/terminals/%s/health' % t, {'state': 'UP'},
              status=200)
        c(MEMBER1, 'POST', '/v1/terminals', {'name': 't', 'site': 'site-a'},
          status=403)
        c(MEMBER1, 'GET', '/v1/terminals', status=403)
        self.assertEqual(['UP', 'UP'], [t['health'] for t in c(
            ADMIN, 'GET', '/v1/terminals', status=200).json()['terminals']])
        # Devices: admin registers, the service role records custody.
        for i in range(2):
            c(ADMIN, 'POST', '/v1/devices', {
                'serial': 'KS-%d' % i, 'capacity_bytes': 1 << 30,
                'terminal': 'term-a'}, status=201)
        c(SVC, 'POST', '/v1/devices', {'serial': 'KS-9', 'capacity_bytes':
                                       1, 'terminal': 'term-a'}, status=403)
        c(SVC, 'POST', '/v1/devices/KS-0/custody', {'holder': 'dock 3'},
          status=201)
        c(READER1, 'GET', '/v1/devices', status=403)
        self.assertEqual(2, len(c(SVC, 'GET', '/v1/devices?terminal=term-a',
                                  status=200).json()['devices']))
        # Migrations: a member of p1 creates; the project is the token's.
        body = {'servers': ['srv-1'], 'source_site': 'site-a',
                'dest_site': 'site-b', 'options': {'cutover': 'approved'}}
        m = c(MEMBER1, 'POST', '/v1/migrations', body,
              status=201).json()['migration']
        self.assertEqual(self.identity.project_ids['fedex-p1'],
                         m['project_id'])
        path = '/v1/migrations/%s' % m['id']
        c(READER1, 'POST', '/v1/migrations', body, status=403)
        self.assertEqual(m['id'], c(READER1, 'GET', path,
                                    status=200).json()['migration']['id'])
        c(READER1, 'POST', path + '/action', {'abort': {}}, status=403)
        c(READER1, 'PATCH', path, {'rate_cap': 1}, status=403)
        # Another project sees nothing of it: not even that it exists (404
        # as for an unknown id, as Nova and Cinder answer).
        c(MEMBER2, 'GET', path, status=404)
        c(MEMBER2, 'POST', path + '/action', {'abort': {}}, status=404)
        self.assertEqual([], c(MEMBER2, 'GET', '/v1/migrations',
                               status=200).json()['migrations'])
        c(MEMBER2, 'GET', '/v1/migrations?all_projects=true', status=403)
        c(MEMBER2, 'GET', '/v1/events?migration=%s' % m['id'], status=404)
        # The service role (a Nova compute) reads every project's.
        every = c(SVC, 'GET', '/v1/migrations?all_projects=true',
                  status=200).json()['migrations']
        self.assertIn(m['id'], [x['id'] for x in every])
        c(SVC, 'POST', '/v1/events', {'migration': m['id'], 'message':
                                      'compute: pre-check ok'}, status=201)
        c(MEMBER1, 'POST', '/v1/events', {'migration': m['id'],
                                          'message': 'x'}, status=403)
        events = c(READER1, 'GET', '/v1/events?migration=%s' % m['id'],
                   status=200).json()['events']
        self.assertIn('compute: pre-check ok',
                      [e['message'] for e in events])
        c(READER1, 'GET', '/v1/events', status=403)
        # Member: update, approve too early (409 naming the state), abort.
        got = c(MEMBER1, 'PATCH', path, {'rate_cap': 1 << 20},
                status=200).json()['migration']
        self.assertEqual(1 << 20, got['options']['rate_cap'])
        resp = c(MEMBER1, 'POST', path + '/action', {'retry': {}},
                 status=409)
        self.assertIn('REQUESTED', self.details(resp)[0])
        c(MEMBER1, 'DELETE', path, status=409)
        c(MEMBER1, 'POST', path + '/action', {'abort': {'reason': 'test'}},
          status=202)
        resp = c(MEMBER1, 'POST', path + '/action', {'abort': {}},
                 status=409)
        self.assertIn('ABORTING', self.details(resp)[0])
        # Shipments are the operator's.
        c(MEMBER1, 'GET', '/v1/shipments', status=403)
        self.assertEqual([], c(SVC, 'GET', '/v1/shipments',
                               status=200).json()['shipments'])
        c(SVC, 'GET', '/v1/shipments/none', status=404)
        # Plans: members compute them, readers may not.
        plan = c(MEMBER1, 'POST', '/v1/plans', {
            'vms': [{'size': '50GB', 'count': 1000}],
            'wan_bandwidth': '44.76Mbit/s'}, status=201).json()['plan']
        self.assertEqual(103, int(plan['wan']['total_time'] // 86400))
        c(READER1, 'POST', '/v1/plans', {'vms': [{'size': 1}],
                                         'wan_bandwidth': 1}, status=403)

    def test_04_bad_inputs(self):
        c = self.call
        resp = c(MEMBER1, 'POST', '/v1/migrations', {
            'servers': ['s'], 'source_site': 'site-a', 'dest_site': 'b',
            'options': {'rate_cap': -1}, 'colour': 'red'}, status=400)
        details = self.details(resp)
        self.assertIn('invalid body field colour', details[0])
        self.assertIn('invalid body field options/rate_cap', details[1])
        resp = c(MEMBER1, 'POST', '/v1/migrations', {
            'servers': ['s'], 'source_site': 'nowhere',
            'dest_site': 'elsewhere'}, status=409)
        details = self.details(resp)
        self.assertGreaterEqual(len(details), 2)
        self.assertIn('source_site: no site nowhere', details[0])
        self.assertIn('dest_site: no site elsewhere', details[1])
        c(MEMBER1, 'GET', '/v1/migrations?limit=-3', status=400)
        c(MEMBER1, 'GET', '/v1/migrations/nope', status=404)
        c(MEMBER1, 'DELETE', '/v1/plans', status=405)
        resp = c(MEMBER1, 'POST', '/v1/plans', {
            'vms': [{'size': '10GB', 'write_rate': '200Mbit/s'}],
            'wan_bandwidth': '100Mbit/s'}, status=409)
        self.assertIn('cannot converge', self.details(resp)[0])

    # --- a few calls through the real ``openstack`` command -----------------

    def openstack(self, user, *args, check=True):
        env = dict(os.environ, OS_AUTH_URL=self.auth_url, OS_USERNAME=user,
                   OS_PASSWORD=fx.PASSWORD,
                   OS_PROJECT_NAME=fx.USERS[user][0],
                   OS_USER_DOMAIN_ID='default',
                   OS_PROJECT_DOMAIN_ID='default',
                   OS_IDENTITY_API_VERSION='3', OS_REGION_NAME='RegionOne',
                   # This class's own fedex-api, not the catalog's.
                   OS_VM_SHIPPING_ENDPOINT_OVERRIDE=self.server.url)
        proc = subprocess.run([fx.venv_bin('openstack')] + list(args),
                              env=env, capture_output=True, text=True,
                              timeout=120)
        if check:
            self.assertEqual(0, proc.returncode, proc.stderr)
        return proc

    def test_05_openstack_client(self):
        proc = self.openstack(
            MEMBER1, 'fedex', 'plan', 'create', '--vm', 'size=50GB,count=1000',
            '--wan-bandwidth', '622Mbit/s', '--transit-time', '12h', '-f',
            'json')
        plan = json.loads(proc.stdout)
        self.assertEqual('7.4 d', plan['wan_total'])
        self.assertEqual('', proc.stderr)
        proc = self.openstack(MEMBER2, 'fedex', 'device', 'list',
                              check=False)
        self.assertEqual(1, proc.returncode)
        self.assertIn('HTTP 403', proc.stderr)
        self.assertIn('fedex:device:list', proc.stderr)
        proc = self.openstack(MEMBER1, 'server', 'migrate', '--help')
        self.assertIn('--fedex', proc.stdout)
        self.assertEqual('', proc.stderr)
