#!/usr/bin/env python3
"""A wave of servers against one server's migration, in the same run.

Run by hand against a running mini-cloud (``fedex-sandbox up --openstack``),
under the mini-cloud's lock:

    FEDEX_SANDBOX_DIR=/var/tmp/fedex-dev FEDEX_SANDBOX_BASE_PORT=20000 \\
        flock /tmp/minicloud.lock .venv/bin/python -u \\
        tests/benchmarks/wave_bench.py [--servers 8] \\
        [--max-parallel-cutovers 2]

It runs as tests/openstack/test_wave.py does (its own fedex-api, a
conductor with ``compute_driver = nova``, the two terminals; tiny guests,
m1.mini, booted from the Glance image ``guest-wave``: 48 MiB of data, so
the root disks are clones holding it): first ONE server alone
(``openstack server migrate --live-migration --fedex --host site-b-h1
--cutover automatic --wait``), then ``--servers`` servers as one wave
(``openstack fedex wave create ... --cutover automatic --wait``; the first
server with one attached volume, the second with two). It prints one JSON
line per migration and a summary:

* wall time: the wave's command to its last COMPLETED, against the one
  server's (goal: at most 2x);
* device bytes: the wave's shipment against the one server's (goal: at
  most 1.15x; the clones' common chunks stored once);
* cutovers: each one's start and end (the migrations' state events),
  the pairs that overlapped, the most at once (at most
  ``--max-parallel-cutovers``);
* every disk bit-exact (``rbd export | sha256sum``, A's final image
  against B's state at the resume) and every guest counting at B.
"""

import argparse
import faulthandler
import itertools
import json
import os
import signal
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from fedex_manager.db import api as db  # noqa: E402
from fedex_manager import waves  # noqa: E402
from lsrp.server import records  # noqa: E402
from tests.openstack import test_cutover_nova as nova_t  # noqa: E402
from tests.openstack import test_wave  # noqa: E402

ARGS = None


class WaveBench(test_wave.TestWave):

    CONDUCTOR_OPTIONS = {}

    def start_terminals(self, devices=3):
        # A shipment of its own for the one server, one for the wave.
        super().start_terminals(devices * 2)

    def migration_of(self, sid):
        return [x for x in db.list_(self.ctx, 'migration')
                if any(s['server_id'] == sid for s in x['servers'])][0]

    def device_bytes_of(self, m):
        ships = {v['shipment_id'] for v in m['volumes'] if v['shipment_id']}
        return sum(waves.device_bytes(self.ctx, db.get(self.ctx, 'shipment',
                                                       s)) or 0
                   for s in ships)

    def exact_and_counting(self, sid, m, volume_ids=()):
        final = 'fedex-final-%s' % m['id'][:8]
        specs = ['vms/%s_disk' % sid] + ['volumes/volume-%s' % v
                                         for v in volume_ids]
        equal = all(
            self.sandbox.site('site-a').export_sha256(spec) ==
            self.sandbox.site('site-b').export_sha256(
                records.record_spec(spec, final)) for spec in specs)
        r = self.reader('site-b', '%s_disk' % sid)
        try:
            r.wait_advancing(ticks=20, timeout=120)
            counters = [t.counter for t in r.read_ring()]
            counting = counters == list(range(counters[0],
                                              counters[-1] + 1))
        except AssertionError:
            counting = False
        return equal, counting

    def test_wave(self):
        n = ARGS.servers
        test_wave.ensure_wave_image(self.cloud, self.dep.work)
        # (The volumes first: their clean-ups run after the servers'.)
        vids = [self.volume('wb-v%d-%s' % (i, self.id_)) for i in range(3)]
        sids = self.boot_many(['fedex-wb%d-%s' % (i, self.id_)
                               for i in range(n + 1)])
        alone, members = sids[0], sids[1:]
        volumes = {members[0]: vids[:1], members[1]: vids[1:]}
        for sid, vids in volumes.items():
            for vid in vids:
                self.cloud.openstack_plain('server', 'add', 'volume', sid,
                                           vid)
                self.wait_volume(vid, 'in-use')
        for sid in sids:
            self.reader('site-a', '%s_disk' % sid).wait_advancing(
                ticks=20, timeout=300)

        # One server alone, as an operator moves one today.
        began = time.monotonic()
        code, out, err = self.run_cli(
            'server', 'migrate', '--live-migration', '--fedex', '--host',
            nova_t.SITE_B_HOST, '--cutover', 'automatic', '--wait', alone,
            timeout=3600)
        one_seconds = time.monotonic() - began
        self.assertEqual(0, code, out + err[-3000:])
        m1 = self.migration_of(alone)
        one_bytes = self.device_bytes_of(m1)
        equal, counting = self.exact_and_counting(alone, m1)
        print(json.dumps({'kind': 'one', 'server': alone,
                          'state': m1['state'],
                          'seconds': round(one_seconds, 1),
                          'device_bytes': one_bytes, 'exact': equal,
                          'counting': counting}), flush=True)

        # The wave.
        argv = ['fedex', 'wave', 'create', '--host', nova_t.SITE_B_HOST,
                '--cutover', 'automatic', '--max-parallel-cutovers',
                str(ARGS.max_parallel_cutovers), '--wait', '-f', 'json']
        for sid in members:
            argv += ['--server', sid]
        began = time.monotonic()
        code, out, err = self.run_cli(*argv, timeout=7200)
        wave_seconds = time.monotonic() - began
        self.assertEqual(0, code, out + err[-3000:])
        shown = json.loads(out)
        by_server = {s['server_id']: s for s in shown['servers']}
        results = []
        for sid in members:
            m = db.get(self.ctx, 'migration', by_server[sid]['migration_id'])
            equal, counting = self.exact_and_counting(
                sid, m, volumes.get(sid, ()))
            runs = by_server[sid]['cutovers']
            results.append({'kind': 'wave-server', 'server': sid,
                            'state': m['state'], 'exact': equal,
                            'counting': counting, 'cutovers': runs})
            print(json.dumps(results[-1]), flush=True)
        spans = test_wave.intervals(shown)
        overlapping = sum(
            1 for (a, b), (c, d) in itertools.combinations(spans, 2)
            if a < (d or a) and c < (b or c))
        summary = {
            'kind': 'summary', 'servers': n,
            'max_parallel_cutovers': ARGS.max_parallel_cutovers,
            'one_server_seconds': round(one_seconds, 1),
            'wave_seconds': round(wave_seconds, 1),
            'wall_ratio': round(wave_seconds / one_seconds, 2),
            'one_server_device_bytes': one_bytes,
            'wave_device_bytes': shown['device_bytes'],
            'device_ratio': round(shown['device_bytes'] / float(one_bytes),
                                  3) if one_bytes and
            shown['device_bytes'] else None,
            'cutover_pairs_overlapping': overlapping,
            'most_cutovers_at_once': test_wave.most_at_once(spans),
            'all_completed': all(r['state'] == 'COMPLETED'
                                 for r in results),
            'all_exact': all(r['exact'] for r in results),
            'all_counting': all(r['counting'] for r in results)}
        summary['goals'] = {
            'wall_at_most_2x': summary['wall_ratio'] <= 2.0,
            'device_bytes_at_most_1.15x': summary['device_ratio'] is not None
            and summary['device_ratio'] <= 1.15,
            'two_cutovers_overlapping': overlapping >= 1}
        print(json.dumps(summary), flush=True)


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--servers', type=int, default=8)
    parser.add_argument('--max-parallel-cutovers', type=int, default=2)
    ARGS = parser.parse_args()
    faulthandler.enable()

    def interrupted(signum, frame):
        raise KeyboardInterrupt('signal %d' % signum)
    signal.signal(signal.SIGTERM, interrupted)
    case = WaveBench('test_wave')
    try:
        result = unittest.TextTestRunner(stream=sys.stderr, verbosity=2).run(
            unittest.TestSuite([case]))
        return 0 if result.wasSuccessful() else 1
    finally:
        # An interrupted run skips the test's clean-ups (servers, volumes,
        # its fedex-api, conductor and terminals): run what is left.
        while getattr(case, '_cleanups', None):
            function, args, kwargs = case._cleanups.pop()
            try:
                function(*args, **kwargs)
            except BaseException as e:
                print('clean-up %s: %s' % (getattr(
                    function, '__qualname__', function), e), file=sys.stderr)


if __name__ == '__main__':
    sys.exit(main())
