"""README's first command, ``fedex-sandbox demo``, on the mini-cloud.

The demo runs as a user runs it (the ``fedex-sandbox`` command, the
cloud's own fedex-api, Nova, Cinder, and the sandbox's conductor and
terminal agents, which get the cloud's ``fedex`` user for Nova and
Cinder): a Nova server with an rbd root disk and an attached Cinder volume
holding 48 MiB of data moves from site A to site B. Its report is checked,
and then, with ``--keep``, the cloud itself: the server ACTIVE on its
site-B host reading both disks from cluster B (``virsh dumpxml``), the
volume in-use at site B's backend, the guest still counting on both, and a
detach and attach of the volume at site B through stock Cinder and Nova.
(This is the success path of the volume cutover; test_cutover_volume keeps
the refusals and the rollback.) And what the cutover test of a server alone
checks (``tests/scenarios/test_nova_cutover``, by hand since 2026-11-29):
every path over the emulated WAN, the memory stream and libvirt's control
in TLS from their first byte, nova_fedex's comparison of the final state,
the server locked for the move, unlocked after and scheduled inside site
B by a plain live migration.
"""

import json
import os
import subprocess
import sys
from xml.etree import ElementTree as etree

from fedex_sandbox.manager import cloud_demo
from fedex_sandbox import wan
from tests.openstack import base
from tests.openstack import test_cutover_nova as nova_t

MiB = 1 << 20
# Catch-up deltas only: the volume alone holds 48 MiB.
WAN_BOUND = 16 * MiB


class TestDemo(nova_t.WanChecks, base.CloudTestCase):

    def run_demo(self):
        exe = os.path.join(os.path.dirname(sys.executable), 'fedex-sandbox')
        proc = subprocess.run(
            [exe, '--sandbox-dir', self.sandbox.root, '--sandbox-base_port',
             str(self.sandbox.base_port), 'demo', '--keep'],
            capture_output=True, text=True, timeout=2400)
        lines = proc.stdout.strip().splitlines()
        try:
            report = json.loads(lines[-1])
        except (IndexError, ValueError):
            self.fail('no report: exit %d\n%s\n%s' % (
                proc.returncode, proc.stdout[-6000:], proc.stderr[-4000:]))
        demo = cloud_demo.CloudDemo(self.sandbox)
        demo.server_id, demo.volume_id = report['server'], report['volume']
        demo.migration_id = report['migration']
        self.addCleanup(demo.cleanup)
        self.assertEqual(0, proc.returncode, proc.stdout[-6000:] +
                         proc.stderr[-3000:])
        return report, proc.stdout

    def volume_disk(self, host, server, volume):
        xml = [h for h in self.cloud.hosts if h.name == host][0].virsh(
            'dumpxml', server)
        disks = {d.find('source').get('name'): d for d in etree.fromstring(
            xml.encode()).findall('./devices/disk')
            if d.find('source') is not None}
        self.assertEqual({'vms/%s_disk' % server,
                          'volumes/volume-%s' % volume}, set(disks), xml)
        return disks

    def assert_reads_cluster_b(self, server, volume):
        b_conf = open(self.sandbox.site('site-b').conf).read()
        secret = self.cloud.load_state()['secrets']['site-b']
        for name, d in self.volume_disk(cloud_demo.SITE_B_HOST, server,
                                        volume).items():
            for h in d.find('source').findall('host'):
                self.assertIn('%s:%s' % (h.get('name'), h.get('port')),
                              b_conf, '%s: monitor of cluster A' % name)
            self.assertEqual(secret, d.find('auth/secret').get('uuid'), name)

    def test_demo_moves_server_and_volume(self):
        # What an eavesdropper on the link sees of the memory stream and of
        # libvirt's control connections.
        tap = wan.Tap.of_paths(wan.SandboxWan(self.sandbox)).start()
        self.addCleanup(tap.stop)
        report, output = self.run_demo()
        self.assert_encrypted_on_the_wan(tap.stop())
        self.assert_crossed_the_wan(report['wan_bytes_per_path'])
        # nova_fedex compared the whole images itself after the resume.
        self.assertEqual('final_state_checked',
                         report['final_state_checked_by_nova'])
        # What the demo printed as it went: the way there, the cutover.
        for seen in ('EXPORTING', 'READY_FOR_CUTOVER', 'CUTTING_OVER',
                     'COMPLETED', 'destination == source'):
            self.assertIn(seen, output)
        self.assertTrue(report['ok'], report)
        self.assertEqual('COMPLETED', report['state'])
        self.assertEqual(('ACTIVE', cloud_demo.SITE_B_HOST, 'site-b'),
                         (report['server_status'], report['server_host'],
                          report['server_zone']))
        self.assertEqual(('in-use', 'cinder@site-b#ceph', 'site-b'),
                         (report['volume_status'], report['volume_host'],
                          report['volume_zone']))
        self.assertEqual({'root': True, 'volume': True},
                         report['sha256_equal'])
        self.assertGreater(report['bytes_shipped'], report['volume_data_bytes'])
        self.assertLess(report['bytes_over_wan'], WAN_BOUND)
        self.assertGreaterEqual(report['rounds'], 1)
        self.assertIsNotNone(report['pause_seconds'])
        self.assertLess(report['pause_seconds'], 30)
        self.assertGreater(report['counter_at_b'], report['counter_at_a_last'])
        self.assertTrue(report['ticks_kept'])

        # The cloud agrees: both disks read from cluster B at the site-B host,
        # the guest writing both.
        sid, vid = report['server'], report['volume']
        self.assert_reads_cluster_b(sid, vid)
        root_b = self.reader('site-b', 'vms', '%s_disk' % sid)
        vol_b = self.reader('site-b', 'volumes', 'volume-%s' % vid)
        self.assert_counting(sid, root_b, vol_b)

        # Detach and attach at site B: stock Cinder and Nova, cluster B.
        self.cloud.openstack_plain('server', 'remove', 'volume', sid, vid)
        self.wait_for('volume available', lambda: self.os(
            'volume', 'show', vid)['status'] == 'available', 300)
        self.cloud.openstack_plain('server', 'add', 'volume', sid, vid)
        shown = self.wait_for('volume in-use', lambda: (lambda v: v[
            'status'] == 'in-use' and v)(self.os('volume', 'show', vid)), 300)
        self.assertEqual('cinder@site-b#ceph', shown['os-vol-host-attr:host'])
        self.assert_reads_cluster_b(sid, vid)
        before = vol_b.last().counter
        self.assert_counting(sid, vol_b)
        self.assertGreater(vol_b.last().counter, before)
        self.assert_belongs_to_b(report['migration'], sid, root_b, vol_b)
        print('demo: %s' % json.dumps(report))

    def assert_belongs_to_b(self, mid, sid, *readers):
        """Locked for the move, unlocked after; Nova keeps it in site B.

        The cutover (an admin's live migration) went through the lock. The
        server was booted pinned to site A's zone: nova_fedex rewrote its
        RequestSpec's zone to B's, so a scheduled live migration (no host
        given) finds site-b-h2.
        """
        events = [e['message'] for e in self.os(
            'fedex', 'migration', 'event', 'list', mid)]
        self.assertTrue(any(e.startswith('servers locked in Nova: %s locked'
                                         % sid) for e in events), events)
        self.wait_for('server %s unlocked' % sid, lambda: not self.os(
            '--os-compute-api-version', '2.73', 'server', 'show',
            sid)['locked'], 120, interval=3)
        self.cloud.openstack_plain('--os-compute-api-version', '2.latest',
                                   'server', 'migrate', '--live-migration',
                                   '--wait', sid)
        shown = self.os('server', 'show', sid)
        self.assertEqual(('ACTIVE', 'site-b-h2'), (
            shown['status'], shown['OS-EXT-SRV-ATTR:host']))
        self.assert_counting(sid, *readers)
