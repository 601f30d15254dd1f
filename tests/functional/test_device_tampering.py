"""Device files truncated, swapped or replaced before and during an import.

Issue 25, bad input at every door: a device set arrives with a shard file
cut short (an interrupted copy), shard files swapped between devices,
devices in other slots, manifest files swapped on a device, files or a
whole device of another shipment. Each import through the real ``lsrp``
command either ends exact (what the format promises to survive: a device
in another slot, one device's damage covered by parity) or fails with one
line naming the device or chunk and the problem, and then nothing at
site-b looks imported: the image is absent under its name (at most its
``.importing-<shipment>`` staging image is left for a resume), and the
shipment is not authorized for catch-up (no ``authorized.json``: the
terminal refuses rounds on it). The same import run again with the good
devices is exact (``rbd export | sha256sum`` at both sites).
"""

import os
import shutil

from lsrp.device import deviceset
from lsrp.device import importer
from lsrp.device import keystore
from lsrp import exception
from lsrp import progress as progress_mod
from tests.functional import test_shipment

MiB = 1 << 20


class _TruncateWhenReached(progress_mod.Progress):
    """Cuts shard files when the import reaches a given image."""

    def __init__(self, label, files):
        super().__init__('none')
        self.target, self.files = label, files
        self.cut = False

    def start(self, label, total):
        if label == self.target and not self.cut:
            for path in self.files:
                os.truncate(path, 0)
            self.cut = True
        super().start(label, total)


class TestDeviceTampering(test_shipment.ShipmentTestCase):

    def shipped(self, size=16 * MiB, images=1, seed=1):
        names = [self.random_image(size, seed=seed + i)
                 for i in range(images)]
        devs = self.devices(3, prefix='d%d-' % seed)
        shipment = self.export(names, devs)
        digest = self.seal(shipment)
        # The good devices, for the import run again.
        for d in devs:
            shutil.copytree(d, d + '.good')
        return names, devs, shipment, digest

    def restore(self, devs):
        for d in devs:
            shutil.rmtree(d, ignore_errors=True)
            shutil.copytree(d + '.good', d)

    def shards(self, dev):
        return os.path.join(dev, deviceset.SHARDS)

    def refused(self, result, code, *expected):
        """Exit ``code``, one line on stderr naming every ``expected``."""
        return self.assert_one_error_line(result, code, *expected)

    def assert_not_imported(self, image, shipment):
        """Nothing at site-b passes for the image, nor for the shipment."""
        images = self.pool('site-b').list_images()
        self.assertNotIn(image, images)
        for other in images:
            if other.startswith(image):
                self.assertEqual('%s.importing-%s' % (image, shipment), other)
        self.assertFalse(os.path.exists(os.path.join(
            self.work, 'state-b', shipment, 'authorized.json')))

    def assert_imported(self, images, shipment):
        for image in images:
            self.assert_same(image, ['base'])
            self.assertNotIn('%s.importing-%s' % (image, shipment),
                             self.pool('site-b').list_images())
        self.assertTrue(os.path.exists(os.path.join(
            self.work, 'state-b', shipment, 'authorized.json')))

    def retry(self, images, devs, shipment, digest):
        self.restore(devs)
        self.ok(self.import_(devs, digest))
        self.assert_imported(images, shipment)

    # --- truncated ---------------------------------------------------------

    def test_shard_files_truncated_beyond_parity(self):
        [image], devs, shipment, digest = self.shipped()
        for d in devs[:2]:
            os.truncate(self.shards(d), os.path.getsize(self.shards(d)) // 2)
        line = self.refused(self.import_(devs, digest), 3, 'vms/' + image,
                            'chunk', 'truncated', devs[0], devs[1])
        self.assertNotIn(devs[2] + ')', line)
        self.assert_not_imported(image, shipment)
        self.retry([image], devs, shipment, digest)

    def test_one_shard_file_truncated_is_rebuilt_from_parity(self):
        [image], devs, shipment, digest = self.shipped()
        os.truncate(self.shards(devs[1]), 1000)
        self.ok(self.import_(devs, digest))
        self.assert_imported([image], shipment)

    def test_shard_files_truncated_during_the_import(self):
        images, devs, shipment, digest = self.shipped(images=2)
        # The first image is imported; the devices are cut as the import
        # reaches the second.
        hook = _TruncateWhenReached('import vms/%s@base' % images[1],
                                    [self.shards(d) for d in devs[:2]])
        keys = keystore.FileKeyStore(self.keys)
        state = os.path.join(self.work, 'state-b')
        run = importer.Importer(self.sites['site-b'], keys, state,
                                progress=hook)
        error = self.assertRaises(exception.ChunkCorrupt, run.run, devs,
                                  digest)
        self.assertTrue(hook.cut)
        for text in ('vms/' + images[1], 'truncated', devs[0], devs[1]):
            self.assertIn(text, str(error))
        # The first image was verified whole before it took its name: it
        # is exact; the shipment is not authorized until both are.
        self.assert_same(images[0], ['base'])
        self.assert_not_imported(images[1], shipment)
        self.restore(devs)
        importer.Importer(self.sites['site-b'], keys, state).run(devs, digest)
        self.assert_imported(images, shipment)

    # --- swapped ---------------------------------------------------------

    def test_shard_files_swapped_between_devices(self):
        [image], devs, shipment, digest = self.shipped()
        a, b = self.shards(devs[0]), self.shards(devs[1])
        os.rename(a, a + '.x')
        os.rename(b, a)
        os.rename(a + '.x', b)
        self.refused(self.import_(devs, digest), 3, 'vms/' + image, 'chunk',
                     'another device', devs[0], devs[1])
        self.assert_not_imported(image, shipment)
        self.retry([image], devs, shipment, digest)

    def test_devices_swapped_between_slots(self):
        # Each device's label says which it is: the order given, or the
        # directory a device was copied into, does not matter.
        [image], devs, shipment, digest = self.shipped()
        os.rename(devs[0], devs[0] + '.x')
        os.rename(devs[1], devs[0])
        os.rename(devs[0] + '.x', devs[1])
        self.ok(self.import_([devs[2], devs[0], devs[1]], digest))
        self.assert_imported([image], shipment)

    def test_manifest_files_swapped_on_a_device(self):
        # Export wrote version 1, seal version 2: swapped on one device,
        # its newest file holds the unsealed version 1.
        [image], devs, shipment, digest = self.shipped()
        v1, v2 = (os.path.join(devs[2], deviceset.manifest_name(v))
                  for v in (1, 2))
        os.rename(v1, v1 + '.x')
        os.rename(v2, v1)
        os.rename(v1 + '.x', v2)
        self.refused(self.import_(devs, digest), 3, devs[2],
                     'manifest.v000002 holds version 1')
        self.assert_not_imported(image, shipment)
        self.retry([image], devs, shipment, digest)

    # --- of another shipment ------------------------------------------

    def test_files_and_devices_of_another_shipment(self):
        [image], devs, shipment, digest = self.shipped()
        [other], odevs, oshipment, _ = self.shipped(seed=5)
        # A whole device of the other shipment in its place.
        shutil.rmtree(devs[1])
        shutil.copytree(odevs[1], devs[1])
        self.refused(self.import_(devs, digest), 2, shipment, oshipment,
                     devs[1])
        self.assert_not_imported(image, shipment)
        # Its manifest: it does not open with this shipment's key.
        self.restore(devs)
        name = deviceset.manifest_name(2)
        shutil.copy(os.path.join(odevs[1], name),
                    os.path.join(devs[1], name))
        self.refused(self.import_(devs, digest), 3, devs[1],
                     'fails authentication')
        self.assert_not_imported(image, shipment)
        # Its shard file on one device: every record of it fails to open
        # (another key), and parity rebuilds them.
        self.restore(devs)
        shutil.copy(self.shards(odevs[1]), self.shards(devs[1]))
        self.ok(self.import_(devs, digest))
        self.assert_imported([image], shipment)
        # On two devices: beyond parity.
        self._remove_imported(image)
        self.restore(devs)
        shutil.rmtree(os.path.join(self.work, 'state-b', shipment))
        for d, o in zip(devs[:2], odevs[:2]):
            shutil.copy(self.shards(o), self.shards(d))
        self.refused(self.import_(devs, digest), 3, 'vms/' + image, 'chunk')
        self.assert_not_imported(image, shipment)
        self.retry([image], devs, shipment, digest)
