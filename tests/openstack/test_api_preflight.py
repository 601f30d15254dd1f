"""fedex-api's preflight asking the mini-cloud's real Nova and Placement.

fedex-api runs with ``[nova]`` credentials (its service user) and finds
Nova, Cinder and Placement in the real Keystone catalog; a create that
cannot work is refused with every reason, the cloud's among them, and
nothing is created.
"""

from tests.openstack import api_fixtures as fx
from tests.openstack import test_api_keystone as base

GONE = '00000000-0000-4000-8000-00000000dead'


class TestPreflightAgainstNova(base.APITestCase):

    @classmethod
    def setUpClass(cls):
        super(base.APITestCase, cls).setUpClass()
        from tests.openstack import keystone_access
        cls.auth_url, admin = keystone_access.admin_session()
        cls.identity = fx.Identity(admin, cls.auth_url).ensure()
        cls.server = fx.FedexAPIServer(
            fx.sandbox(), cls.auth_url, name='fedex-api-preflight',
            extra={'nova': {
                'auth_type': 'password', 'auth_url': cls.auth_url,
                'username': 'fedex-api', 'password': fx.PASSWORD,
                'project_name': 'service', 'user_domain_id': 'default',
                'project_domain_id': 'default'}}).start()
        cls.sessions = {u: fx.session(cls.auth_url, u) for u in fx.USERS}

    def test_missing_server_and_host_refused_with_the_rest(self):
        resp = self.call(base.ADMIN, 'POST', '/v1/migrations', {
            'servers': [GONE], 'source_site': 'site-a',
            'dest_site': 'site-b', 'dest_host': 'no-such-host'},
            status=409)
        details = self.details(resp)
        # The manager's own reasons (no sites here) and the cloud's.
        self.assertIn('source_site: no site site-a', details[0])
        self.assertIn('server %s does not exist in Nova' % GONE, details)
        self.assertEqual([], self.call(
            base.ADMIN, 'GET', '/v1/migrations?all_projects=1',
            status=200).json()['migrations'])
