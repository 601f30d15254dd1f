"""The FedEx cutover of a Nova server alone, every check of the pause.

By hand (``tox -e scenarios``), on the mini-cloud: a tiny guest booted on
a site-A host, moved by ``openstack server migrate --live-migration
--fedex --host site-b-h1 --cutover automatic --wait``. Checked: the server
ACTIVE on the site-B host reading its disk from cluster B, the guest's
pause timed from outside (both sites polled), no tick lost, ``rbd export
| sha256sum`` of B's state at the resume equal to A's final image, no
snapshot taken at B in the pause, nova_fedex's own comparison, every path
over the WAN and in TLS, the server locked for the move, unlocked after
and scheduled inside site B.

README's test command runs the demo's test instead
(``tests/openstack/test_demo``): the same move with a volume attached and
the same checks of the link, the lock and site B, but for the pause timed
from outside and the snapshot; one whole migration less in CI's hour.
"""

import json
import subprocess
import time

from fedex_manager.db import api as db
from fedex_manager import states
from fedex_sandbox import relay
from fedex_sandbox.services import guest_reader
from fedex_sandbox import wan
from lsrp.server import records
from tests.openstack import test_cutover_nova as nova_t


class TestNovaCutover(nova_t.WanChecks, nova_t.CutoverTestCase):

    def test_cutover_to_site_b(self):
        server = self.boot('fedex-e2e-%s' % self.id_)
        sid = server['id']
        image = '%s_disk' % sid
        at_a = self.reader('site-a', image)
        at_a.wait_advancing(ticks=20, timeout=180)

        # Poll the guest's counter from outside at both sites while the
        # migration runs: the longest silence is its pause. One process
        # per site (never librbd from threads of this one: SIGSEGV, see
        # guest_reader.PollerProcess); B's waits for its image's import.
        poll_a, poll_b = (
            guest_reader.PollerProcess(self.sandbox.site(site).conf, 'vms',
                                       image) for site in ('site-a', 'site-b'))
        self.addCleanup(poll_a.stop)
        self.addCleanup(poll_b.stop)
        link = wan.SandboxWan(self.sandbox)
        wan_before = wan.by_path(link.stats())
        # What an eavesdropper on the link sees of the memory stream and of
        # libvirt's control connections.
        tap = wan.Tap.of_paths(link).start()
        self.addCleanup(tap.stop)
        began = time.monotonic()
        out = self.migrate(sid)
        api_to_end = time.monotonic() - began
        poll_a.stop()
        poll_b.stop()
        self.assert_encrypted_on_the_wan(tap.stop())
        time.sleep(relay.STATS_INTERVAL + 0.2)
        self.assert_crossed_the_wan(wan.difference(
            wan_before, wan.by_path(link.stats())))

        shown = self.show(sid)
        self.assertEqual('ACTIVE', shown['status'], out)
        self.assertEqual(nova_t.SITE_B_HOST, shown['OS-EXT-SRV-ATTR:host'], out)
        self.assert_disk_at_b(sid)
        at_b = self.reader('site-b', image)
        last_a = poll_a.changes[-1][1]
        resumed = at_b.wait_advancing(ticks=20, timeout=120)
        ticks = at_b.read_ring()
        counters = [t.counter for t in ticks]
        # No tick lost: the ring at B continues A's counter one by one.
        self.assertGreater(resumed.counter, last_a)
        self.assertEqual(list(range(counters[0], counters[-1] + 1)),
                         counters)
        # The pause, from outside: the last new tick seen at A to the first
        # newer one seen at B.
        left = poll_a.changes[-1][0]
        arrived = [t for t, c in poll_b.changes if c > last_a]
        pause = arrived[0] - left if arrived else None
        # Bit-exact: A's image (its QEMU stopped) and B's state at the
        # resume (its record: lsrp.server.records), read by rbd itself.
        m = [x for x in db.list_(self.ctx, 'migration')
             if any(s['server_id'] == sid for s in x['servers'])][0]
        mid = m['id']
        spec = 'vms/%s' % image
        self.assertEqual(
            self.sandbox.site('site-a').export_sha256(spec),
            self.sandbox.site('site-b').export_sha256(
                records.record_spec(spec, 'fedex-final-%s' % mid[:8])))
        # No snapshot was taken at B in the pause.
        site_b = self.sandbox.site('site-b')
        self.assertNotIn('fedex-final-%s' % mid[:8], [s['name'] for s in json.loads(
            subprocess.run(['rbd', '-c', site_b.conf, '--keyring',
                            site_b.keyring, 'snap', 'ls', '--format', 'json',
                            spec], capture_output=True, text=True,
                           check=True).stdout)])
        # nova_fedex compared the whole images itself after the resume.
        self.dep.wait(lambda: any('nova: final_state_' in e
                                  for e in self.events(m)), 300,
                      'the comparison of the final state')
        self.assertTrue(any('nova: final_state_checked' in e
                            for e in self.events(m)), self.events(m))
        print('cutover: API to COMPLETED %.1f s; last counter at A %d, '
              'B at %d; pause seen from outside %s s' % (
                  api_to_end, last_a, resumed.counter,
                  '%.3f' % pause if pause is not None else '?'))
        self.assertEqual(states.COMPLETED, m['state'])
        self.assert_belongs_to_b(sid, m)

    def assert_belongs_to_b(self, sid, m):
        """Unlocked, and Nova schedules the server inside site B now.

        It was locked during the migration (the cutover, an admin's live
        migration, went through the lock) and booted pinned to site A's
        zone: nova_fedex rewrote its RequestSpec's zone to B's, so a
        scheduled live migration (no host given) finds site-b-h2.
        """
        self.assertTrue(any(e.startswith('servers locked in Nova: %s locked'
                                         % sid) for e in self.events(m)))

        def unlocked():
            return not self.cloud.openstack(
                '--os-compute-api-version', '2.73', 'server', 'show',
                sid)['locked']
        self.dep.wait(unlocked, 120, 'server %s unlocked' % sid)
        self.assertEqual('site-b', self.show(sid)['OS-EXT-AZ:availability_zone'])
        self.openstack('--os-compute-api-version', '2.latest', 'server',
                       'migrate', '--live-migration', '--wait', sid)
        shown = self.show(sid)
        self.assertEqual(('ACTIVE', 'site-b-h2'), (
            shown['status'], shown['OS-EXT-SRV-ATTR:host']))
        self.reader('site-b', '%s_disk' % sid).wait_advancing(ticks=20,
                                                              timeout=120)
