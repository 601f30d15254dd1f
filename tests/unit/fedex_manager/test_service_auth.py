"""fedex_manager.service_auth: the one home of [nova] and [cinder] auth."""

import os

import fixtures
from oslo_config import cfg
from requests_mock.contrib import fixture as rm_fixture
import testtools

from fedex_manager import cinder
from fedex_manager import nova
from lsrp import exception


class ConfMixin(object):

    def conf(self, text=''):
        # keystoneauth registers a plugin's own options (auth_url, ...)
        # when it loads it: they come from a file, as in a deployment.
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'fedex.conf')
        with open(path, 'w') as f:
            f.write(text)
        conf = cfg.ConfigOpts()
        nova.register_opts(conf)
        cinder.register_opts(conf)
        conf(['--config-file', path], project='fedex-test')
        return conf


class TestServiceAuth(ConfMixin, testtools.TestCase):

    def test_each_group_its_service_type(self):
        conf = self.conf()
        self.assertEqual('compute', conf.nova.service_type)
        self.assertEqual('block-storage', conf.cinder.service_type)
        names = {o.dest for o in nova.list_opts()}
        self.assertTrue({'auth_type', 'region_name', 'timeout'} <= names)

    def test_no_credentials_is_a_clear_error(self):
        e = self.assertRaises(exception.ManagerError, cinder._adapter,
                              self.conf())
        self.assertIn('no [cinder] credentials', str(e))

    def test_password_auth_makes_an_adapter(self):
        adapter = cinder._adapter(self.conf(
            '[cinder]\nauth_type = password\nauth_url = http://127.0.0.1:1/v3'
            '\nusername = fedex\npassword = secret\nproject_name = service'
            '\nuser_domain_name = Default\nproject_domain_name = Default'
            '\nregion_name = RegionOne\n'))
        self.assertEqual(('block-storage', 'RegionOne'),
                         (adapter.service_type, adapter.region_name))


KEYSTONE = 'http://keystone.test:5000/v3'
NOVA = 'http://nova.test:8774/v2.1'
PASSWORD = ('[nova]\nauth_type = password\nauth_url = %s\nusername = fedex'
            '\npassword = secret\nproject_name = service'
            '\nuser_domain_name = Default\nproject_domain_name = Default'
            '\nregion_name = RegionOne\n' % KEYSTONE)


class TestOneTokenPerGroup(ConfMixin, testtools.TestCase):
    """The manager's calls to a service reuse one Keystone token.

    A fresh token per call cost the wave benchmark 5 s to issue plus
    ~20 s for Nova to validate, per call (service_auth.adapter).
    """

    def setUp(self):
        super(TestOneTokenPerGroup, self).setUp()
        self.http = self.useFixture(rm_fixture.Fixture())
        self.issued = 0

        def issue(request, context):
            self.issued += 1
            context.status_code = 201
            context.headers['X-Subject-Token'] = 'token-%d' % self.issued
            return {'token': {
                'expires_at': '2999-01-01T00:00:00.000000Z',
                'methods': ['password'],
                'user': {'id': 'u', 'name': 'fedex',
                         'domain': {'id': 'default', 'name': 'Default'}},
                'project': {'id': 'p', 'name': 'service',
                            'domain': {'id': 'default', 'name': 'Default'}},
                'catalog': [{'type': 'compute', 'name': 'nova', 'endpoints': [
                    {'interface': 'public', 'region': 'RegionOne',
                     'region_id': 'RegionOne', 'url': NOVA}]}]}}

        # The plugin's discovery of the identity API, then the token.
        self.http.get(KEYSTONE, json={'version': {
            'id': 'v3.14', 'status': 'stable',
            'links': [{'rel': 'self', 'href': KEYSTONE + '/'}]}})
        self.http.post(KEYSTONE + '/auth/tokens', json=issue)
        self.http.get(NOVA + '/servers/s1', json={'server': {'id': 's1'}})

    def tokens_sent(self):
        return [r.headers.get('X-Auth-Token') for r in
                self.http.request_history if r.url.startswith(NOVA)]

    def test_calls_reuse_one_token(self):
        conf = self.conf(PASSWORD)
        for _ in range(3):
            self.assertEqual(200, nova._adapter(conf).get(
                '/servers/s1', raise_exc=False).status_code)
        self.assertEqual(1, self.issued)
        self.assertEqual(['token-1'] * 3, self.tokens_sent())

    def test_changed_credentials_get_their_own_token(self):
        conf = self.conf(PASSWORD)
        nova._adapter(conf).get('/servers/s1', raise_exc=False)
        conf.set_override('username', 'other', group='nova')
        self.addCleanup(conf.clear_override, 'username', group='nova')
        nova._adapter(conf).get('/servers/s1', raise_exc=False)
        self.assertEqual(2, self.issued)
        self.assertEqual(['token-1', 'token-2'], self.tokens_sent())
        asked = [r.json()['auth']['identity']['password']['user']['name']
                 for r in self.http.request_history
                 if r.method == 'POST' and r.url.startswith(KEYSTONE)]
        self.assertEqual(['fedex', 'other'], asked)
