"""A fedexclient against requests-mock, with a real keystoneauth session."""

from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from requests_mock.contrib import fixture as rm_fixture
import testtools

from fedexclient import client

ROOT = 'http://fedex.example:8787/vm-shipping'
API = ROOT + '/v1'
TOKEN = 'user-token'


class TestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.requests = self.useFixture(rm_fixture.Fixture())
        auth = token_endpoint.Token(ROOT, TOKEN)
        self.client = client.Client(session=ks_session.Session(auth=auth),
                                    endpoint=ROOT)

    def assertSent(self, method, url, body=None):
        """The last request: its method, URL (with query) and JSON body."""
        req = self.requests.last_request
        self.assertEqual((method, url), (req.method, req.url))
        self.assertEqual(body, req.json() if req.body else None)
