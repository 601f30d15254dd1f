"""Convergence on the mini-cloud: a busy guest is throttled or refused.

The tiny guest dirties ``DIRTY`` MiB/s of its memory (its init's knob,
``fedex_dirty_mb_s`` on the kernel command line: a Glance image of its own
with ``os_command_line``, the initramfs built from this tree). The
migration's rate cap (``RATE_CAP``, below the dirty rate) is the memory
copy's link: nova_fedex caps QEMU at it. Before the copy, nova_fedex
measures the dirty rate and the manager answers with its forecast:

* ``convergence: refuse``: the cutover is refused before the pause, with
  the forecast in the event; the guest keeps running at A, every tick kept;
* ``convergence: auto-converge``: the cutover completes with the vCPUs
  throttled, the pause seen from outside within ``downtime_budget``;
* an idle guest: measured near 0, the stock pre-copy.
"""

import datetime
import json
import time

from fedex_manager.db import api as db
from fedex_manager import states
from fedex_sandbox.services import guest_reader
from tests.openstack import test_cutover_nova as base

DIRTY = 20                  # MiB/s the busy guest dirties
RATE_CAP = 8 << 20          # bytes/s: the migration's link
BUDGET = 2                  # s: downtime_budget
MIB = float(1 << 20)


class TestConvergence(base.CutoverTestCase):

    CONDUCTOR_OPTIONS = {'test_busy_guest_refused_before_the_pause': {
        'cutover_max_attempts': 1}}

    def boot_image(self, name, image):
        server = self.cloud.openstack(
            'server', 'create', '--flavor', 'm1.mini', '--image', image,
            '--nic', 'none', '--availability-zone',
            'site-a:%s' % base.SITE_A_HOST, '--wait', name, timeout=600)
        self.addCleanup(self.openstack, 'server', 'delete', '--wait',
                        server['id'], gone_ok=True)
        return server['id']

    def ready(self, sid, policy):
        """A migration of ``sid``, capped, READY_FOR_CUTOVER; its row."""
        out = self.openstack(
            'fedex', 'migration', 'create', '--server', sid, '--host',
            base.SITE_B_HOST, '--rate-cap', str(RATE_CAP),
            '--downtime-budget', str(BUDGET), '--convergence', policy,
            '--wait', timeout=1500)
        m = [x for x in db.list_(self.ctx, 'migration')
             if any(s['server_id'] == sid for s in x['servers'])][0]
        self.assertEqual(states.READY_FOR_CUTOVER, self.state(m), out)
        return m

    def verdict(self, m):
        """The dirty_rate event's details (the manager's verdict)."""
        found = [e for e in db.events(self.ctx, {'migration_id': m['id']})
                 if (e['details'] or {}).get('event') == 'dirty_rate']
        return found[-1] if found else None

    def cutover(self, m):
        self.openstack('fedex', 'migration', 'cutover', m['id'])
        self.dep.wait(lambda: self.state(m) in (
            states.COMPLETED, states.CATCHING_UP, states.READY_FOR_CUTOVER,
            states.ROLLED_BACK) and self.verdict(m), 900,
            'the end of the cutover')

    def test_busy_guest_refused_before_the_pause(self):
        sid = self.boot_image('fedex-conv-refuse-%s' % self.id_,
                              self.guest_image(DIRTY))
        at_a = self.reader('site-a', '%s_disk' % sid)
        at_a.wait_advancing(ticks=20, timeout=180)
        m = self.ready(sid, 'refuse')
        poll = guest_reader.PollerProcess(
            self.sandbox.site('site-a').conf, 'vms', '%s_disk' % sid)
        self.addCleanup(poll.stop)
        self.cutover(m)
        self.dep.wait(lambda: any('nova: refused' in e
                                  for e in self.events(m)), 300,
                      'the refusal')
        poll.stop()
        event = self.verdict(m)
        v = event['details']
        print('refused: %s' % event['message'])
        self.assertIsNone(v['means'])
        self.assertGreater(v['measured']['dirty_rate'], RATE_CAP)
        self.assertIn('exceeds the link', v['reason'])
        self.assertIn('> budget %d s' % BUDGET, v['reason'])
        self.assertTrue(any('would not converge' in e and 'nova: refused' in e
                            for e in self.events(m)), self.events(m))
        # Never paused: still at A, running, every tick kept, no gap.
        shown = self.show(sid)
        self.assertEqual(('ACTIVE', base.SITE_A_HOST), (
            shown['status'], shown['OS-EXT-SRV-ATTR:host']))
        at_a.wait_advancing(ticks=20, timeout=120)
        counters = [t.counter for t in at_a.read_ring()]
        self.assertEqual(list(range(counters[0], counters[-1] + 1)),
                         counters)
        gap = max(b[0] - a[0] for a, b in zip(poll.changes,
                                              poll.changes[1:]))
        print('refused: longest silence of the guest %.3f s' % gap)
        self.assertLess(gap, 1.0)
        # Shown by the API and the client.
        shown = json.loads(self.openstack('fedex', 'migration', 'show',
                                          m['id'], '-f', 'json'))
        self.assertIsNone(shown['convergence'][sid]['means'])

    def test_busy_guest_auto_converges_within_the_budget(self):
        self._converges(DIRTY, 'auto-converge')

    def test_idle_guest_converges(self):
        self._converges(0, 'pre-copy')

    def _converges(self, dirty, means):
        sid = self.boot_image('fedex-conv-%d-%s' % (dirty, self.id_),
                              self.guest_image(dirty))
        image = '%s_disk' % sid
        self.reader('site-a', image).wait_advancing(ticks=20, timeout=180)
        m = self.ready(sid, 'auto-converge')
        poll_a, poll_b = (
            guest_reader.PollerProcess(self.sandbox.site(site).conf, 'vms',
                                       image) for site in ('site-a', 'site-b'))
        self.addCleanup(poll_a.stop)
        self.addCleanup(poll_b.stop)
        began = time.monotonic()
        self.cutover(m)
        self.dep.wait(lambda: self.state(m) == states.COMPLETED, 900,
                      'the cutover completed')
        took = time.monotonic() - began
        poll_a.stop()
        poll_b.stop()
        event = self.verdict(m)
        v = event['details']
        print('%s: %s' % (means, event['message']))
        self.assertEqual(means, v['means'])
        if dirty:
            self.assertGreater(v['measured']['dirty_rate'], RATE_CAP)
        else:
            # Page-sampling reads an idle guest (ticking) at 0-4 MiB/s.
            self.assertLess(v['measured']['dirty_rate'], RATE_CAP / 2)
        last_a = poll_a.changes[-1][1]
        left = poll_a.changes[-1][0]
        arrived = [t for t, c in poll_b.changes if c > last_a]
        self.assertTrue(arrived, 'no tick at B after %d' % last_a)
        pause = arrived[0] - left
        at_b = self.reader('site-b', image)
        at_b.wait_advancing(ticks=20, timeout=120)
        counters = [t.counter for t in at_b.read_ring()]
        self.assertEqual(list(range(counters[0], counters[-1] + 1)),
                         counters)
        reports = {e['details']['event']: e for e in db.events(
            self.ctx, {'migration_id': m['id']})
            if (e['details'] or {}).get('event')}
        # The copy: from nova_fedex's 'migrating' (sent as it starts) to the
        # pause it noted (sent later, with its time).
        began_copy = db.utcfromiso(reports['migrating']['created_at'])
        copied = (reports['paused_at_destination']['details']['at'] -
                  began_copy.replace(tzinfo=datetime.timezone.utc).timestamp())
        paused = reports['resumed']['details']['pause_seconds']
        # A throttled guest ticks slowly: its ticks' rhythm at A in the
        # last seconds before it left (its tick's period, 0.1 s, when not throttled).
        rhythm = max(b[0] - a[0] for a, b in zip(poll_a.changes[-6:-1],
                                                 poll_a.changes[-5:]))
        print('%s: pause seen from outside %.3f s (ticks at A every %.3f s '
              'before it), nova_fedex\'s pause %.3f s (forecast %.2f s, '
              'budget %d s); memory copy %.1f s (forecast %.1f s); cutover '
              '%.1f s' % (means, pause, rhythm, paused,
                          v['forecast']['pause_seconds'], BUDGET,
                          copied, v['forecast']['copy_seconds'], took))
        self.assertLessEqual(paused, BUDGET)
        # From outside, the silence beyond the guest's own (throttled)
        # rhythm.
        self.assertLessEqual(pause - rhythm, BUDGET)
