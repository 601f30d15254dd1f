"""Device sets on real directories: writing, reading, repairing, resuming."""

import os
import shutil

import fixtures
import testtools

from lsrp.device import crypto as crypto_mod
from lsrp.device import deviceset
from lsrp.device import export as export_mod
from lsrp.device import journal as journal_mod
from lsrp.device import manifest as manifest_mod
from lsrp.device import reader as reader_mod
from lsrp.device import writer as writer_mod
from lsrp import exception

SHARD = 64 << 10


class DeviceTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        self.paths = [os.path.join(self.root, 'dev%d' % i) for i in range(3)]
        self.crypto = crypto_mod.ShipmentCrypto(os.urandom(32), 'ship-1')
        self.devset = deviceset.DeviceSet.create(self.paths, 'ship-1', 2, 1,
                                                 self.crypto.key_check)
        self.journal_path = os.path.join(self.root, 'state', 'journal')

    def new_manifest(self):
        m = manifest_mod.Manifest.new('ship-1', {'site': 'x'}, 4096, 2, 1,
                                      ['a', 'b', 'c'], SHARD)
        m.images.append({'pool': 'p', 'name': 'i', 'snapshots': [
            {'name': 's', 'from': None, 'size': 1 << 20, 'digest': None,
             'runs': []}]})
        return m

    def write(self, manifest, data, offset=0, flush=True):
        w = writer_mod.ShipmentWriter(
            self.devset, self.crypto, manifest,
            journal_mod.Journal(self.journal_path), SHARD)
        w.add_data(offset, data)
        w.end_piece(0, 0, offset + len(data))
        if flush:
            w.flush()
        return w

    def read_all(self, manifest, devset=None):
        reader = reader_mod.ChunkReader(devset or deviceset.DeviceSet.open(
            self.paths), self.crypto, manifest)
        out = bytearray()
        for run in manifest.images[0]['snapshots'][0]['runs']:
            if run[0] == 'z':
                out += bytes(run[2])
            else:
                out += reader.read(run[3], 'p/i', run[1])
        return bytes(out), reader


class TestDeviceSet(DeviceTestCase):

    def _data(self):
        block = os.urandom(4096)
        # random, zeros, a repeated block (stored once), more random
        return (os.urandom(100_000) + bytes(20_480) + block * 8
                + os.urandom(200_000))

    def test_write_dedup_read_back(self):
        m = self.new_manifest()
        data = self._data()
        self.write(m, data)
        got, _ = self.read_all(m)
        self.assertEqual(data, got)
        runs = m.images[0]['snapshots'][0]['runs']
        digests = [r[3] for r in runs if r[0] == 'd']
        self.assertEqual(len(set(digests)), len(m.chunks))
        self.assertLess(len(m.chunks), len(digests))
        self.assertIn('z', [r[0] for r in runs])
        # Every device holds the same number of shard bytes.
        sizes = {os.path.getsize(os.path.join(p, 'shards.dat'))
                 for p in self.paths}
        self.assertEqual({m.shards_end()}, sizes)

    def test_lost_device_is_rebuilt(self):
        m = self.new_manifest()
        data = self._data()
        self.write(m, data)
        shutil.rmtree(self.paths[1])
        devset = deviceset.DeviceSet.open(self.paths)
        self.assertEqual([1], devset.missing())
        got, _ = self.read_all(m, devset)
        self.assertEqual(data, got)

    def _flip(self, device, offset):
        path = os.path.join(self.paths[device], 'shards.dat')
        with open(path, 'r+b') as f:
            f.seek(offset)
            b = f.read(1)
            f.seek(offset)
            f.write(bytes([b[0] ^ 0x01]))

    def test_flipped_bit_is_repaired(self):
        m = self.new_manifest()
        data = self._data()
        self.write(m, data)
        self._flip(0, 1000)
        got, reader = self.read_all(m)
        self.assertEqual(data, got)
        self.assertGreater(reader.repaired, 0)

    def test_damage_beyond_parity_names_image_and_offset(self):
        m = self.new_manifest()
        self.write(m, os.urandom(100_000))
        # Stripe 0: shard 0 on device 0, shard 1 on device 1: hit both.
        self._flip(0, 10)
        self._flip(1, 10)
        e = self.assertRaises(exception.ChunkCorrupt, self.read_all, m)
        self.assertIn('p/i', str(e))
        self.assertIn('offset', str(e))
        self.assertIsInstance(e, exception.VerificationFailed)

    def test_resume_drops_unjournaled_shards_and_stores_no_twice(self):
        m = self.new_manifest()
        data = os.urandom(300_000)
        w = self.write(m, data[:150_000])
        w.close()
        # A crash after shards were written but before the journal line:
        for p in self.paths:
            with open(os.path.join(p, 'shards.dat'), 'ab') as f:
                f.write(os.urandom(5000))
        self.devset = deviceset.DeviceSet.open(self.paths)
        m2 = self.new_manifest()
        w = writer_mod.ShipmentWriter(
            self.devset, self.crypto, m2,
            journal_mod.Journal(self.journal_path), SHARD)
        self.assertEqual(m.chunks, m2.chunks)
        self.assertEqual(150_000, w.resume_offset(0, 0))
        for p in self.paths:
            self.assertEqual(m2.shards_end(),
                             os.path.getsize(os.path.join(p, 'shards.dat')))
        # Adding the first half again stores nothing new.
        before = m2.shards_end()
        w.add_data(0, data[:150_000])
        w.flush()
        self.assertEqual(before, m2.shards_end())

    def test_mixed_shipments_are_refused(self):
        other = os.path.join(self.root, 'other')
        deviceset.DeviceSet.create([other], 'ship-2', 1, 0, 'x')
        e = self.assertRaises(exception.MixedShipments, deviceset.DeviceSet.open,
                              self.paths[:2] + [other])
        self.assertIn('ship-1', str(e))
        self.assertIn('ship-2', str(e))

    def test_unlabelled_non_empty_directory_is_not_overwritten(self):
        victim = os.path.join(self.root, 'victim')
        os.makedirs(victim)
        with open(os.path.join(victim, 'precious'), 'w') as f:
            f.write('data')
        e = self.assertRaises(exception.NotADevice, deviceset.DeviceSet.create,
                              [victim], 'ship-3', 1, 0, 'x')
        self.assertIn(victim, str(e))

    def test_label_half_written_by_a_killed_export_is_redone(self):
        # kill -9 between the label's temporary file and its rename.
        dev = os.path.join(self.root, 'killed')
        os.makedirs(dev)
        with open(os.path.join(dev, deviceset.LABEL + '.tmp'), 'w') as f:
            f.write('{"format": ')
        devset = deviceset.DeviceSet.create([dev], 'ship-4', 1, 0, 'x')
        self.assertEqual('ship-4', devset.shipment_id)
        self.assertEqual([deviceset.LABEL], os.listdir(dev))

    def test_too_many_missing_devices_are_listed(self):
        shutil.rmtree(self.paths[0])
        shutil.rmtree(self.paths[2])
        devset = deviceset.DeviceSet.open(self.paths)
        e = self.assertRaises(exception.DevicesMissing,
                              devset.require_readable)
        self.assertIn('device 0, device 2', str(e))

    def test_tampered_manifest(self):
        m = self.new_manifest()
        blob = bytearray(m.to_blob(self.crypto))
        self.assertEqual(m.data, manifest_mod.Manifest.from_blob(
            bytes(blob), self.crypto, 'dev0').data)
        blob[-20] ^= 1
        e = self.assertRaises(exception.ManifestTampered,
                              manifest_mod.Manifest.from_blob, bytes(blob),
                              self.crypto, 'dev0')
        self.assertIn('dev0', str(e))


class TestLoadManifest(DeviceTestCase):

    def setUp(self):
        super().setUp()
        self.manifest = self.new_manifest()
        # Version 1, as manifest.v000001 (a file must hold its version).
        self.manifest.data['version'] = 1
        self.blob = self.manifest.to_blob(self.crypto)
        self.devset.write_manifest(1, self.blob)
        self.opened = []
        real = manifest_mod.Manifest.from_blob.__func__

        def counting(cls, blob, crypto, where):
            self.opened.append(where)
            return real(cls, blob, crypto, where)
        self.useFixture(fixtures.MonkeyPatch(
            'lsrp.device.manifest.Manifest.from_blob',
            classmethod(counting)))

    def load(self):
        return export_mod.load_manifest(deviceset.DeviceSet.open(self.paths),
                                        self.crypto)

    def test_copies_equal_to_an_authenticated_one_are_opened_once(self):
        manifest, blob = self.load()
        self.assertEqual(self.manifest.data, manifest.data)
        self.assertEqual(self.blob, blob)
        self.assertEqual(1, len(self.opened))

    def test_a_tampered_copy_is_still_authenticated_and_named(self):
        tampered = bytearray(self.blob)
        tampered[-20] ^= 1
        with open(os.path.join(self.paths[2], deviceset.manifest_name(1)),
                  'wb') as f:
            f.write(bytes(tampered))
        e = self.assertRaises(exception.ManifestTampered, self.load)
        self.assertEqual(2, len(self.opened))
        self.assertIn(self.opened[-1], str(e))
