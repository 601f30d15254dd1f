"""Shipment keys in the mini-cloud's real Barbican, through castellan.

The manager (fedex-conductor) and the two terminals (lsrp-agent) run with
``[shipment_keys] backend = castellan`` and castellan's Barbican backend,
each with its own Keystone user (the terminals ``fedex-site-a`` and
``fedex-site-b``); Barbican is found in the Keystone catalog. A migration
runs to the end and is cleaned up: the shipment's key is a Barbican secret,
the destination terminal reads it only after the delivery (Barbican's own
log says who read a secret's payload, and when), its ACL lets only the
destination terminal's user (and the manager) read it once the shipment
is sealed, and the erase deletes it (Barbican then answers 404).
"""

import datetime
import re

from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session

from fedex_manager.actions import lifecycle
from fedex_manager.actions import shipping
from fedex_manager.db import api as db
from fedex_manager import keys
from fedex_manager import states
from lsrp import exception
from tests.functional.manager import base as manager_base
from tests.openstack import base as cloud_base

# oslo.log's context format: time pid LEVEL logger [global-req req user
# project ...] message.
_PAYLOAD_READ = re.compile(
    r'^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) \d+ INFO \S+ '
    r'\[\S+ \S+ (\S+) .*Retrieved secret payload for project')


class TestShipmentKeyInBarbican(manager_base.ManagerTestCase):

    def key_manager(self):
        self.cloud = cloud_base.sandbox().cloud()
        return {role: self.cloud.key_manager_conf(user)
                for role, user in (('manager', 'fedex'),
                                   ('site-a', 'fedex-site-a'),
                                   ('site-b', 'fedex-site-b'))}

    def barbican(self, user='fedex'):
        """A Keystone session of ``user`` (project service)."""
        auth = v3.Password(auth_url=self.cloud.keystone_url,
                           username=user,
                           password=self.cloud.shared.secrets()['service'],
                           project_name='service',
                           user_domain_name='Default',
                           project_domain_name='Default')
        return ks_session.Session(auth=auth)

    def payload_reads(self, since):
        """[(time, user id)] of Barbican's payload reads since ``since``."""
        reads = []
        with open(self.cloud.barbican().log_file) as f:
            for line in f:
                match = _PAYLOAD_READ.match(line)
                if not match:
                    continue
                when = datetime.datetime.strptime(match.group(1),
                                                  '%Y-%m-%d %H:%M:%S.%f')
                if when >= since:
                    reads.append((when, match.group(2)))
        return reads

    def user_id(self, name):
        return self.cloud.openstack('user', 'show', name)['id']

    def test_key_in_barbican_read_after_delivery_deleted_at_erase(self):
        begin = datetime.datetime.utcnow()
        self.dep.start_conductor('conductor-1')
        self.start_terminals()
        specs, writer = self.vm()
        m = self.migrate(specs)
        self.wait_state(m, states.READY_FOR_CUTOVER, timeout=900)

        # The key is a Barbican secret: AES-256, named after the shipment.
        s = shipping.shipment_list(self.ctx)[0]
        url = self.cloud.url('barbican', '/v1/secrets/%s' % s['key_ref'])
        barbican = self.barbican()
        meta = barbican.get(url).json()
        self.assertEqual((s['name'], 'aes', 256, 'symmetric'),
                         (meta['name'], meta['algorithm'].lower(),
                          meta['bit_length'], meta['secret_type']))

        # The destination terminal read it, and only after the delivery;
        # the source read it before (to write the devices).
        delivered = [e['created_at'] for e in db.events(
            self.ctx, {'resource_id': s['id']}, 1000, None, None, 'asc')
            if e['to_state'] == states.S_DELIVERED]
        self.assertEqual(1, len(delivered), delivered)
        delivered = delivered[0]
        if isinstance(delivered, str):
            delivered = db.utcfromiso(delivered)
        reads = self.payload_reads(begin)
        site_a, site_b = (self.user_id('fedex-site-a'),
                          self.user_id('fedex-site-b'))
        at_b = [t for t, user in reads if user == site_b]
        at_a = [t for t, user in reads if user == site_a]
        self.assertTrue(at_b, 'the destination never read the key: %s'
                        % reads)
        self.assertGreaterEqual(min(at_b), delivered, reads)
        self.assertTrue(at_a and min(at_a) < delivered, reads)

        # Per-terminal ACL: once sealed, only the destination terminal's
        # user (and the manager) reads the key; the source's and another
        # terminal's users (members of the same project) are refused.
        payload = url + '/payload'
        accept = {'Accept': 'application/octet-stream'}
        got = {user: self.barbican(user).get(
            payload, headers=accept, raise_exc=False).status_code
            for user in ('fedex', 'fedex-site-a', 'fedex-site-b',
                         'fedex-site-c')}
        self.assertEqual({'fedex': 200, 'fedex-site-a': 403,
                          'fedex-site-b': 200, 'fedex-site-c': 403}, got)
        acl = barbican.get(url + '/acl').json()['read']
        self.assertEqual(([site_b], False),
                         (acl['users'], acl['project-access']))
        self.assertTrue(any('readable by terminal-site-b only' in e
                            for e in self.events(m)), self.events(m))

        self.cut_over(m, writer)
        self.assert_converged(m)
        lifecycle.migration_cleanup(self.ctx, m['id'])
        self.wait_state(m, states.CLEANED, timeout=600)
        s = shipping.shipment_list(self.ctx)[0]
        self.assertEqual(states.S_ERASED, s['state'])
        # Gone from Barbican: its API says 404, castellan "not found".
        self.assertEqual(404, barbican.get(url, raise_exc=False).status_code)
        self.assertRaises(exception.KeyManagerError, keys.get_store().get,
                          s['key_ref'])
