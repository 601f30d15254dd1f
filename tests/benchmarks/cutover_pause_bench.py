#!/usr/bin/env python3
"""The guest's pause at a FedEx cutover, against a plain live migration.

Run by hand against a running mini-cloud (``fedex-sandbox up --openstack``),
one run for all figures:

    FEDEX_SANDBOX_DIR=... FEDEX_SANDBOX_BASE_PORT=... \\
        .tox/openstack/bin/python tests/benchmarks/cutover_pause_bench.py \\
        [--deltas-mib 1,8] [--wan-mbit 100]

It runs as the Nova cutover test does (tests/openstack/test_cutover_nova:
its own fedex-api, conductor with ``compute_driver = nova`` and terminals)
and, for the same tiny guest (counter every 20 ms on its rbd disk):

1. the reference: a plain, memory-only live migration between the two
   site-A hosts (one Ceph cluster);
2. for each final delta size: a new guest at site A, seeded, shipped and
   caught up by the manager, then cut over to site-b-h1 by
   ``openstack server migrate --live-migration --fedex``; once nova_fedex
   reports ``migrating`` (its final-delta connections are open, libvirt
   starts the memory copy) this script writes that many MiB of random data
   to the source image (outside the guest's tick ring), so the final delta
   carries them.

For each it prints one JSON line: the guest's pause seen from outside (the
last new tick at the source to the first newer one at the destination,
librbd polled every 5 ms), libvirt's downtime (``virsh domjobinfo
--completed`` at the destination: the memory stop-and-copy), and for the
cutovers nova_fedex's own parts: Nova noticing the end of the copy, the
final delta (bytes changed, bytes on the wire, seconds), the resume; and
the goal check ``pause <= plain + delta / WAN rate + 100 ms``.

The terminals of the test deployment talk over loopback, not through the
emulated WAN (``fedex-sandbox wan-up``): ``--wan-mbit`` is the rate the goal
is computed with (the sandbox's default, 100 Mbit/s).
"""

import argparse
import json
import os
import re
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from lsrp.sandbox.services import guest as guest_mod  # noqa: E402
from lsrp.sandbox.services import guest_reader  # noqa: E402
from tests.openstack import test_cutover_nova as base  # noqa: E402

ARGS = None
# Where the injected data goes: past the guest's tick ring.
DATA_OFFSET = 2 << 20


class CutoverPauseBench(base.TestNovaCutover):

    def test_pause(self):
        deltas = [float(x) for x in ARGS.deltas_mib.split(',')]
        plain = self.plain()
        print(json.dumps(plain), flush=True)
        for mib in deltas:
            print(json.dumps(self.cutover(mib, plain['pause_ms'])),
                  flush=True)

    # --- helpers --------------------------------------------------------------

    def poll(self, reader, stop):
        poller = guest_reader.Poller(reader)

        def run():
            # B's image appears with the import: poll once it is there.
            while not stop.is_set():
                try:
                    return poller.poll_until(stop.is_set, 3000)
                except Exception:
                    time.sleep(0.2)
        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return poller, thread

    def downtime_ms(self, host, sid):
        domain = self.show(sid)['OS-EXT-SRV-ATTR:instance_name']
        job = self.host(host).virsh('domjobinfo', domain, '--completed',
                                    check=False)
        found = re.search(r'Total downtime:\s+(\d+)', job)
        return int(found.group(1)) if found else None

    # --- the reference ----------------------------------------------------------

    def plain(self):
        server = self.boot('bench-plain-%s' % self.id_)
        sid = server['id']
        reader = self.reader('site-a', '%s_disk' % sid)
        reader.wait_advancing(ticks=20, timeout=180)
        stop = threading.Event()
        poller, thread = self.poll(reader, stop)
        time.sleep(1)
        began = time.monotonic()
        self.cloud.openstack_plain(
            '--os-compute-api-version', '2.latest', 'server', 'migrate',
            '--live-migration', '--host', 'site-a-h2', '--wait', sid)
        took = time.monotonic() - began
        reader.wait_advancing(ticks=20, timeout=120)
        time.sleep(1)
        stop.set()
        thread.join()
        gap, before = poller.largest_gap()
        return {'kind': 'plain', 'from': 'site-a-h1', 'to': 'site-a-h2',
                'pause_ms': round(gap * 1000),
                'counter_before_pause': before,
                'libvirt_downtime_ms': self.downtime_ms('site-a-h2', sid),
                'cli_seconds': round(took, 1)}

    # --- a FedEx cutover ----------------------------------------------------------

    def cutover(self, mib, plain_ms):
        server = self.boot('bench-fedex-%s-%g' % (self.id_, mib))
        sid = server['id']
        image = '%s_disk' % sid
        at_a = self.reader('site-a', image)
        at_a.wait_advancing(ticks=20, timeout=180)
        stop = threading.Event()
        poll_a, thread_a = self.poll(at_a, stop)
        poll_b, thread_b = self.poll(self.reader('site-b', image), stop)
        injected = {}

        def inject():
            # Once the cutover's last round is done and libvirt is about to
            # copy the memory: data for the final delta.
            def migrating():
                found = [x for x in self.dep_migrations(sid)
                         if any('nova: migrating' in e
                                for e in self.events(x))]
                return found and found[0]
            self.dep.wait(migrating, 1500, 'the cutover to start',
                          interval=0.05)
            data = os.urandom(int(mib * (1 << 20)))
            ioctx = self.pool('site-a', 'vms').ioctx
            import rbd
            t0 = time.monotonic()
            with rbd.Image(ioctx, image) as img:
                assert DATA_OFFSET + len(data) <= img.size()
                assert DATA_OFFSET >= (guest_mod.RING_OFFSET +
                                       guest_mod.SLOTS * guest_mod.SLOT)
                img.write(data, DATA_OFFSET)
                img.flush()
            injected['seconds'] = time.monotonic() - t0
        injector = threading.Thread(target=inject, daemon=True)
        injector.start()
        began = time.monotonic()
        self.migrate(sid)
        took = time.monotonic() - began
        at_b = self.reader('site-b', image)
        at_b.wait_advancing(ticks=20, timeout=120)
        time.sleep(1)
        stop.set()
        thread_a.join()
        thread_b.join()
        injector.join(10)
        m = self.dep_migrations(sid)[0]
        details = {}
        for e in self.event_rows(m):
            d = e.get('details') or {}
            if d.get('event'):
                details[d['event']] = d
        last_a = poll_a.changes[-1][1]
        left = poll_a.changes[-1][0]
        arrived = [t for t, c in poll_b.changes if c > last_a]
        pause = arrived[0] - left if arrived else None
        delta = details.get('delta_applied', {})
        resumed = details.get('resumed', {})
        downtime = self.downtime_ms(base.SITE_B_HOST, sid)
        wan_ms = mib * (1 << 20) * 8 / (ARGS.wan_mbit * 1e6) * 1000
        goal_ms = plain_ms + wan_ms + 100
        pause_ms = round(pause * 1000) if pause is not None else None
        after_copy = resumed.get('pause_seconds')
        return {
            'kind': 'fedex', 'final_delta_mib': mib,
            'injected': 'seconds' in injected and round(
                injected['seconds'], 3),
            # Wall-clock ends of the pause seen from outside, to set
            # against the nova-compute and libvirt logs of the same host.
            'last_tick_at_a': _wall(left),
            'first_tick_at_b': _wall(arrived[0]) if arrived else None,
            'pause_ms': pause_ms,
            'libvirt_downtime_ms': downtime,
            'delta_changed_bytes': delta.get('changed'),
            'delta_wire_bytes': delta.get('wire'),
            'delta_ms': round(delta['seconds'] * 1000)
            if delta.get('seconds') is not None else None,
            # From Nova seeing libvirt's COMPLETED to the guest resumed at B.
            'copy_end_to_resumed_ms': round(after_copy * 1000)
            if after_copy is not None else None,
            'resume_and_checks_ms': round(
                (after_copy - delta['seconds']) * 1000)
            if after_copy is not None and delta.get('seconds') is not None
            else None,
            # The rest: the copy's end until Nova's monitor (0.5 s polls)
            # sees it.
            'unaccounted_ms': round(pause_ms - (downtime or 0) -
                                    after_copy * 1000)
            if None not in (pause_ms, after_copy) else None,
            'goal_ms': round(goal_ms), 'goal_met': pause_ms is not None and
            pause_ms <= goal_ms,
            'api_to_completed_s': round(took, 1),
            'state': m['state']}

    def dep_migrations(self, sid):
        from lsrp.manager.db import api as db
        found = db.list_(self.ctx, 'migration', sort_key='created_at',
                         sort_dir='desc')
        return [x for x in found
                if any(s['server_id'] == sid for s in x['servers'])]

    def event_rows(self, m):
        from lsrp.manager import actions
        return actions.events_query(self.ctx, migration=m['id'], limit=1000)


def _wall(monotonic):
    """A time.monotonic() reading as UTC wall-clock text (ms)."""
    import datetime

    when = time.time() - (time.monotonic() - monotonic)
    return datetime.datetime.fromtimestamp(
        when, datetime.timezone.utc).strftime('%H:%M:%S.%f')[:-3]


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--deltas-mib', default='1,8')
    parser.add_argument('--wan-mbit', type=float, default=100)
    ARGS = parser.parse_args()
    suite = unittest.TestSuite([CutoverPauseBench('test_pause')])
    result = unittest.TextTestRunner(stream=sys.stderr,
                                     verbosity=2).run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == '__main__':
    sys.exit(main())
