"""``fedex-sandbox demo``: one VM's disks moved from site-a to site-b.

The project's main job on the sandbox, end to end with the real pieces:

1. a "VM": two images at site-a, and a writer that keeps writing to them;
2. the seed: writer paused for the snapshot, export to 3 devices, seal;
3. shipping: the devices are handed to the destination terminal with a
   tracking number recorded; import at site-b, verified;
4. WAN catch-up over the emulated link (veth + tbf) while the writer goes on;
5. the final round with the writer paused (the stand-in for the cutover
   until Nova is wired in);
6. destination == source at the final snapshot, checked with ``rbd export |
   sha256sum``; a report of bytes, times, rounds and the pause.
"""

import asyncio
import json
import os
import random
import shutil
import subprocess
import threading
import time
import uuid

from fedex_sandbox import sandbox as sandbox_mod
from fedex_sandbox import wan
from lsrp import catchup
from lsrp.device import export
from lsrp.device import importer
from lsrp.device import keystore
from lsrp.protocol import client as client_mod
from lsrp.rbd import Cluster
from lsrp.server import service
from lsrp import tls

MiB = 1 << 20


def make_vm_disks(cluster, specs, disk_mib):
    """Create a VM's disks at a site, like OS images: half written.

    The first is ``disk_mib`` MiB, the next half that, and so on.
    """
    with cluster.pool('vms') as pool:
        for i, spec in enumerate(specs):
            name = spec.split('/')[1]
            size = disk_mib * MiB // (i + 1)
            pool.create_image(name, size)
            with pool.open_image(name) as img:
                for off in range(0, size // 2, 4 * MiB):
                    img.write(off, os.urandom(2 * MiB))


class Writer(threading.Thread):
    """Writes random blocks to the images at a steady rate until stopped.

    ``pause()`` returns once the writer is idle between two writes.
    """

    def __init__(self, cluster, specs, rate, block=64 << 10, span=None):
        """``span``: (start, end) bytes the writes fall in (whole image)."""
        super().__init__(daemon=True)
        self.cluster, self.specs, self.rate = cluster, specs, rate
        self.block, self.span = block, span
        self.running = threading.Event()
        self.running.set()
        self.stopped = threading.Event()
        self.idle = threading.Event()
        self.written = 0

    def pause(self):
        self.running.clear()
        self.idle.wait()

    def resume(self):
        self.running.set()

    def run(self):
        rng = random.Random(1)
        block = self.block
        images = []
        try:
            for spec in self.specs:
                pool, name = spec.split('/', 1)
                p = self.cluster.pool(pool)
                images.append((p, p.open_image(name)))
            while not self.stopped.is_set():
                if not self.running.is_set():
                    self.idle.set()
                    self.running.wait(0.1)
                    continue
                self.idle.clear()
                _, img = rng.choice(images)
                start, end = self.span or (0, img.size())
                img.write(rng.randrange(start // block, end // block) * block,
                          os.urandom(block))
                self.written += block
                time.sleep(block / self.rate)
        finally:
            self.idle.set()
            for pool, img in images:
                img.close()
                pool.close()


class Demo(object):

    def __init__(self, sandbox, disk_mib=256, write_rate=1 << 20,
                 rate_mbit=100, delay_ms=10, threshold_mib=2, out=print):
        self.sb = sandbox
        self.disk_mib = disk_mib
        self.write_rate = write_rate
        self.rate_mbit = rate_mbit
        self.delay_ms = delay_ms
        self.threshold = threshold_mib * MiB
        self.out = out
        self.id = uuid.uuid4().hex[:8]
        self.work = os.path.join(sandbox.root, 'demo-%s' % self.id)
        self.specs = ['vms/demo-%s-disk0' % self.id,
                      'vms/demo-%s-disk1' % self.id]
        self.times = {}

    def _phase(self, name, begin):
        self.times[name] = round(time.monotonic() - begin, 2)
        self.out('  %-10s %6.2f s' % (name, self.times[name]))

    def run(self):
        a, b = self.sb.site('site-a'), self.sb.site('site-b')
        self.ca = Cluster(a.conf, a.keyring, site='site-a')
        self.cb = Cluster(b.conf, b.keyring, site='site-b',
                          options={'rbd_cache': 'false'})
        self.ca.connect()
        self.cb.connect()
        self.link = wan.Wan(os.path.join(self.work, 'run'), number=self.sb.wan_number(2))
        try:
            return self._run()
        finally:
            self.link.down()
            self.ca.close()
            self.cb.close()

    def _run(self):
        out = self.out
        keys = keystore.FileKeyStore(os.path.join(self.work, 'keys'))
        out('demo %s: a VM with disks %s at site-a' % (self.id,
                                                       ', '.join(self.specs)))
        begin = time.monotonic()
        make_vm_disks(self.ca, self.specs, self.disk_mib)
        writer = Writer(self.ca, self.specs, self.write_rate)
        writer.start()
        self._phase('prepare', begin)

        # The seed: consistent snapshot with the writer paused.
        begin = time.monotonic()
        writer.pause()
        with self.ca.pool('vms') as pool:
            pool.snapshot_images([s.split('/')[1] for s in self.specs],
                                 'fedex-%s-seed' % self.id)
        writer.resume()
        devices = [os.path.join(self.work, 'source-terminal', 'usb%d' % i)
                   for i in range(3)]
        exporter = export.Exporter(self.ca, keys,
                                   os.path.join(self.work, 'state-a'))
        shipment = exporter.export(self.specs, 'fedex-%s-seed' % self.id,
                                   devices, shipment_id='fedex-%s' % self.id)
        digest = exporter.seal(shipment)
        shipped = sum(os.path.getsize(os.path.join(d, f))
                      for d in devices for f in os.listdir(d))
        self._phase('export', begin)

        # Ship: the devices travel; a tracking number is recorded.
        begin = time.monotonic()
        tracking = 'FX%010d' % random.randrange(10 ** 10)
        arrived = os.path.join(self.work, 'destination-terminal')
        shutil.move(os.path.join(self.work, 'source-terminal'), arrived)
        with open(os.path.join(self.work, 'tracking.json'), 'w') as f:
            json.dump({'shipment': shipment, 'tracking': tracking,
                       'devices': len(devices), 'manifest_digest': digest},
                      f)
        devices = [os.path.join(arrived, os.path.basename(d))
                   for d in devices]
        self._phase('ship', begin)
        out('  shipment %s, %d devices, %.1f MiB, tracking %s' % (
            shipment, len(devices), shipped / MiB, tracking))

        begin = time.monotonic()
        state_b = os.path.join(self.work, 'state-b')
        importer.Importer(self.cb, keys, state_b).run(devices, digest)
        self._phase('import', begin)

        # WAN catch-up while the VM keeps writing.
        host, port = self.link.up(self.rate_mbit, self.delay_ms,
                                  self.sb.port(sandbox_mod.DEMO_PORT))
        name, ca, cert, key = self.sb.terminal('site-b')
        a_name, a_ca, a_cert, a_key = self.sb.terminal('site-a')
        client_ctx = tls.client_context(a_ca, a_cert, a_key)

        async def connect():
            return await client_mod.TerminalClient(
                host, port, client_ctx, name, a_name).connect()

        rounds = []

        def report(r):
            rounds.append(r)
            out('  round %d: %.1f MiB changed, %.1f MiB on the wire, %.2f s,'
                ' next ~%.1f MiB' % (r.round, r.changed_bytes / MiB,
                                     r.wire_bytes / MiB, r.seconds,
                                     r.estimate / MiB))

        async def catch_up_and_cut_over():
            server = service.TerminalServer(
                name, self.cb, state_b, tls.server_context(ca, cert, key),
                self.link.root_addr, port)
            await server.start()
            try:
                engine = catchup.CatchUp(
                    self.ca, connect, shipment, self.specs,
                    'fedex-%s-seed' % self.id,
                    threshold_bytes=self.threshold, max_rounds=8,
                    report=report)
                begin = time.monotonic()
                await engine.run()
                self._phase('catch-up', begin)
                # Cutover stand-in: the writer stops, the last delta goes.
                paused = time.monotonic()
                await asyncio.to_thread(writer.pause)
                final = await engine.round(len(engine.rounds) + 1)
                self.times['pause'] = round(time.monotonic() - paused, 2)
                out('  pause      %6.2f s (the final round, writer stopped)'
                    % self.times['pause'])
                return final
            finally:
                await server.stop()

        final = asyncio.run(catch_up_and_cut_over())
        writer.stopped.set()
        writer.resume()
        writer.join()

        a, b = self.sb.site('site-a'), self.sb.site('site-b')
        equal = all(a.export_sha256('%s@%s' % (s, final.snapshot)) ==
                    b.export_sha256('%s@%s' % (s, final.snapshot))
                    for s in self.specs)
        wan_bytes = sum(r.wire_bytes for r in rounds)
        summary = {
            'shipment': shipment, 'tracking': tracking, 'images': self.specs,
            'bytes_shipped': shipped, 'bytes_over_wan': wan_bytes,
            'rounds': len(rounds), 'final_snapshot': final.snapshot,
            'pause_seconds': self.times['pause'], 'seconds': self.times,
            'written_during_migration': writer.written,
            'destination_equals_source': equal}
        out('destination == source at %s (rbd export | sha256sum, both '
            'disks): %s' % (final.snapshot, 'yes' if equal else 'NO'))
        out('shipped %.1f MiB on devices, %.1f MiB over the WAN in %d '
            'rounds, pause %.2f s' % (shipped / MiB, wan_bytes / MiB,
                                      len(rounds), self.times['pause']))
        return summary

    def cleanup(self):
        for site in ('site-a', 'site-b'):
            s = self.sb.site(site)
            for spec in self.specs:
                base = ['rbd', '-c', s.conf, '--keyring', s.keyring]
                subprocess.run(base + ['snap', 'purge', spec],
                               capture_output=True)
                subprocess.run(base + ['rm', '--no-progress', spec],
                               capture_output=True)
        shutil.rmtree(self.work, ignore_errors=True)
