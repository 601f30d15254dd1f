#!/usr/bin/env python3
"""Catch-up over the emulated WAN vs rbd export-diff | tcp | rbd import-diff.

    python tests/benchmarks/catchup_bench.py [--rate-mbit 100] [--delta-mib 512]

Same image, same snapshots, same link (veth + tbf, through the same relay),
same run. Prints:
  * bytes on the wire for a delta half of which compresses, vs the size of
    the ``rbd export-diff`` stream (target <= 0.6);
  * the same for a delta half of whose content the destination already has
    (target <= 0.3);
  * wall time vs ``rbd export-diff | tcp | rbd import-diff`` (target <= 0.7);
  * the rate cap: measured rate vs the cap (target within 5 %).
Both results are checked bit-exact with rbd export | sha256sum.
Needs the sandbox up (fedex-sandbox up); makes and removes its own WAN.
"""

import argparse
import asyncio
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from fedex_sandbox import opts as sandbox_opts
from fedex_sandbox import sandbox as sandbox_mod
from fedex_sandbox import wan
from lsrp import catchup
from lsrp.device import export
from lsrp.device import importer
from lsrp.device import keystore
from lsrp.rbd import Cluster
from lsrp.server import service
from lsrp import tls

MiB = 1 << 20
# Ports of the sandbox's range for tests' own use (+600..+999).
PORT_OFFSET, RAW_PORT_OFFSET = 660, 661
TEXT = b'the quick brown fox jumps over the lazy dog 0123456789\n'


class Bench(object):

    def __init__(self, args):
        self.args = args
        self.sb = sandbox_mod.Sandbox(os.environ.get(
            sandbox_opts.DIR_ENV, sandbox_opts.DEFAULT_DIR))
        self.a, self.b = self.sb.site('site-a'), self.sb.site('site-b')
        self.work = tempfile.mkdtemp(prefix='fedex-cbench-', dir='/var/tmp')
        self.name = 'cbench-%d' % os.getpid()
        self.spec = 'vms/' + self.name
        self.ca = Cluster(self.a.conf, self.a.keyring, site='site-a')
        self.cb = Cluster(self.b.conf, self.b.keyring, site='site-b',
                          options={'rbd_cache': 'false'})
        self.ca.connect()
        self.cb.connect()
        self.link = wan.Wan(os.path.join(self.work, 'run'), number=self.sb.wan_number(9))
        self.port = self.sb.port(PORT_OFFSET)
        self.raw_port = self.sb.port(RAW_PORT_OFFSET)

    def rbd(self, site, *args):
        return ['rbd', '-c', site.conf, '--keyring', site.keyring,
                '--no-progress'] + list(args)

    def bit_exact(self, snapshot):
        """Whether both sites hold the same image at ``snapshot``."""
        spec = '%s@%s' % (self.spec, snapshot)
        return self.a.export_sha256(spec) == self.b.export_sha256(spec)

    def write(self, offset, mib, compressible):
        with self.ca.pool('vms') as pool, pool.open_image(self.name) as img:
            for i in range(mib):
                data = ((TEXT * (MiB // len(TEXT) + 1))[:MiB]
                        if compressible else os.urandom(MiB))
                img.write(offset + i * MiB, data)

    def seed(self):
        """Image with region A random, shipped and imported at site-b."""
        half = self.args.delta_mib // 2
        size = 8 * half * MiB
        with self.ca.pool('vms') as pool:
            pool.create_image(self.name, size)
        self.write(0, half, False)                       # region A
        with self.ca.pool('vms') as pool, pool.open_image(self.name) as img:
            img.create_snapshot('seed')
        keys = keystore.FileKeyStore(os.path.join(self.work, 'keys'))
        devs = [os.path.join(self.work, 'd%d' % i) for i in range(3)]
        exporter = export.Exporter(self.ca, keys,
                                   os.path.join(self.work, 'sa'))
        shipment = exporter.export([self.spec], 'seed', devs)
        importer.Importer(self.cb, keys, os.path.join(self.work, 'sb')).run(
            devs, exporter.seal(shipment))
        shutil.rmtree(os.path.join(self.work, 'd0'))
        return shipment, half

    def export_diff_size(self, frm, to):
        out = subprocess.run(' '.join(self.rbd(
            self.a, 'export-diff', '--from-snap', frm,
            '%s@%s' % (self.spec, to), '-')) + ' | wc -c', shell=True,
            capture_output=True, text=True, check=True)
        return int(out.stdout)

    async def lsrp_round(self, shipment, frm, to, cap=None):
        streams = 1 if cap else self.args.streams
        name, ca, cert, key = self.sb.terminal('site-b')
        server = service.TerminalServer(
            name, self.cb, os.path.join(self.work, 'sb'),
            tls.server_context(ca, cert, key), self.link.root_addr, self.port)
        await server.start()
        try:
            a_name, a_ca, a_cert, a_key = self.sb.terminal('site-a')
            clients = [await catchup.TerminalClient(
                self.link.ns_addr, self.port,
                tls.client_context(a_ca, a_cert, a_key), name,
                a_name).connect() for _ in range(streams)]
            begin = time.monotonic()
            changed, wire = await catchup.DiskSender(
                clients[0], self.ca, self.spec, shipment,
                limiter=catchup.RateLimiter(cap)).send(frm, to,
                                                       extra=clients[1:])
            seconds = time.monotonic() - begin
            for client in clients:
                await client.close()
        finally:
            await server.stop()
        return changed, wire, seconds

    def reference_round(self, frm, to):
        """rbd export-diff | tcp (same relay, same link) | rbd import-diff."""
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.link.root_addr, self.raw_port))
        listener.listen(1)
        importer_proc = {}

        def receive():
            conn, _ = listener.accept()
            with conn, conn.makefile('rb') as stream:
                importer_proc['p'] = subprocess.run(
                    self.rbd(self.b, 'import-diff', '-', self.spec),
                    stdin=stream, capture_output=True)

        thread = threading.Thread(target=receive)
        thread.start()
        begin = time.monotonic()
        sender = subprocess.Popen(self.rbd(
            self.a, 'export-diff', '--from-snap', frm,
            '%s@%s' % (self.spec, to), '-'), stdout=subprocess.PIPE)
        with socket.create_connection((self.link.ns_addr, self.raw_port)) as sock:
            while True:
                data = sender.stdout.read(1 << 20)
                if not data:
                    break
                sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
            thread.join()
        sender.wait()
        listener.close()
        seconds = time.monotonic() - begin
        if importer_proc['p'].returncode != 0:
            sys.exit('import-diff failed: %s' % importer_proc['p'].stderr)
        return seconds

    def undo_at_b(self, to, back_to):
        with self.cb.pool('vms') as pool, pool.open_image(self.name) as img:
            img.rollback_to_snapshot(back_to)
            img.remove_snapshot(to)

    def run(self):
        args = self.args
        self.link.up(rate_mbit=args.rate_mbit, delay_ms=args.delay_ms,
                     port=self.port)
        # The relay forwards one port; the raw stream gets its own relay.
        relay = subprocess.Popen(
            ['ip', 'netns', 'exec', self.link.namespace, sys.executable, '-m',
             'fedex_sandbox.relay',
             '--listen', '%s:%d' % (self.link.ns_addr, self.raw_port),
             '--target', '%s:%d' % (self.link.root_addr, self.raw_port),
             '--delay-ms', str(args.delay_ms)], stdout=subprocess.DEVNULL)
        try:
            time.sleep(1)
            shipment, half = self.seed()
            # Delta 1: half random, half compressible.
            self.write(2 * half * MiB, half, False)
            self.write(3 * half * MiB, half, True)
            with self.ca.pool('vms') as p, p.open_image(self.name) as img:
                img.create_snapshot('n1')
            stream1 = self.export_diff_size('seed', 'n1')
            changed, wire, ours = asyncio.run(
                self.lsrp_round(shipment, 'seed', 'n1'))
            ok1 = self.bit_exact('n1')
            self.undo_at_b('n1', 'seed')
            ref = self.reference_round('seed', 'n1')
            ok_ref = self.bit_exact('n1')
            print('delta 1 (%d MiB, half compressible) over %d Mbit/s, %g ms:'
                  % (changed / MiB, args.rate_mbit, args.delay_ms))
            print('  bytes on the wire %.1f MiB vs rbd export-diff stream '
                  '%.1f MiB: ratio %.2f (target <= 0.6)' % (
                      wire / MiB, stream1 / MiB, wire / stream1))
            print('  wall time %.1f s vs export-diff | tcp | import-diff '
                  '%.1f s: ratio %.2f (target <= 0.7); bit-exact: %s / %s' % (
                      ours, ref, ours / ref, ok1, ok_ref))
            # Delta 2: region A again, identical; and new data, half/half.
            self._rewrite_a(half)
            self.write(4 * half * MiB, half // 2, False)
            self.write(4 * half * MiB + (half // 2) * MiB, half // 2, True)
            with self.ca.pool('vms') as p, p.open_image(self.name) as img:
                img.create_snapshot('n2')
            stream2 = self.export_diff_size('n1', 'n2')
            changed, wire, ours = asyncio.run(
                self.lsrp_round(shipment, 'n1', 'n2'))
            ok2 = self.bit_exact('n2')
            print('delta 2 (%d MiB, half already at the destination):'
                  % (changed / MiB))
            print('  bytes on the wire %.1f MiB vs rbd export-diff stream '
                  '%.1f MiB: ratio %.2f (target <= 0.3); bit-exact: %s' % (
                      wire / MiB, stream2 / MiB, wire / stream2, ok2))
            # The rate cap, below the link rate.
            cap = args.cap_mib * MiB
            self.write(6 * half * MiB, 32, False)
            with self.ca.pool('vms') as p, p.open_image(self.name) as img:
                img.create_snapshot('n3')
            changed, wire, ours = asyncio.run(
                self.lsrp_round(shipment, 'n2', 'n3', cap=cap))
            rate = wire / ours
            print('rate cap %.1f MiB/s: measured %.2f MiB/s, off by %.1f %% '
                  '(target within 5 %%)' % (cap / MiB, rate / MiB,
                                            100 * abs(rate - cap) / cap))
        finally:
            relay.terminate()
            self.link.down()

    def _rewrite_a(self, half):
        """Write region A again with the bytes it already holds."""
        with self.ca.pool('vms') as pool, pool.open_image(self.name) as img:
            for i in range(half):
                img.write(i * MiB, img.read(i * MiB, MiB))

    def cleanup(self):
        for site in (self.a, self.b):
            subprocess.run(self.rbd(site, 'snap', 'purge', self.spec),
                           capture_output=True)
            subprocess.run(self.rbd(site, 'rm', self.spec),
                           capture_output=True)
        self.ca.close()
        self.cb.close()
        shutil.rmtree(self.work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--rate-mbit', type=int, default=100)
    parser.add_argument('--delay-ms', type=float, default=0)
    parser.add_argument('--delta-mib', type=int, default=512)
    parser.add_argument('--cap-mib', type=float, default=4)
    parser.add_argument('--streams', type=int, default=2,
                        help='TCP connections for the disk.')
    bench = Bench(parser.parse_args())
    try:
        bench.run()
    finally:
        bench.cleanup()


if __name__ == '__main__':
    main()
