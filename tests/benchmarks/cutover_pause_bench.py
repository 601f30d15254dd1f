#!/usr/bin/env python3
"""The guest's pause at a FedEx cutover, against a plain live migration.

Run by hand against a running mini-cloud (``fedex-sandbox up --openstack``),
one run for all figures:

    FEDEX_SANDBOX_DIR=... FEDEX_SANDBOX_BASE_PORT=... \\
        .tox/openstack/bin/python tests/benchmarks/cutover_pause_bench.py \\
        [--deltas-mib 1,8] [--wan-mbit 100] [--repeat 3]

It runs as the Nova cutover test does (tests/scenarios/test_nova_cutover:
its own fedex-api, conductor with ``compute_driver = nova`` and terminals)
and, for the same tiny guest (counter every 20 ms on its rbd disk: an
image of its own, ``PAUSE_TICK_MS``; the default guest ticks every 100 ms):

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
import faulthandler
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from fedex_manager.flows.tasks import cutover as cutover_tasks  # noqa: E402
from fedex_sandbox.services import guest as guest_mod  # noqa: E402
from fedex_sandbox.services import guest_reader  # noqa: E402
from tests.openstack import test_cutover_nova as base  # noqa: E402
from tests.scenarios import test_nova_cutover  # noqa: E402

ARGS = None
# The guest's tick: the pause seen from outside is timed to one tick.
PAUSE_TICK_MS = 20

# Where the injected data goes: past the guest's tick ring.
DATA_OFFSET = 2 << 20


class CutoverPauseBench(test_nova_cutover.TestNovaCutover):

    def test_pause(self):
        deltas = [float(x) for x in ARGS.deltas_mib.split(',')]
        plains, pauses = [], {mib: [] for mib in deltas}
        # Rounds of (plain, each delta): the plain migration varies by
        # 170 ms from run to run (2026-11-24), so one of each says little.
        for i in range(ARGS.repeat):
            plain = self.plain(i)
            print(json.dumps(plain), flush=True)
            plains.append(plain['pause_ms'])
            for mib in deltas:
                done = self.cutover(mib, plain['pause_ms'], i)
                print(json.dumps(done), flush=True)
                pauses[mib].append(done['pause_ms'])
        plain_ms = statistics.median(plains)
        summary = {'kind': 'summary', 'runs': ARGS.repeat,
                   'plain_pause_ms': plains,
                   'plain_median_ms': plain_ms}
        for mib in deltas:
            got = [p for p in pauses[mib] if p is not None]
            median = statistics.median(got) if got else None
            goal = plain_ms + _wan_ms(mib) + 100
            summary['fedex_%g_mib' % mib] = {
                'pause_ms': pauses[mib], 'median_ms': median,
                'goal_ms': round(goal),
                'goal_met': median is not None and median <= goal}
        print(json.dumps(summary), flush=True)

    def start_terminals(self, devices=3):
        # Blank devices for every cutover of the run: a migration's devices
        # are erased only by its clean-up, after it (the second cutover
        # of 18:05 was refused, "no blank device at a terminal").
        super().start_terminals(devices * ARGS.repeat *
                                len(ARGS.deltas_mib.split(',')))

    def done_with(self, sid):
        """Delete a measured server now when the run measures several."""
        if ARGS.repeat > 1:
            self.openstack('server', 'delete', '--wait', sid, gone_ok=True)

    # --- helpers --------------------------------------------------------------

    def poll(self, site, image):
        """The guest's counter polled every 5 ms, in a process of its own.

        Never librbd from a thread of this process: polling from a thread
        while the main thread set up the next guest crashed it (SIGSEGV).
        """
        poller = guest_reader.PollerProcess(self.sandbox.site(site).conf,
                                            'vms', image)
        self.addCleanup(poller.stop)
        return poller

    def downtime_ms(self, host, sid):
        domain = self.show(sid)['OS-EXT-SRV-ATTR:instance_name']
        job = self.host(host).virsh('domjobinfo', domain, '--completed',
                                    check=False)
        found = re.search(r'Total downtime:\s+(\d+)', job)
        return int(found.group(1)) if found else None

    # --- the reference ----------------------------------------------------------

    def plain(self, run=0):
        server = self.boot('bench-plain-%s-%d' % (self.id_, run),
                           self.guest_image(tick_ms=PAUSE_TICK_MS))
        sid = server['id']
        reader = self.reader('site-a', '%s_disk' % sid)
        reader.wait_advancing(ticks=20, timeout=180)
        poller = self.poll('site-a', '%s_disk' % sid)
        time.sleep(1)
        began = time.monotonic()
        self.cloud.openstack_plain(
            '--os-compute-api-version', '2.latest', 'server', 'migrate',
            '--live-migration', '--host', 'site-a-h2', '--wait', sid)
        took = time.monotonic() - began
        reader.wait_advancing(ticks=20, timeout=120)
        guest_gap = reader.largest_guest_gap(reader.read_ring())
        time.sleep(1)
        poller.stop()
        gap, before = poller.largest_gap()
        downtime = self.downtime_ms('site-a-h2', sid)
        self.done_with(sid)
        return {'kind': 'plain', 'from': 'site-a-h1', 'to': 'site-a-h2',
                'pause_ms': round(gap * 1000),
                'counter_before_pause': before,
                'libvirt_downtime_ms': downtime,
                'guest_clock_gap_ms': _ms(guest_gap),
                'cli_seconds': round(took, 1)}

    # --- a FedEx cutover ----------------------------------------------------------

    def cutover(self, mib, plain_ms, run=0):
        server = self.boot('bench-fedex-%s-%g-%d' % (self.id_, mib, run),
                           self.guest_image(tick_ms=PAUSE_TICK_MS))
        sid = server['id']
        image = '%s_disk' % sid
        at_a = self.reader('site-a', image)
        at_a.wait_advancing(ticks=20, timeout=180)
        poll_a = self.poll('site-a', image)
        poll_b = self.poll('site-b', image)
        injected = {}
        # The cutover runs in the openstack client's process; this one's
        # main thread writes the final delta's data (librbd in one thread).
        began = time.monotonic()
        migrating = self.migrate_async(sid)

        def started():
            if migrating.poll() is not None:
                raise AssertionError('openstack server migrate ended before '
                                     'the cutover started: %s' %
                                     migrating.communicate()[1][-2000:])
            found = [x for x in self.dep_migrations(sid)
                     if any(e.startswith(cutover_tasks.NOVA_REQUESTED)
                            for e in self.events(x))]
            return found and found[0]
        # Once the catch-up rounds are over and the conductor has asked
        # Nova for the live migration (Nova takes seconds to begin the
        # memory copy): data for the final delta. Written at 'nova:
        # migrating' it came too late for a fast copy (2026-11-24 17:07:
        # 128 KiB changed, not 1 MiB); at CUTTING_OVER, the cutover's own
        # last catch-up round carried it (17:32).
        data = os.urandom(int(mib * (1 << 20)))
        assert DATA_OFFSET >= (guest_mod.RING_OFFSET +
                               guest_mod.SLOTS * guest_mod.SLOT)
        import rbd
        with rbd.Image(self.pool('site-a', 'vms').ioctx, image) as img:
            assert DATA_OFFSET + len(data) <= img.size()
            self.dep.wait(started, 1500, 'the cutover to start',
                          interval=0.05)
            t0 = time.monotonic()
            img.write(data, DATA_OFFSET)
            img.flush()
            injected['seconds'] = time.monotonic() - t0
        out, err = migrating.communicate(timeout=1500)
        took = time.monotonic() - began
        self.assertEqual(0, migrating.returncode, 'openstack server migrate: '
                         '%s%s' % (out[-2000:], err[-3000:]))
        at_b = self.reader('site-b', image)
        at_b.wait_advancing(ticks=20, timeout=120)
        # The guest's own clock stops while it is paused: a gap in it is
        # time it ran without its writes landing (a lock, a slow disk).
        guest_gap = at_b.largest_guest_gap(at_b.read_ring())
        time.sleep(1)
        poll_a.stop()
        poll_b.stop()
        # nova_fedex's comparison after the resume reports after COMPLETED.
        self.dep.wait(lambda: any(
            'nova: final_state_' in e
            for e in self.events(self.dep_migrations(sid)[0])), 300,
            'the final-state comparison')
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
        # The wall clock (one host) of the resume at B, to the first tick.
        wall_b = time.time() - (time.monotonic() - arrived[0]) \
            if arrived else None
        delta = details.get('delta_applied', {})
        resumed = details.get('resumed', {})
        downtime = self.downtime_ms(base.SITE_B_HOST, sid)
        goal_ms = plain_ms + _wan_ms(mib) + 100
        pause_ms = round(pause * 1000) if pause is not None else None
        after_copy = resumed.get('pause_seconds')
        self.done_with(sid)
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
            'guest_clock_gap_ms': _ms(guest_gap),
            'delta_changed_bytes': delta.get('changed'),
            # Whether the injected data reached the final delta at all.
            'injected_in_delta': (delta.get('changed') or 0) >= mib * (
                1 << 20),
            'pause_work_trigger': details.get(
                'paused_at_destination', {}).get('trigger'),
            'delta_wire_bytes': delta.get('wire'),
            'delta_ms': round(delta['seconds'] * 1000)
            if delta.get('seconds') is not None else None,
            # The delta's parts: the blocks (flushed at B), the group commit
            # (B's snapshots, their release).
            'delta_blocks_ms': _ms(delta.get('blocks_seconds')),
            'delta_commit_ms': _ms(delta.get('commit_seconds')),
            # nova_fedex's whole-image comparison after the resume.
            'final_state': ([k for k in details
                             if k.startswith('final_state_')] or [None])[0],
            'final_state_check_s': details.get(
                'final_state_checked', {}).get('seconds'),
            # From Nova seeing libvirt's COMPLETED to the guest resumed at B.
            'copy_end_to_resumed_ms': round(after_copy * 1000)
            if after_copy is not None else None,
            # From nova_fedex resuming the guest at B to its first tick seen
            # there (the guest's first write after the resume).
            'resume_to_first_tick_ms': _ms(wall_b - resumed['at'])
            if wall_b is not None and resumed.get('at') else None,
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
            # Inside the pause, before the delta: the source's vCPUs seen
            # stopped (nova_fedex checks); then the resume call itself.
            'wait_source_ms': _ms(resumed.get('wait_source_seconds')),
            'resume_ms': _ms(resumed.get('resume_seconds')),
            'state': m['state']}

    def migrate_async(self, server_id):
        """``openstack server migrate --fedex ... --wait``, not waited for."""
        proc = subprocess.Popen(
            [os.path.join(self.cloud.venv, 'bin', 'openstack'), 'server',
             'migrate', '--live-migration', '--fedex', '--host',
             base.SITE_B_HOST, '--cutover', 'automatic', '--wait',
             server_id], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL, text=True,
            env=dict(os.environ, **self.cloud.client_env()))

        def stop():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        self.addCleanup(stop)
        return proc

    def dep_migrations(self, sid):
        from fedex_manager.db import api as db
        found = db.list_(self.ctx, 'migration', sort_key='created_at',
                         sort_dir='desc')
        return [x for x in found
                if any(s['server_id'] == sid for s in x['servers'])]

    def event_rows(self, m):
        from fedex_manager.actions import events
        return events.events_query(self.ctx, migration=m['id'], limit=1000)


def _wan_ms(mib):
    """What ``mib`` MiB take over the WAN the goal assumes."""
    return mib * (1 << 20) * 8 / (ARGS.wan_mbit * 1e6) * 1000


def _ms(seconds):
    return round(seconds * 1000) if seconds is not None else None


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
    parser.add_argument('--repeat', type=int, default=1,
                        help='rounds of (plain, each delta); a summary line '
                        'with the medians ends the output')
    ARGS = parser.parse_args()
    # A crash says where (the SIGSEGV of 2026-11-24 said nothing).
    faulthandler.enable()

    def interrupted(signum, frame):
        raise KeyboardInterrupt('signal %d' % signum)
    signal.signal(signal.SIGTERM, interrupted)
    case = CutoverPauseBench('test_pause')
    try:
        result = unittest.TextTestRunner(stream=sys.stderr, verbosity=2).run(
            unittest.TestSuite([case]))   # (setUpClass: the suite's)
        return 0 if result.wasSuccessful() else 1
    finally:
        # An interrupted run skips the test's clean-ups: its servers, its
        # fedex-api, conductor and terminals (the cloud's own fedex-api
        # back), its polling processes. Run what is left, each once.
        while getattr(case, '_cleanups', None):
            function, args, kwargs = case._cleanups.pop()
            try:
                function(*args, **kwargs)
            except BaseException as e:
                print('clean-up %s: %s' % (getattr(
                    function, '__qualname__', function), e), file=sys.stderr)


if __name__ == '__main__':
    sys.exit(main())
