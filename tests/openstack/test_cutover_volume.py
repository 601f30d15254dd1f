"""A server with an attached Cinder volume moves to site B, for real.

The mini-cloud's cinder-volume runs cinder_fedex's FedexRBDDriver, one
backend per site (``cinder@site-a#ceph``, ``cinder@site-b#ceph``, one volume
type ``ceph``). A volume is created at site A through Cinder, filled with
48 MiB of random data (a full copy would cost at least that on the WAN),
attached through Nova to the tiny guest, whose init writes its counter to
the volume too. ``openstack server migrate --live-migration --fedex``
takes the volume along in the same shipment; Cinder refuses extend and
delete while it ships, and a rollback after the memory copy leaves it
attached at A with its data intact. The success path (in-use at site B,
bit-exact with A's final state, only catch-up deltas on the WAN, detach and
attach at B) is README's demo: tests/openstack/test_demo.py.
"""

import hashlib
import os
import subprocess

import rbd

from fedex_manager.db import api as db
from fedex_manager import states
from tests.openstack import test_cutover_nova as nova_t

MiB = 1 << 20
FILL = 48 * MiB
FILL_OFFSET = 4 * MiB        # past the guest's tick ring (1 MiB + 128 KiB)


class TestVolumeCutover(nova_t.CutoverTestCase):

    # --- helpers ----------------------------------------------------------

    def volume(self, name):
        """A 1 GiB volume at site A, filled, deleted after the test."""
        vol = self.cloud.openstack(
            'volume', 'create', '--size', '1', '--availability-zone',
            'site-a', '--type', 'ceph', name)
        self.addCleanup(self._delete_volume, vol['id'])
        self.wait_volume(vol['id'], 'available')
        digest = hashlib.sha256()
        with self.sites['site-a'].pool('volumes') as p:
            with rbd.Image(p.ioctx, 'volume-%s' % vol['id']) as img:
                for off in range(0, FILL, 4 * MiB):
                    data = os.urandom(4 * MiB)
                    digest.update(data)
                    img.write(data, FILL_OFFSET + off)
        self.fill_digest = digest.hexdigest()
        return vol['id']

    def _delete_volume(self, vid):
        # After the server's delete (a cleanup registered later runs
        # earlier): detached by then. A migration that failed half-way
        # leaves the mark: clear it first, or Cinder refuses the delete.
        self.wait_volume(vid, 'available', timeout=180)
        if self.cli('volume', 'delete', vid)[0] != 0:
            self.cinder_action(vid, 'os-fedex-unmark')
            self.cli('volume', 'delete', vid)
        for site in ('site-a', 'site-b'):
            with self.sites[site].pool('volumes') as p:
                name = 'volume-%s' % vid
                if p.image_exists(name):
                    self._remove_image(site, 'volumes', name)

    def cli(self, *args):
        """The openstack client as admin: (exit code, stdout + stderr)."""
        run = subprocess.run(
            [os.path.join(self.cloud.venv, 'bin', 'openstack')] + list(args),
            capture_output=True, text=True, timeout=300,
            env=dict(os.environ, **self.cloud.client_env()))
        return run.returncode, run.stdout + run.stderr

    def cinder_action(self, vid, action):
        """An os-fedex-* admin action of cinder_fedex, as the admin."""
        from keystoneauth1 import adapter
        from keystoneauth1.identity import v3
        from keystoneauth1 import session

        from fedex_manager import cinder
        admin = self.cloud.credentials()['fedex-admin']
        auth = v3.Password(**{k: admin[k] for k in (
            'auth_url', 'username', 'password', 'project_name',
            'user_domain_name', 'project_domain_name') if k in admin})
        cinder._action(adapter.Adapter(
            session.Session(auth=auth), service_type='block-storage',
            region_name='RegionOne'), vid, action, {})

    def vshow(self, vid):
        return self.cloud.openstack('volume', 'show', vid)

    def wait_volume(self, vid, status, timeout=300):
        return self.dep.wait(
            lambda: (lambda v: v['status'] == status and v)(self.vshow(vid)),
            timeout, 'volume %s %s' % (vid, status), interval=2)

    def attach(self, sid, vid):
        self.cloud.openstack_plain('server', 'add', 'volume', sid, vid)
        return self.wait_volume(vid, 'in-use')

    def detach(self, sid, vid):
        self.cloud.openstack_plain('server', 'remove', 'volume', sid, vid)
        return self.wait_volume(vid, 'available')

    def vreader(self, site, vid):
        return nova_t.guest_reader.GuestReader(
            self.pool(site, 'volumes').ioctx, 'volume-%s' % vid)

    def migration_of(self, sid):
        return [x for x in db.list_(self.ctx, 'migration')
                if any(s['server_id'] == sid for s in x['servers'])][0]

    def setup_server_with_volume(self, name):
        vid = self.volume('vol-' + name)
        server = self.boot(name)
        sid = server['id']
        self.attach(sid, vid)
        at_a = self.vreader('site-a', vid)
        at_a.wait_advancing(ticks=20, timeout=180)
        return sid, vid, at_a

    # --- tests --------------------------------------------------------------

    def test_refusals_then_rollback(self):
        sid, vid, at_a = self.setup_server_with_volume(
            'fedex-volrb-%s' % self.id_)
        out = self.openstack(
            'server', 'migrate', '--live-migration', '--fedex', '--host',
            nova_t.SITE_B_HOST, '--cutover', 'approved', '--wait', sid,
            timeout=1500)
        m = self.migration_of(sid)
        self.assertEqual(states.READY_FOR_CUTOVER, self.state(m), out)

        # Mid-migration, Cinder refuses what would make the sites diverge.
        for argv in (('--os-volume-api-version', '3.42', 'volume', 'set',
                      '--size', '2', vid),
                     ('volume', 'delete', vid)):
            code, output = self.cli(*argv)
            self.assertNotEqual(0, code, output)
            self.assertIn('is in FedEx migration %s' % m['id'], output)
        shown = self.vshow(vid)
        self.assertEqual(('in-use', 1), (shown['status'], shown['size']))

        # The rollback after the memory copy (as test_cutover_nova).
        self.cutover_with_dead_destination(m)

        def settled():
            shown = self.show(sid)
            return shown['status'] == 'ACTIVE' and shown
        shown = self.dep.wait(settled, 300, 'the server ACTIVE again')
        self.assertEqual(nova_t.SITE_A_HOST, shown['OS-EXT-SRV-ATTR:host'])
        vol = self.wait_volume(vid, 'in-use')
        self.assertEqual('cinder@site-a#ceph', vol['os-vol-host-attr:host'])
        self.assertEqual([(sid, nova_t.SITE_A_HOST)],
                         [(a['server_id'], a['host_name'])
                          for a in vol['attachments']])
        # Its data intact at A, the guest still writing it, no tick lost.
        resumed = at_a.wait_advancing(ticks=20, timeout=120)
        counters = [t.counter for t in at_a.read_ring()]
        self.assertEqual(list(range(counters[0], counters[-1] + 1)),
                         counters)
        with self.sites['site-a'].pool('volumes') as p:
            with rbd.Image(p.ioctx, 'volume-%s' % vid,
                           read_only=True) as img:
                self.assertEqual(self.fill_digest, hashlib.sha256(
                    img.read(FILL_OFFSET, FILL)).hexdigest())
        print('volume rollback: attached at A, counter %d' % resumed.counter)
