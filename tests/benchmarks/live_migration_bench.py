#!/usr/bin/env python3
"""The floor a cutover is compared to: a plain live migration inside site A.

Run by hand against a running mini-cloud (``fedex-sandbox up --openstack``):

    FEDEX_SANDBOX_DIR=... .venv/bin/python tests/benchmarks/live_migration_bench.py \
        [--runs 3] [--volume]

Boots the tiny guest on site-a-h1 through the real ``openstack`` client,
then live-migrates it between site-a-h1 and site-a-h2 (one Ceph cluster:
memory only) ``--runs`` times. For each run it reports, as one JSON line:
the guest's pause seen from outside (the longest silence of its counter on
its RBD disk, polled through librbd every 5 ms), the same seen by the
guest's own clock (under-reports: it stops while paused), libvirt's
downtime (``virsh domjobinfo --completed`` on the destination), and the
time from the API call to the migration's end.
"""

import argparse
import json
import os
import re
import threading
import time

import rados

from fedex_sandbox import opts as sandbox_opts
from fedex_sandbox import sandbox as sandbox_mod
from fedex_sandbox.services import guest_reader


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--runs', type=int, default=3)
    parser.add_argument('--volume', action='store_true',
                        help='Attach a site-a volume first.')
    args = parser.parse_args()
    sb = sandbox_mod.Sandbox(os.environ.get(sandbox_opts.DIR_ENV,
                                            sandbox_opts.DEFAULT_DIR))
    cloud = sb.cloud()
    hosts = {h.name: h for h in cloud.hosts}
    name = 'bench-%d' % os.getpid()
    server = cloud.openstack('server', 'create', '--flavor', 'm1.mini',
                             '--image', 'guest', '--nic', 'none',
                             '--availability-zone', 'site-a:site-a-h1',
                             '--wait', name)
    cluster = rados.Rados(conffile=sb.site('site-a').conf)
    cluster.connect()
    vol = None
    try:
        if args.volume:
            vol = cloud.openstack('volume', 'create', '--size', '1',
                                  '--type', 'site-a', 'vol-' + name)
            while cloud.openstack('volume', 'show',
                                  vol['id'])['status'] != 'available':
                time.sleep(2)
            cloud.openstack_plain('server', 'add', 'volume', server['id'],
                                  vol['id'])
        reader = guest_reader.GuestReader(cluster.open_ioctx('vms'),
                                          '%s_disk' % server['id'])
        reader.wait_advancing(ticks=20, timeout=300)
        info = cloud.openstack('server', 'show', server['id'])
        domain = info['OS-EXT-SRV-ATTR:instance_name']
        source = info['OS-EXT-SRV-ATTR:host']
        for run in range(args.runs):
            dest = 'site-a-h2' if source == 'site-a-h1' else 'site-a-h1'
            poller = guest_reader.Poller(reader)
            done = threading.Event()
            thread = threading.Thread(target=poller.poll_until,
                                      args=(done.is_set, 900))
            thread.start()
            time.sleep(1)
            begin = time.monotonic()
            cloud.openstack_plain('--os-compute-api-version', '2.latest',
                                  'server', 'migrate', '--live-migration',
                                  '--host', dest, '--wait', server['id'])
            took = time.monotonic() - begin
            reader.wait_advancing(ticks=20, timeout=120)
            time.sleep(1)
            done.set()
            thread.join()
            job = hosts[dest].virsh('domjobinfo', domain, '--completed',
                                    check=False)
            downtime = re.search(r'Total downtime:\s+(\d+)', job)
            gap, before = poller.largest_gap()
            ticks = reader.read_ring()
            print(json.dumps({
                'run': run + 1, 'from': source, 'to': dest,
                'volume': bool(vol),
                'pause_outside_ms': round(gap * 1000) if gap else None,
                'counter_before_pause': before,
                'pause_guest_clock_ms': round(
                    (reader.largest_guest_gap(ticks) or 0) * 1000),
                'libvirt_downtime_ms': int(downtime.group(1))
                if downtime else None,
                'cli_seconds': round(took, 1)}), flush=True)
            source = dest
    finally:
        if vol:
            cloud.openstack_plain('server', 'remove', 'volume',
                                  server['id'], vol['id'], check=False)
        cloud.openstack_plain('server', 'delete', '--wait', server['id'],
                              check=False)
        if vol:
            # A volume still detaching cannot be deleted: wait for the
            # detach to finish (the server's deletion detaches it too).
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline and cloud.openstack(
                    'volume', 'show', vol['id'])['status'] not in (
                    'available', 'error'):
                time.sleep(2)
            cloud.openstack_plain('volume', 'delete', vol['id'], check=False)
        cluster.shutdown()


if __name__ == '__main__':
    main()
