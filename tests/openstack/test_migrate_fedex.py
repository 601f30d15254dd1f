"""``openstack server migrate --live-migration --fedex`` end to end.

The real ``openstack`` client, with a project member's Keystone password,
creates the migration through fedex-api (uwsgi, keystonemiddleware), which
posts it to the jobboard; fedex-conductor and two lsrp-agents (the sandbox's
terminals) snapshot, export to devices, hand them to the simulated courier,
import and catch up while a writer keeps changing the images; ``--wait``
follows it to READY_FOR_CUTOVER, and ``openstack fedex migration show``
reports it. The images at site-b are then bit-exact copies of the last
snapshot at site-a.

Nova is not involved: the images and the source site are given
(``--fedex-image``, ``--source-site``), the destination by ``--site``.
"""

import json
import os
import subprocess

from fedex_manager import states
from tests.functional.manager import base
from tests.openstack import api_fixtures as fx
from tests.openstack import keystone_access

MEMBER = 'fedex-member1'


class TestServerMigrateFedex(base.ManagerTestCase):

    def setUp(self):
        super().setUp()
        self.auth_url, admin = keystone_access.admin_session()
        identity = fx.Identity(admin, self.auth_url)
        manager = self.dep.manager_conf()
        extra = {k: manager[k] for k in ('DEFAULT', 'shipment_keys',
                                         'database', 'jobboard')}
        extra['api'] = {'post_jobs': True}
        self.api = fx.FedexAPIServer(self.sandbox, self.auth_url,
                                     name='fedex-api-e2e', extra=extra)
        self.api.start()
        self.addCleanup(self.api.stop)
        identity.ensure()

    def openstack(self, *args, timeout=900):
        env = dict(os.environ, OS_AUTH_URL=self.auth_url,
                   OS_USERNAME=MEMBER, OS_PASSWORD=fx.PASSWORD,
                   OS_PROJECT_NAME=fx.USERS[MEMBER][0],
                   OS_USER_DOMAIN_ID='default',
                   OS_PROJECT_DOMAIN_ID='default',
                   OS_IDENTITY_API_VERSION='3', OS_REGION_NAME='RegionOne',
                   OS_VM_SHIPPING_ENDPOINT_OVERRIDE=self.api.url)
        return subprocess.run([fx.venv_bin('openstack')] + list(args),
                              env=env, capture_output=True, text=True,
                              timeout=timeout)

    def test_to_ready_for_cutover(self):
        self.dep.start_conductor('conductor-1')
        self.start_terminals()
        specs, writer = self.vm()
        argv = ['server', 'migrate', '--live-migration', '--fedex',
                '--site', 'site-b', '--source-site', 'site-a', '--wait',
                '--wait-interval', '1']
        for spec in specs:
            argv += ['--fedex-image', spec]
        proc = self.openstack(*(argv + ['vm-%s' % self.id_]))
        self.assertEqual(0, proc.returncode, proc.stderr + self.logs())
        first = proc.stdout.splitlines()[0]
        self.assertTrue(first.startswith('fedex migration '), proc.stdout)
        mid = first.split()[2]
        # --wait printed the way there, state by state, on stderr, in the
        # machine's order (a phase shorter than --wait-interval may be
        # passed over: a 96 MiB export takes well under a second here);
        # the courier's travel always takes seconds.
        path = [states.REQUESTED, states.SNAPSHOTTING, states.EXPORTING,
                states.CONSOLIDATING, states.SEALED, states.IN_TRANSIT,
                states.DELIVERED, states.IMPORTING, states.CATCHING_UP,
                states.READY_FOR_CUTOVER]
        seen = [line.split()[1] for line in proc.stderr.splitlines()
                if line.startswith(mid[:8] + ' ')]
        self.assertIn(states.IN_TRANSIT, seen, proc.stderr)
        steps = [path.index(s) for s in seen if s in path]
        self.assertEqual(sorted(steps), steps, proc.stderr)
        self.assertGreaterEqual(len(set(steps)), 4, proc.stderr)
        self.assertIn('READY_FOR_CUTOVER', proc.stdout.splitlines()[-1])
        proc = self.openstack('fedex', 'migration', 'show', mid, '-f',
                              'json')
        self.assertEqual(0, proc.returncode, proc.stderr)
        shown = json.loads(proc.stdout)
        self.assertEqual(states.READY_FOR_CUTOVER, shown['state'])
        # -f json: the images as a list (the table joins them with commas).
        self.assertEqual(list(specs), shown['images'])
        self.assert_converged({'id': mid})
