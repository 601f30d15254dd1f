"""The client reaches fedex-api where the catalog (or the caller) says."""

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import fixture as ks_fixture
from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session
from requests_mock.contrib import fixture as rm_fixture
import testtools

from fedexclient import client
from tests.unit.fedexclient import base

KEYSTONE = 'http://keystone.example/identity/v3'


class TestEndpoint(base.TestCase):

    def test_the_users_token_and_json(self):
        self.requests.get(base.API + '/sites', json={'sites': []})
        self.assertEqual([], self.client.sites.list())
        req = self.requests.last_request
        self.assertEqual(base.TOKEN, req.headers['X-Auth-Token'])
        self.assertEqual('application/json', req.headers['Accept'])
        self.assertIn('fedexclient', req.headers['User-Agent'])

    def test_endpoint_with_or_without_its_version(self):
        sess = ks_session.Session()
        for endpoint in (base.ROOT, base.ROOT + '/', base.API,
                         base.API + '/'):
            fedex = client.Client(session=sess, endpoint=endpoint)
            self.requests.get(base.API + '/plans', json={'plans': []})
            fedex.plans.list()
            self.assertEqual(base.API + '/plans',
                             self.requests.last_request.url)

    def test_an_adapter_as_it_is(self):
        adapter = ks_adapter.Adapter(ks_session.Session(),
                                     endpoint_override=base.ROOT)
        fedex = client.Client(adapter=adapter)
        self.requests.get(base.API + '/servers/s1/cutover',
                          json={'cutover': {'id': 'm1'}})
        self.assertEqual({'id': 'm1'}, fedex.cutover.get('s1'))

    def test_a_session_or_an_adapter_is_needed(self):
        self.assertRaises(ValueError, client.Client)


class TestCatalog(testtools.TestCase):
    """The endpoint of service type vm-shipping, by interface and region."""

    def setUp(self):
        super().setUp()
        self.requests = self.useFixture(rm_fixture.Fixture())
        token = ks_fixture.V3Token()
        service = token.add_service(client.SERVICE_TYPE, name='fedex')
        service.add_standard_endpoints(
            public='http://public.example/vm-shipping',
            internal='http://internal.example/vm-shipping',
            region='RegionOne')
        self.requests.post(KEYSTONE + '/auth/tokens', json=token,
                           headers={'X-Subject-Token': 'tok'})
        auth = v3.Password(auth_url=KEYSTONE, username='u', password='p',
                           project_id='p1', user_domain_id='default')
        self.session = ks_session.Session(auth=auth)

    def test_public_by_default(self):
        self.requests.get('http://public.example/vm-shipping/v1/sites',
                          json={'sites': [{'name': 'site-a'}]})
        fedex = client.Client(session=self.session)
        self.assertEqual([{'name': 'site-a'}], fedex.sites.list())
        self.assertEqual('tok',
                         self.requests.last_request.headers['X-Auth-Token'])

    def test_the_interface_asked_for(self):
        self.requests.get('http://internal.example/vm-shipping/v1/sites',
                          json={'sites': []})
        fedex = client.Client(session=self.session, interface='internal',
                              region_name='RegionOne')
        self.assertEqual([], fedex.sites.list())
