"""Shipments end to end on the sandbox: site-a -> devices -> site-b.

Every test drives the real ``lsrp`` command and judges the result with the
real ``rbd export ... - | sha256sum`` on both clusters.
"""

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import fixtures

from lsrp.device import deviceset
from lsrp.device import export
from lsrp.device import keystore
from lsrp import exception
from tests.functional import base

MiB = 1 << 20
LSRP = os.path.join(os.path.dirname(sys.executable), 'lsrp')


class ShipmentTestCase(base.FunctionalTestCase):

    def setUp(self):
        super().setUp()
        self.work = self.useFixture(fixtures.TempDir()).path
        self.keys = os.path.join(self.work, 'keys')

    def lsrp(self, *args, state='a', keys=None, site='site-a', ceph=True,
             wait=True):
        cmd = [LSRP, '--shipment-state_dir',
               os.path.join(self.work, 'state-' + state),
               '--shipment-key_dir', keys or self.keys, '--shipment-shard_size',
               str(MiB), '--shipment-checkpoint_mib', '4'] + list(args)
        if ceph:
            s = self.sandbox.site(site)
            cmd += ['--ceph-conf', s.conf, '--keyring', s.keyring,
                    '--site', site]
        if not wait:
            return subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE)
        return subprocess.run(cmd, capture_output=True, text=True,
                              timeout=600)

    def ok(self, result):
        self.assertEqual(0, result.returncode,
                         'stdout: %s\nstderr: %s' % (result.stdout,
                                                     result.stderr))
        return result

    def devices(self, n=3, prefix='dev'):
        return [os.path.join(self.work, '%s%d' % (prefix, i))
                for i in range(n)]

    def device_args(self, devices):
        out = []
        for d in devices:
            out += ['--device', d]
        return out

    def random_image(self, size=32 * MiB, seed=1, extents=12):
        pool, name = self.new_image(size)
        rng = random.Random(seed)
        with pool.open_image(name) as img:
            for _ in range(extents):
                img.write(rng.randrange(0, size - 2 * MiB),
                          os.urandom(rng.randrange(1, 2 * MiB)))
            img.write(size // 2, b'compressible text ' * 50000)
        self.addCleanup(self._remove_imported, name)
        return name

    def _remove_imported(self, name):
        """Remove the image and any staging image of it at site-b."""
        for image in self.pool('site-b').list_images():
            if image == name or image.startswith(name + '.importing-'):
                self._remove_image('site-b', 'vms', image)

    def export(self, images, devices, snapshot='base', shipment=None):
        shipment = shipment or self.name('ship')
        self.ok(self.lsrp('export', *['vms/%s' % i for i in images],
                          '--snapshot', snapshot, '--create-snapshot',
                          '--shipment-id', shipment,
                          *self.device_args(devices)))
        return shipment

    def seal(self, shipment):
        out = self.ok(self.lsrp('seal', '--shipment-id', shipment,
                                ceph=False)).stdout
        return out.split()[-1]

    def import_(self, devices, digest, extra=(), **kw):
        return self.lsrp('import', *self.device_args(devices),
                         '--expect-digest', digest, *extra, state='b',
                         site='site-b', **kw)

    def assert_same(self, image, snapshots):
        for snap in snapshots:
            spec = 'vms/%s@%s' % (image, snap)
            self.assertEqual(self.cli_sha256('site-a', spec),
                             self.cli_sha256('site-b', spec), spec)

    def kill_when(self, proc, path, lines):
        """Kill -9 ``proc`` once ``path`` has ``lines`` journal lines."""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self.fail('finished before it could be killed: %s'
                          % proc.stderr.read().decode())
            try:
                with open(path, 'rb') as f:
                    if f.read().count(b'\n') >= lines:
                        break
            except FileNotFoundError:
                pass
            time.sleep(0.01)
        self.killed_clients = True
        proc.send_signal(signal.SIGKILL)
        proc.wait()

    def shipped(self, size=24 * MiB, devices=3):
        image = self.random_image(size)
        devs = self.devices(devices)
        shipment = self.export([image], devs)
        return image, devs, shipment, self.seal(shipment)

    def flip(self, device, offset, name='shards.dat'):
        with open(os.path.join(device, name), 'r+b') as f:
            f.seek(offset)
            b = f.read(1)
            f.seek(offset)
            f.write(bytes([b[0] ^ 0x10]))


class TestRoundTrip(ShipmentTestCase):

    def test_two_images_consolidated_lost_device_bit_exact(self):
        disk = self.random_image(48 * MiB, seed=3)
        # A clone of a template: its parent data is stored once.
        pool, template = self.new_image(16 * MiB)
        with pool.open_image(template) as img:
            img.write(0, os.urandom(12 * MiB))
            img.create_snapshot('gold')
            img.protect_snapshot('gold')
        clone = self.name('clone')
        pool.clone_image(template, 'gold', clone)
        self.addCleanup(self._remove_image, 'site-a', 'vms', clone)
        self.addCleanup(self._remove_image, 'site-b', 'vms', clone)
        devs = self.devices()
        shipment = self.export([disk, clone, template], devs)
        # Days later, before shipping: refresh the devices.
        with pool.open_image(disk) as img:
            img.write(5 * MiB + 1, os.urandom(3 * MiB))
            img.zero(20 * MiB + 7, 2 * MiB)
            img.discard(30 * MiB, 4 * MiB)
        with pool.open_image(clone) as img:
            img.write(MiB, os.urandom(MiB))
        result = self.ok(self.lsrp('consolidate', '--shipment-id', shipment,
                                   '--snapshot', 'c1', '--create-snapshot',
                                   '--progress', 'json'))
        events = [json.loads(line) for line in result.stdout.splitlines()]
        self.assertEqual('consolidated', events[-1]['event'])
        self.assertTrue(any(e.get('event') == 'progress' or
                            e.get('event') == 'done' for e in events))
        digest = self.seal(shipment)
        self.assertEqual(digest, self.seal(shipment))
        e = self.lsrp('consolidate', '--shipment-id', shipment, '--snapshot',
                      'c2', '--create-snapshot')
        self.assertEqual(2, e.returncode)
        self.assertIn('sealed', e.stderr)

        # The courier loses one device of three.
        shutil.rmtree(devs[1])
        report = json.loads(self.ok(self.lsrp(
            'verify', *self.device_args(devs), '--expect-digest', digest,
            ceph=False)).stdout)
        self.assertEqual([1], report['missing_devices'])
        self.assertEqual(6, len(report['images']))
        self.ok(self.import_(devs, digest))
        for image in (disk, clone, template):
            self.assert_same(image, ['base', 'c1'])
        # Dedup: the template's data is stored once for template and clone.
        shown = json.loads(self.ok(self.lsrp(
            'show', *self.device_args(devs), ceph=False)).stdout)
        self.assertLess(shown['record_bytes'], 48 * MiB + 16 * MiB)
        self.assertTrue(shown['sealed'])
        self.assertEqual([], [n for n in self.pool('site-b').list_images()
                              if n.endswith('.importing-' + shipment)])
        # Importing again is a no-op: the images are there and verified.
        self.ok(self.import_(devs, digest))


class TestFaults(ShipmentTestCase):

    def test_flipped_bit_is_repaired_from_parity(self):
        image, devs, shipment, digest = self.shipped()
        self.flip(devs[0], 12345)
        report = json.loads(self.ok(self.lsrp(
            'verify', *self.device_args(devs), ceph=False)).stdout)
        self.assertGreater(report['repaired_chunks'], 0)
        self.ok(self.import_(devs, digest))
        self.assert_same(image, ['base'])

    def test_damage_beyond_parity_is_a_verification_failure(self):
        image, devs, shipment, digest = self.shipped()
        # Stripe 0 keeps data shard 0 on device 0 and shard 1 on device 1.
        self.flip(devs[0], 100)
        self.flip(devs[1], 100)
        result = self.lsrp('verify', *self.device_args(devs), ceph=False)
        self.assertEqual(3, result.returncode, result.stderr)
        self.assertIn('chunk', result.stderr)
        result = self.import_(devs, digest)
        self.assertEqual(3, result.returncode, result.stderr)
        self.assertIn('vms/%s' % image, result.stderr)
        self.assertIn('offset', result.stderr)
        self.assertNotIn(image, self.pool('site-b').list_images())

    def test_more_devices_missing_than_parity(self):
        image, devs, shipment, digest = self.shipped()
        shutil.rmtree(devs[0])
        shutil.rmtree(devs[2])
        result = self.import_(devs, digest)
        self.assertEqual(2, result.returncode)
        self.assertIn('device 0, device 2', result.stderr)
        self.assertIn('parity covers 1 of 3', result.stderr)

    def test_tampered_manifest(self):
        image, devs, shipment, digest = self.shipped()
        name = sorted(f for f in os.listdir(devs[2])
                      if f.startswith('manifest'))[-1]
        self.flip(devs[2], 200, name)
        result = self.import_(devs, digest)
        self.assertEqual(3, result.returncode)
        self.assertIn('fails authentication', result.stderr)
        self.assertIn(devs[2], result.stderr)
        self.assertNotIn(image, self.pool('site-b').list_images())

    def test_wrong_manifest_digest(self):
        image, devs, shipment, digest = self.shipped()
        result = self.import_(devs, '0' * 64)
        self.assertEqual(3, result.returncode)
        self.assertIn('recorded at seal', result.stderr)

    def test_missing_and_wrong_key(self):
        image, devs, shipment, digest = self.shipped()
        other = os.path.join(self.work, 'other-keys')
        result = self.import_(devs, digest, keys=other)
        self.assertEqual(2, result.returncode)
        self.assertIn('no key', result.stderr)
        os.makedirs(other)
        with open(os.path.join(other, '%s.key' % shipment), 'w') as f:
            f.write(os.urandom(32).hex())
        result = self.import_(devs, digest, keys=other)
        self.assertEqual(2, result.returncode)
        self.assertIn('not the key of this shipment', result.stderr)

    def test_devices_of_two_shipments(self):
        a = self.random_image(8 * MiB, seed=5)
        b = self.random_image(8 * MiB, seed=6)
        devs_a, devs_b = self.devices(2, 'a'), self.devices(2, 'b')
        ship_a, ship_b = self.export([a], devs_a), self.export([b], devs_b)
        result = self.import_([devs_a[0], devs_b[1]], self.seal(ship_a))
        self.assertEqual(2, result.returncode)
        self.assertIn(ship_a, result.stderr)
        self.assertIn(ship_b, result.stderr)

    def test_destination_exists_with_other_content(self):
        image, devs, shipment, digest = self.shipped(8 * MiB)
        pool = self.pool('site-b')
        pool.create_image(image, MiB)
        with pool.open_image(image) as img:
            img.write(0, b'precious')
        before = self.cli_sha256('site-b', 'vms/%s' % image)
        result = self.import_(devs, digest)
        self.assertEqual(2, result.returncode)
        self.assertIn('vms/%s already exists at site-b' % image,
                      result.stderr)
        self.assertEqual(before, self.cli_sha256('site-b', 'vms/%s' % image))

    def test_device_that_fills_up_then_resumes(self):
        image = self.random_image(24 * MiB)
        devs = self.devices()
        os.makedirs(devs[2])
        subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=3m', 'tmpfs',
                        devs[2]], check=True)
        self.addCleanup(subprocess.run, ['umount', devs[2]])
        shipment = self.name('ship')
        args = ('export', 'vms/%s' % image, '--snapshot', 'base',
                '--shipment-id', shipment) + tuple(self.device_args(devs))
        with self.pool().open_image(image) as img:
            img.create_snapshot('base')
        result = self.lsrp(*args)
        self.assertEqual(2, result.returncode, result.stderr)
        self.assertIn('device %s is full' % devs[2], result.stderr)
        self.assertIn('progress is saved', result.stderr)
        # The operator makes room, and runs the same command again.
        subprocess.run(['mount', '-o', 'remount,size=64m', devs[2]],
                       check=True)
        self.ok(self.lsrp(*args))
        self.ok(self.import_(devs, self.seal(shipment)))
        self.assert_same(image, ['base'])


class TestParity(ShipmentTestCase):
    """XOR (one parity device) and Reed-Solomon (two) repair every loss."""

    def lose_each(self, devs, digest, lost_sets):
        for lost in lost_sets:
            hidden = [d + '.away' for d in lost]
            for d, h in zip(lost, hidden):
                os.rename(d, h)
            try:
                report = json.loads(self.ok(self.lsrp(
                    'verify', *self.device_args(devs), '--expect-digest',
                    digest, ceph=False)).stdout)
            finally:
                for d, h in zip(lost, hidden):
                    os.rename(h, d)
            self.assertEqual(sorted(devs.index(d) for d in lost),
                             report['missing_devices'])

    def test_one_parity_device_xor_each_device_lost(self):
        image, devs, shipment, digest = self.shipped()
        with open(os.path.join(devs[0], deviceset.LABEL)) as f:
            self.assertEqual('xor', json.load(f)['erasure_code'])
        self.lose_each(devs, digest, [[d] for d in devs])
        shutil.rmtree(devs[1])
        self.ok(self.import_(devs, digest))
        self.assert_same(image, ['base'])

    def test_two_parity_devices_reed_solomon_any_two_lost(self):
        image = self.random_image(24 * MiB)
        devs = self.devices(4)
        shipment = self.name('ship')
        self.ok(self.lsrp('export', 'vms/%s' % image, '--snapshot', 'base',
                          '--create-snapshot', '--shipment-id', shipment,
                          '--parity', '2', *self.device_args(devs)))
        digest = self.seal(shipment)
        with open(os.path.join(devs[3], deviceset.LABEL)) as f:
            label = json.load(f)
        self.assertEqual(('isa_l_rs_cauchy', 2, 2), (
            label['erasure_code'], label['data_shards'],
            label['parity_shards']))
        self.lose_each(devs, digest, [[d] for d in devs]
                       + [[devs[0], devs[1]], [devs[1], devs[3]]])
        # Two of four lost and one bit flipped on a third: beyond parity.
        self.flip(devs[2], 100)
        shutil.rmtree(devs[0])
        result = self.lsrp('verify', *self.device_args(devs), ceph=False)
        self.assertEqual(0, result.returncode, result.stderr)
        shutil.rmtree(devs[3])
        result = self.lsrp('verify', *self.device_args(devs), ceph=False)
        self.assertEqual(3, result.returncode, result.stderr)
        self.assertIn('missing devices: [0, 3]', result.stderr)

    def test_devices_of_the_zfec_format_are_refused(self):
        image, devs, shipment, digest = self.shipped(8 * MiB)
        for d in devs:
            path = os.path.join(d, deviceset.LABEL)
            with open(path) as f:
                label = json.load(f)
            label['format_version'] = 1
            with open(path, 'w') as f:
                json.dump(label, f)
        result = self.import_(devs, digest)
        self.assertEqual(2, result.returncode, result.stderr)
        self.assertIn('device format version 1', result.stderr)
        self.assertIn('zfec', result.stderr)
        self.assertNotIn(image, self.pool('site-b').list_images())


class TestImportAgain(ShipmentTestCase):

    def test_import_again_after_the_image_was_removed(self):
        # Data past 256 MiB: the import journals a cursor there, which a
        # stale journal made the next import start from.
        size = 320 * MiB
        image = self.random_image(size, extents=4)
        with self.pool().open_image(image) as img:
            img.write(300 * MiB, os.urandom(MiB))
        devs = self.devices()
        shipment = self.export([image], devs)
        digest = self.seal(shipment)
        self.ok(self.import_(devs, digest))
        self.assert_same(image, ['base'])
        journal = os.path.join(self.work, 'state-b', shipment,
                               'import.journal')
        with open(journal) as f:
            self.assertIn('"cursor_0"', f.read())
        # The destination image is removed; the state directory stays.
        self._remove_image('site-b', 'vms', image)
        self.ok(self.import_(devs, digest))
        with open(journal) as f:
            self.assertIn('"stale":true', f.read())
        self.assert_same(image, ['base'])
        # Now a staging image of that name that the journal does not know.
        self._remove_image('site-b', 'vms', image)
        staging = '%s.importing-%s' % (image, shipment)
        pool = self.pool('site-b')
        pool.create_image(staging, size)
        with pool.open_image(staging) as img:
            img.write(MiB, os.urandom(MiB))
        self.ok(self.import_(devs, digest))
        self.assert_same(image, ['base'])
        self.assertEqual([image], [n for n in pool.list_images()
                                   if n.startswith(image)])

    def test_import_with_readback(self):
        image, devs, shipment, digest = self.shipped(16 * MiB)
        result = self.ok(self.import_(devs, digest, extra=(
            '--verify-readback', '--progress', 'json')))
        events = [json.loads(line) for line in result.stdout.splitlines()]
        tasks = [e.get('task', '') for e in events]
        self.assertTrue(any(t.startswith('readback') for t in tasks))
        # The import's last word counts the whole image, holes included
        # (the 16 MiB image is sparse: a dozen random extents).
        done = [e for e in events if e['event'] == 'done' and
                e['task'].startswith('import ')]
        self.assertEqual([(16 * MiB, 16 * MiB)],
                         [(e['bytes'], e['total']) for e in done])
        self.assert_same(image, ['base'])


class _RemoveSnapshotOnce(object):
    """A progress sink that deletes the source snapshot mid-export."""

    def __init__(self, pool, image, snapshot):
        self.args = (pool, image, snapshot)
        self.calls = 0

    def start(self, label, total):
        pass

    def advance(self, n):
        self.calls += 1
        if self.calls == 2:
            pool, image, snapshot = self.args
            with pool.open_image(image) as img:
                img.remove_snapshot(snapshot)

    def finish(self):
        pass


class TestSourceChanges(ShipmentTestCase):

    def test_source_snapshot_removed_mid_export(self):
        image = self.random_image(64 * MiB, extents=40)
        pool = self.pool()
        with pool.open_image(image) as img:
            img.create_snapshot('base')
        devs = self.devices()
        exporter = export.Exporter(
            self.sites['site-a'], keystore.FileKeyStore(self.keys),
            os.path.join(self.work, 'state-a'), shard_size=MiB,
            progress=_RemoveSnapshotOnce(pool, image, 'base'))
        e = self.assertRaises(exception.ShipmentError, exporter.export,
                              ['vms/%s' % image], 'base', devs)
        self.assertIn('vms/%s@base' % image, str(e))
        self.assertIn('is gone', str(e))
        # Nothing on the devices claims to be a finished export.
        for d in devs:
            self.assertEqual([], [f for f in os.listdir(d)
                                  if f.startswith('manifest')])

    def test_snapshot_made_again_between_runs_is_refused(self):
        image = self.random_image(64 * MiB, extents=40)
        pool = self.pool()
        with pool.open_image(image) as img:
            img.create_snapshot('base')
        devs = self.devices()
        shipment = self.name('ship')
        args = ('export', 'vms/%s' % image, '--snapshot', 'base',
                '--shipment-id', shipment) + tuple(self.device_args(devs))
        proc = self.lsrp(*args, wait=False)
        self.kill_when(proc, os.path.join(
            self.work, 'state-a', shipment, 'journal.v000001'), 1)
        with pool.open_image(image) as img:
            img.remove_snapshot('base')
            img.write(0, b'new content')
            img.create_snapshot('base')
        result = self.lsrp(*args)
        self.assertEqual(2, result.returncode, result.stderr)
        self.assertIn('deleted and made again', result.stderr)


class TestPoolSpace(ShipmentTestCase):
    """Destination pools that cannot hold the shipment.

    Each test has a pool of its own at site B: a quota on a shared pool
    raced with the other tests writing to it (and a full one stalled them).
    """

    def setUp(self):
        super().setUp()
        self.qpool = self.name('quota')
        self.ceph_b('osd', 'pool', 'create', self.qpool, '8')
        self.addCleanup(self.ceph_b, 'osd', 'pool', 'rm', self.qpool,
                        self.qpool, '--yes-i-really-really-mean-it')
        self.ceph_b('osd', 'pool', 'application', 'enable', self.qpool, 'rbd')
        subprocess.run(['rbd', '-c', self.sandbox.site('site-b').conf, 'pool',
                        'init', self.qpool], check=True, capture_output=True,
                       timeout=120)

    def ceph_b(self, *args):
        subprocess.run(['ceph', '-c', self.sandbox.site('site-b').conf,
                        *args], check=True, capture_output=True, timeout=120)

    def set_quota(self, max_bytes, full=None):
        self.ceph_b('osd', 'pool', 'set-quota', self.qpool, 'max_bytes',
                    str(max_bytes))
        deadline = time.monotonic() + 90
        while full is not None and time.monotonic() < deadline:
            if self.sites['site-b'].pool_space(self.qpool)['full'] == full:
                return
            time.sleep(0.5)
        if full is not None:
            self.fail('pool %s never became full=%s' % (self.qpool, full))

    def test_space_is_checked_before_writing(self):
        image = self.random_image(24 * MiB)
        devs = self.devices()
        digest = self.seal(self.export([image], devs))
        self.set_quota(4 * MiB)
        result = self.import_(devs, digest, extra=('--pool-map',
                                                   'vms=' + self.qpool))
        self.assertEqual(2, result.returncode, result.stderr)
        self.assertIn('pool %s' % self.qpool, result.stderr)
        self.assertIn('MiB left', result.stderr)
        self.assertEqual([], [n for n in self.pool('site-b', self.qpool)
                              .list_images() if n.startswith(image)])

    def test_pool_full_mid_import_then_resumed(self):
        first = self.random_image(8 * MiB, seed=8)
        # The second image comes from another pool, mapped to 'volumes'.
        pool = self.pool('site-a', 'images')
        second = self.name()
        pool.create_image(second, 16 * MiB)
        self.addCleanup(self._remove_image, 'site-a', 'images', second)
        with pool.open_image(second) as img:
            img.write(0, os.urandom(12 * MiB))
        devs = self.devices()
        shipment = self.name('ship')
        self.ok(self.lsrp('export', 'vms/' + first, 'images/' + second,
                          '--snapshot', 'base', '--create-snapshot',
                          '--shipment-id', shipment,
                          *self.device_args(devs)))
        digest = self.seal(shipment)
        # Some data in the pool, and a quota below it: the pool is full.
        quota, filler = self.new_image(MiB, site='site-b', pool=self.qpool)
        with quota.open_image(filler) as img:
            img.write(0, os.urandom(MiB))
        self.set_quota(1, full=True)
        args = ('--pool-map', 'images=' + self.qpool, '--op-timeout', '5')
        result = self.import_(devs, digest,
                              extra=args + ('--skip-space-check',))
        self.assertEqual(2, result.returncode, result.stderr)
        self.assertIn('pool %s' % self.qpool, result.stderr)
        self.assertIn('became full during the import', result.stderr)
        self.assertIn(first, self.pool('site-b').list_images())
        self.assertNotIn(second,
                         self.pool('site-b', self.qpool).list_images())
        self.set_quota(0, full=False)
        self.ok(self.import_(devs, digest, extra=args))
        self.assertEqual(self.cli_sha256('site-a', 'images/%s@base' % second),
                         self.cli_sha256('site-b',
                                         '%s/%s@base' % (self.qpool, second)))
        self.assert_same(first, ['base'])


class TestResume(ShipmentTestCase):
    """kill -9 at a random point, then the same command again."""

    def test_export_consolidate_import_killed_and_resumed(self):
        image = self.random_image(96 * MiB, extents=60)
        devs = self.devices()
        shipment = self.name('ship')
        with self.pool().open_image(image) as img:
            img.create_snapshot('base')
        args = ('export', 'vms/%s' % image, '--snapshot', 'base',
                '--shipment-id', shipment) + tuple(self.device_args(devs))
        state = os.path.join(self.work, 'state-a', shipment)
        self.kill_when(self.lsrp(*args, wait=False),
                       os.path.join(state, 'journal.v000001'), 3)
        self.ok(self.lsrp(*args))

        with self.pool().open_image(image) as img:
            for i in range(12):
                img.write(i * 7 * MiB + 3, os.urandom(2 * MiB))
            img.create_snapshot('c1')
        args = ('consolidate', '--shipment-id', shipment, '--snapshot', 'c1')
        self.kill_when(self.lsrp(*args, wait=False),
                       os.path.join(state, 'journal.v000002'), 2)
        self.ok(self.lsrp(*args))
        digest = self.seal(shipment)

        # Nothing stored twice: the shard files hold exactly what the
        # manifest names, and every chunk appears once.
        shown = json.loads(self.ok(self.lsrp(
            'show', *self.device_args(devs), ceph=False)).stdout)
        sizes = {os.path.getsize(os.path.join(d, deviceset.SHARDS))
                 for d in devs}
        self.assertEqual({shown['shard_bytes_per_device']}, sizes)
        # Stripes are padded to whole 4 KiB shards (O_DIRECT), nothing more.
        self.assertEqual(shown['record_bytes'] + shown['padding_bytes'],
                         shown['stripe_data_bytes'])
        self.assertLess(shown['padding_bytes'], shown['stripes']
                        * shown['data_shards'] * deviceset.DIRECT_ALIGN)

        proc = self.import_(devs, digest, wait=False)
        self.kill_when(proc, os.path.join(self.work, 'state-b', shipment,
                                          'import.journal'), 1)
        self.assertNotIn(image, self.pool('site-b').list_images(),
                         'an interrupted import looks finished')
        self.ok(self.import_(devs, digest))
        self.assert_same(image, ['base', 'c1'])
