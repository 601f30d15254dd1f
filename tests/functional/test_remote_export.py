"""Images written onto devices at another terminal (the device-set sink).

Site-a's cluster is read here and streamed over mTLS to the terminal of
site-b, which holds the devices and the key. What lands on the devices is
judged by sealing, verifying and importing it, then comparing with ``rbd
export | sha256sum`` of the source snapshots.
"""

import asyncio
import json
import os
import signal
import subprocess
import sys

from lsrp import catchup
from lsrp.device import export
from lsrp.device import importer
from lsrp.device import receiver
from lsrp.device import remote
from lsrp.device import verify
from lsrp import exception
from lsrp.protocol import messages as m
from tests.functional import test_catchup

MiB = 1 << 20


class TestRemoteExport(test_catchup.CatchUpTestCase):

    def images(self, sizes=(32 * MiB, 16 * MiB)):
        specs = []
        for size in sizes:
            pool, name = self.new_image(size)
            self.addCleanup(self._remove_image, 'site-b', 'vms', name)
            with pool.open_image(name) as img:
                for i in range(4):
                    img.write(i * size // 4 + 4097, os.urandom(size // 8))
                img.create_snapshot('seed')
            specs.append('vms/' + name)
        return specs

    def change(self, specs, snapshot):
        for spec in specs:
            with self.pool().open_image(spec.split('/')[1]) as img:
                img.write(MiB + 5, os.urandom(3 * MiB))
                img.zero(img.size() - 2 * MiB, MiB + 17)
                img.create_snapshot(snapshot)

    def last_session(self):
        with open(os.path.join(self.state_b, 'sessions.json')) as f:
            return json.load(f)['last']

    def devices(self):
        return [os.path.join(self.work, 'dev%d' % i) for i in range(3)]

    def send(self, shipment, specs, snapshot, consolidate):
        """lsrp export/consolidate --remote into an in-process terminal."""
        async def scenario():
            async with self.serving(key_store=self.keys, device_options={
                    'shard_size': MiB}) as server:
                return await remote.send_images(
                    self.connector(server.port), self.sites['site-a'],
                    shipment, specs, snapshot, consolidate)
        return self.run_async(scenario())

    def import_and_compare(self, devs, digest, specs, snapshots):
        """Seal's digest in hand: verify, import at site-b, compare."""
        report = verify.verify(devs, self.keys, digest)
        self.assertEqual(len(specs) * len(snapshots), len(report['images']))
        importer.Importer(self.sites['site-b'], self.keys,
                          os.path.join(self.work, 'import')).run(devs, digest)
        for spec in specs:
            for snap in snapshots:
                self.assert_same(spec, snap)

    def test_seed_and_consolidation_through_the_device_terminal(self):
        specs = self.images()
        devs = self.devices()
        shipment = 'fedex-remote1'
        receiver.declare(self.state_b, self.keys, shipment, specs, devs)

        sent = self.send(shipment, specs, 'seed', False)
        self.assertEqual(set(specs), set(sent))
        self.change(specs, 'c1')
        sent = self.send(shipment, specs, 'c1', True)
        # Only the changes travel for the consolidation.
        self.assertLess(sum(c for c, _ in sent.values()), 12 * MiB)
        # Again: the devices hold c1 already, nothing travels.
        sent = self.send(shipment, specs, 'c1', True)
        self.assertEqual(0, sum(c for c, _ in sent.values()))
        digest = export.Exporter(None, self.keys, self.state_b).seal(shipment)
        self.import_and_compare(devs, digest, specs, ('seed', 'c1'))

    def test_lost_connection_and_restarted_terminal_resume(self):
        specs = self.images((48 * MiB,))
        spec = specs[0]
        devs = self.devices()
        shipment = 'fedex-remote2'
        receiver.declare(self.state_b, self.keys, shipment, specs, devs)
        proc, port = self._serve('--shipment-key_dir', self.keys.directory,
                                 '--shipment-shard_size', str(MiB),
                                 '--shipment-checkpoint_mib', '2')
        connect = self.connector(port)

        async def cut():
            client = await connect()
            sender = catchup.DiskSender(
                client, self.sites['site-a'], spec, shipment,
                limiter=catchup.RateLimiter(6 * MiB), window=2, dedup=False)
            task = asyncio.ensure_future(sender.send(
                None, 'seed', verify=True, describe=True))
            await asyncio.sleep(3)
            self.assertFalse(task.done(), 'the seed was sent before the cut')
            # A second stream cannot join: the devices take blocks in order.
            other = await connect()
            try:
                with self.assertRaises(exception.RemoteError) as e:
                    await other.conn.request(m.INIT_SESSION, {
                        'disk': spec, 'shipment': shipment,
                        'attach': self.last_session()})
                self.assertEqual('NOT_ALLOWED', e.exception.code)
            finally:
                await other.close()
            proc.send_signal(signal.SIGKILL)   # the terminal dies mid-image
            try:
                await task
            except (exception.FedexException, ConnectionError, OSError):
                pass
            finally:
                await client.close()

        self.run_async(cut())
        proc.wait()
        # Nothing that looks finished: no manifest yet.
        with self.assertRaises(exception.ShipmentError):
            verify.verify(devs, self.keys)
        proc, port = self._serve('--shipment-key_dir', self.keys.directory,
                                 '--shipment-shard_size', str(MiB))

        async def resume():
            client = await self.connector(port)()
            sender = catchup.DiskSender(client, self.sites['site-a'], spec,
                                        shipment, dedup=False)
            try:
                await sender.send(None, 'seed', verify=True, describe=True)
            finally:
                await client.close()
            return sender

        sender = self.run_async(resume())
        # The journal on the terminal's side knew where the image was.
        self.assertGreater(sender.resumed_at, 0)
        self.assertLess(sender.changed, 24 * MiB)
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(0, proc.wait())
        digest = export.Exporter(None, self.keys, self.state_b).seal(shipment)
        self.import_and_compare(devs, digest, specs, ('seed',))

    def test_device_full_at_the_terminal_is_named_then_resumes(self):
        specs = self.images((24 * MiB,))
        devs = self.devices()
        os.makedirs(devs[2])
        subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=3m', 'tmpfs',
                        devs[2]], check=True)
        self.addCleanup(subprocess.run, ['umount', devs[2]])
        shipment = 'fedex-remote5'
        receiver.declare(self.state_b, self.keys, shipment, specs, devs)
        with self.assertRaises(exception.RemoteError) as e:
            self.send(shipment, specs, 'seed', False)
        # The source hears which device of the terminal is full.
        self.assertEqual('INTERNAL', e.exception.code)
        self.assertIn('device %s is full' % devs[2], str(e.exception))
        # The operator at the terminal makes room; the same command again.
        subprocess.run(['mount', '-o', 'remount,size=64m', devs[2]],
                       check=True)
        self.send(shipment, specs, 'seed', False)
        digest = export.Exporter(None, self.keys, self.state_b).seal(shipment)
        self.import_and_compare(devs, digest, specs, ('seed',))

    def test_rounds_out_of_order_and_sealed_shipments_are_refused(self):
        specs = self.images((8 * MiB,))
        devs = self.devices()
        shipment = 'fedex-remote3'
        receiver.declare(self.state_b, self.keys, shipment, specs, devs)
        self.change(specs, 'c1')

        # A source whose data does not match the digest it claims.
        async def wrong_digest():
            async with self.serving(key_store=self.keys) as server:
                client = await self.connector(server.port)()
                try:
                    conn = client.conn
                    session = (await conn.request(m.INIT_SESSION, {
                        'disk': specs[0], 'shipment': shipment}))['session']
                    await conn.request(m.REPLICATION_START, {
                        'snapshot': 'seed', 'size': 8 * MiB,
                        'object_size': 4 * MiB, 'features': []}, session)
                    data = os.urandom(MiB)
                    await conn.request(m.REPLICATION_UPDATE, {
                        'offset': 0, 'data': data,
                        'digest': catchup.digest_mod.block_digest(data)},
                        session)
                    await conn.request(m.REPLICATION_COMPLETE, {
                        'snapshot': 'seed', 'image_digest': '0' * 64},
                        session)
                finally:
                    await client.close()
        with self.assertRaises(exception.RemoteError) as e:
            self.run_async(wrong_digest())
        self.assertEqual('DIGEST_MISMATCH', e.exception.code)
        with self.assertRaises(exception.ShipmentError):
            verify.verify(devs, self.keys)     # no manifest: not finished
        # A consolidation before the seed: the devices hold nothing yet.
        with self.assertRaises(exception.ShipmentError) as e:
            self.send(shipment, specs, 'c1', True)
        self.assertIn('send the seed first', str(e.exception))
        # The next attempt starts over, not from the bad content.
        self.send(shipment, specs, 'seed', False)
        digest = export.Exporter(None, self.keys, self.state_b).seal(shipment)
        on_devices = verify.verify(devs, self.keys, digest)['images'][0]
        with self.pool().open_image(specs[0].split('/')[1],
                                    snapshot='seed') as img:
            self.assertEqual(img.digest('blake3'), on_devices['digest'])
        with self.assertRaises(exception.RemoteError) as e:
            self.send(shipment, specs, 'c1', True)
        self.assertEqual('NOT_ALLOWED', e.exception.code)
        self.assertIn('sealed', str(e.exception))

    def test_command_line_through_a_real_terminal(self):
        specs = self.images((16 * MiB,))
        devs = self.devices()
        shipment = 'fedex-remote4'
        lsrp = os.path.join(os.path.dirname(sys.executable), 'lsrp')
        state = ['--shipment-state_dir', self.state_b,
                 '--shipment-key_dir', self.keys.directory]

        def run(*args):
            result = subprocess.run([lsrp] + list(args), text=True,
                                    capture_output=True)
            self.assertEqual(0, result.returncode, result.stderr)
            return result.stdout
        device_args = [a for d in devs for a in ('--device', d)]
        run(*(state + ['authorize', '--shipment-id', shipment] + specs
              + device_args))
        # A terminal that only writes devices: no cluster ([ceph] points
        # nowhere).
        proc, port = self._serve('--shipment-key_dir', self.keys.directory,
                                 '--devices-only',
                                 '--ceph-conf', '/nonexistent')
        name, ca, cert, key = self.terminal('site-a')
        s = self.sandbox.site('site-a')
        remote_args = ['--remote', '127.0.0.1:%d' % port,
                       '--server-name', self.terminal('site-b')[0],
                       '--tls-ca', ca, '--tls-cert', cert, '--tls-key', key,
                       '--name', name, '--shipment-id', shipment,
                       '--ceph-conf', s.conf, '--keyring', s.keyring]
        out = run('export', '--snapshot', 'seed', '--progress', 'json',
                  *(remote_args + specs))
        events = [json.loads(line) for line in out.splitlines()]
        self.assertEqual(['sent', 'exported'], [e['event'] for e in events])
        # Days later: the changes up to a new snapshot, taken by the command.
        with self.pool().open_image(specs[0].split('/')[1]) as img:
            img.write(5 * MiB, os.urandom(MiB))
        out = run('consolidate', '--snapshot', 'c1', '--create-snapshot',
                  *(remote_args + specs))
        self.assertIn('consolidated through', out)
        # Images on a cluster: not at this terminal.
        run(*(state + ['authorize', '--shipment-id', 'other', 'vms/x']))

        async def rbd_session():
            client = await self.connector(port)()
            try:
                await client.conn.request(m.INIT_SESSION, {
                    'disk': 'vms/x', 'shipment': 'other'})
            finally:
                await client.close()
        with self.assertRaises(exception.RemoteError) as e:
            self.run_async(rbd_session())
        self.assertEqual('NOT_ALLOWED', e.exception.code)
        self.assertIn('devices only', str(e.exception))
        out = run(*(state + ['seal', '--shipment-id', shipment]))
        digest = out.split()[-1]
        proc.send_signal(signal.SIGTERM)
        proc.wait()
        self.import_and_compare(devs, digest, specs, ('seed', 'c1'))
