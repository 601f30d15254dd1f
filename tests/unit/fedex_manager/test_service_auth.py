"""fedex_manager.service_auth: the one home of [nova] and [cinder] auth."""

import os

import fixtures
from oslo_config import cfg
import testtools

from fedex_manager import cinder
from fedex_manager import nova
from lsrp import exception


class TestServiceAuth(testtools.TestCase):

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

    PASSWORD = (
        '[%s]\nauth_type = password\nauth_url = http://127.0.0.1:1/v3'
        '\nusername = fedex\npassword = secret\nproject_name = service'
        '\nuser_domain_name = Default\nproject_domain_name = Default'
        '\nregion_name = RegionOne\n')

    def test_password_auth_makes_an_adapter(self):
        adapter = cinder._adapter(self.conf(self.PASSWORD % 'cinder'))
        self.assertEqual(('block-storage', 'RegionOne'),
                         (adapter.service_type, adapter.region_name))

    def test_one_session_a_process_while_the_options_stay(self):
        # Its token and connections kept: not a session (and a token) for
        # every call to Nova.
        conf = self.conf(self.PASSWORD % 'nova')
        first, second = nova._adapter(conf), nova._adapter(conf)
        self.assertIs(first.session, second.session)
        self.assertIs(first.auth, second.auth)
        self.assertIsNot(first.session, cinder._adapter(self.conf(
            self.PASSWORD % 'cinder')).session)
        conf.set_override('region_name', 'RegionTwo', group='nova')
        third = nova._adapter(conf)
        self.assertIsNot(first.session, third.session)
        self.assertEqual('RegionTwo', third.region_name)
