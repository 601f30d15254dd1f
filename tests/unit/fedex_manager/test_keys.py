"""A shipment key's Barbican ACL through python-barbicanclient, against a
Barbican API answered by requests-mock (tests/openstack/test_keys_barbican.py
does it on the mini-cloud's real Barbican)."""

import uuid

from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint
from oslo_config import cfg
from requests_mock.contrib import fixture as rm_fixture
import testtools

from fedex_manager import keys
from lsrp import exception

BARBICAN = 'http://barbican.example:9311'
# Barbican's version document (GET /), as barbicanclient discovers it.
VERSIONS = {'versions': {'values': [{
    'id': 'v1', 'status': 'CURRENT', 'min_version': '1.0',
    'max_version': '1.1', 'links': [{'rel': 'self',
                                     'href': BARBICAN + '/v1/'}]}]}}


class TestBarbicanACL(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.http = self.useFixture(rm_fixture.Fixture())
        self.http.get(BARBICAN, json=VERSIONS, status_code=300)
        conf = cfg.ConfigOpts()
        conf([], project='fedex', default_config_files=[])
        keys.register_opts(conf)
        conf.set_override('backend', 'castellan', group='shipment_keys')
        self.store = keys.get_store(conf)
        # The session castellan's [key_manager] user would have, with
        # Barbican as the catalog's key-manager endpoint.
        self.store._ks = ks_session.Session(
            auth=token_endpoint.Token(BARBICAN, 'a-token'))
        self.ref = str(uuid.uuid4())
        self.acl_url = '%s/v1/secrets/%s/acl' % (BARBICAN, self.ref)

    def test_read_for_the_users_only(self):
        put = self.http.put(self.acl_url, status_code=201,
                            json={'acl_ref': self.acl_url})
        self.assertTrue(self.store.restrict(self.ref, ['u2', 'u1', 'u2']))
        self.assertEqual(1, put.call_count)
        self.assertEqual({'read': {'users': ['u1', 'u2'],
                                   'project-access': False}},
                         put.last_request.json())
        self.assertEqual('a-token', put.last_request.headers['X-Auth-Token'])

    def test_refused_by_barbican(self):
        self.http.put(self.acl_url, status_code=403,
                      json={'code': 403, 'title': 'Forbidden',
                            'description': 'not the secret\'s creator'})
        err = self.assertRaises(exception.KeyManagerError,
                                self.store.restrict, self.ref, ['u1'])
        self.assertIn('Barbican refused its ACL: HTTP 403', str(err))

    def test_not_a_secret_ref(self):
        for ref in ('', 'no/slashes', 'file-0123abcd'):
            self.assertRaises(exception.KeyManagerError,
                              self.store.restrict, ref, ['u1'])
        self.assertFalse(any(r.method == 'PUT'
                             for r in self.http.request_history))
