"""A detached Cinder volume migrated on its own, on the mini-cloud.

``openstack fedex migration create --volume V --site site-b --cutover
automatic --wait`` through the cloud's own fedex-api, driven by the
sandbox's conductor and terminal agents: the volume's image is seeded on
devices, shipped, imported and caught up; its cutover needs no Nova (the
final delta, then cinder_fedex's ``os-fedex-cutover``). It ends as a
site-B volume (backend ``cinder@site-b#ceph``, zone ``site-b``),
bit-exact with site A's copy, and stock Cinder extends it at site B. A
volume that does not exist, or is attached, is refused with a clear
reason.
"""

import json
import os
import subprocess

from fedex_manager.actions import migrations
from fedex_manager import states
from fedex_sandbox.manager import cloud_demo
from tests.openstack import base

MiB = 1 << 20
FILL = 16 * MiB


class TestVolumeAlone(base.CloudTestCase):

    def setUp(self):
        super().setUp()
        # The sandbox manager's database (to wait for its devices and read
        # the migration) and clusters, as the demo has them.
        self.demo = cloud_demo.CloudDemo(self.sandbox)
        self.demo._connect()
        self.addCleanup(self.demo._close)
        self.demo._ready_terminals()

    def cli(self, *args):
        proc = subprocess.run(
            [os.path.join(self.cloud.venv, 'bin', 'openstack')] + list(args),
            capture_output=True, text=True, timeout=1800,
            env=dict(os.environ, **self.cloud.client_env()))
        return proc.returncode, proc.stdout, proc.stderr

    def volume(self, name):
        vol = self.os('volume', 'create', '--size', '1',
                      '--availability-zone', 'site-a', '--type', 'ceph', name)
        vid = vol['id']
        self.addCleanup(self._delete, vid)
        self.wait_for('volume available', lambda: self.os(
            'volume', 'show', vid)['status'] == 'available', 300)
        return vid

    def _delete(self, vid):
        self.cloud.openstack_plain('volume', 'delete', vid, check=False)
        # The copy kept at site A for the retention period.
        conf = self.sandbox.site('site-a').conf
        spec = 'volumes/volume-%s' % vid
        subprocess.run(['rbd', '-c', conf, 'snap', 'purge', spec],
                       capture_output=True)
        subprocess.run(['rbd', '-c', conf, 'rm', spec], capture_output=True)

    def test_detached_volume_becomes_a_site_b_volume(self):
        vid = self.volume('fedex-alone-%s' % self.demo.id)
        # Data spread over the volume (the rest stays sparse).
        with self.demo.clusters['site-a'].pool('volumes') as pool:
            with pool.open_image('volume-%s' % vid) as img:
                for off in range(0, FILL, 4 * MiB):
                    img.write(off * 3, os.urandom(4 * MiB))

        code, out, err = self.cli(
            'fedex', 'migration', 'create', '--volume', vid, '--site',
            'site-b', '--cutover', 'automatic', '--wait', '-f', 'json')
        self.assertEqual(0, code, out + err)
        shown = json.loads(out)
        self.assertEqual(states.COMPLETED, shown['state'], out + err)
        m = migrations.migration_show(self.demo.ctx, shown['id'])
        self.assertEqual([], m['servers'])
        self.assertEqual([(vid, 'volume', 'volumes/volume-%s' % vid)],
                         [(v['volume_id'], v['kind'], v['source_image'])
                          for v in m['volumes']])

        # Cinder: a site-B volume, available, unmarked.
        vol = self.os('volume', 'show', vid)
        self.assertEqual(('available', 'cinder@site-b#ceph', 'site-b'),
                         (vol['status'], vol['os-vol-host-attr:host'],
                          vol['availability_zone']))
        # Bit-exact: site B's image and site A's (kept for the retention).
        spec = 'volumes/volume-%s' % vid
        a = self.sandbox.site('site-a').export_sha256(spec)
        self.assertEqual(a, self.sandbox.site('site-b').export_sha256(spec))
        self.assertEqual(a, self.sandbox.site('site-b').export_sha256(
            '%s@%s' % (spec, m['last_snapshot'])))

        # Stock Cinder works on it at site B: extend to 2 GiB.
        self.cloud.openstack_plain('volume', 'set', '--size', '2', vid)
        self.wait_for('extended at B', lambda: (lambda v: v[
            'status'] == 'available' and v['size'] == 2)(
            self.os('volume', 'show', vid)), 300)
        with self.demo.clusters['site-b'].pool('volumes') as pool:
            with pool.open_image('volume-%s' % vid) as img:
                self.assertEqual(2 << 30, img.size())
        # A snapshot at B lives on cluster B, and goes again.
        snap = self.os('volume', 'snapshot', 'create', '--volume', vid,
                       'fedex-alone-snap-%s' % self.demo.id)
        self.wait_for('snapshot available at B', lambda: self.os(
            'volume', 'snapshot', 'show', snap['id'])['status'] ==
            'available', 300)
        self.assertIn('snapshot-%s' % snap['id'], self.rbd(
            'site-b', 'snap', 'ls', spec).stdout)
        self.cloud.openstack_plain('volume', 'snapshot', 'delete',
                                   snap['id'])
        self.wait_for('snapshot deleted at B', lambda: 'snapshot-%s' % snap[
            'id'] not in self.rbd('site-b', 'snap', 'ls', spec).stdout, 300)
        # Deleted at B: cluster B's image goes; site A's copy stays for the
        # retention period (the manager's clean-up removes it, never a
        # stray delete).
        self.cloud.openstack_plain('volume', 'delete', vid)
        self.wait_for('volume deleted at B', lambda: self.cli(
            'volume', 'show', vid)[0] != 0, 300)
        self.wait_for('image gone from cluster B', lambda: self.rbd(
            'site-b', 'info', spec).returncode != 0, 120)
        self.assertEqual(0, self.rbd('site-a', 'info', spec).returncode)
        print('volume alone: migration %s COMPLETED, %d rounds' % (
            m['id'], m['rounds']))

    def rbd(self, site, *args):
        return subprocess.run(
            ['rbd', '-c', self.sandbox.site(site).conf] + list(args),
            capture_output=True, text=True, timeout=120)

    def test_refused_with_a_reason(self):
        missing = '00000000-0000-4000-8000-000000000000'
        code, out, err = self.cli('fedex', 'migration', 'create', '--volume',
                                  missing, '--site', 'site-b',
                                  '--source-site', 'site-a')
        self.assertNotEqual(0, code)
        self.assertIn('volume %s does not exist in Cinder' % missing,
                      out + err)
        code, out, err = self.cli('fedex', 'migration', 'create', '--volume',
                                  missing, '--site', 'site-b')
        self.assertNotEqual(0, code)
        self.assertIn('source_site is required', out + err)
