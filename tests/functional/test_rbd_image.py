"""Images, snapshots and I/O on the real clusters."""

import hashlib
import os

import fixtures

from lsrp import exception
from lsrp.rbd import Cluster
from tests.functional import base

MiB = 1 << 20


class TestImages(base.FunctionalTestCase):

    def test_create_with_features_and_info(self):
        pool, name = self.new_image(64 * MiB, object_size=1 * MiB)
        with pool.open_image(name) as img:
            info = img.info()
        self.assertEqual(64 * MiB, info.size)
        self.assertEqual(1 * MiB, info.object_size)
        self.assertEqual(20, info.order)
        self.assertEqual(['layering', 'exclusive-lock', 'object-map',
                          'fast-diff', 'deep-flatten'], info.feature_names)
        self.assertEqual((1 * MiB, 1), (info.stripe_unit, info.stripe_count))
        # The real CLI sees the same image.
        cli = self.rbd_cli('site-a', 'info', '--format', 'json',
                           'vms/%s' % name)
        self.assertIn('"fast-diff"', cli)
        self.assertIn('"size":%d' % (64 * MiB), cli)

    def test_remove(self):
        pool, name = self.new_image(MiB)
        pool.remove_image(name)
        self.assertNotIn(name, pool.list_images())
        e = self.assertRaises(exception.ImageNotFound, pool.open_image, name)
        self.assertIn('site-a', str(e))
        self.assertIn('vms/%s' % name, str(e))

    def test_sites_are_separate_clusters(self):
        self.assertNotEqual(self.sites['site-a'].fsid,
                            self.sites['site-b'].fsid)
        pool, name = self.new_image(MiB, site='site-b')
        self.assertIn(name, pool.list_images())
        self.assertNotIn(name, self.pool('site-a').list_images())

    def test_missing_things_are_named(self):
        cluster = self.sites['site-a']
        e = self.assertRaises(exception.PoolNotFound, cluster.pool, 'nopool')
        self.assertEqual('site-a: pool nopool does not exist', str(e))
        pool, name = self.new_image(MiB)
        e = self.assertRaises(exception.SnapshotNotFound, pool.open_image,
                              name, snapshot='nosnap')
        self.assertIn('vms/%s@nosnap' % name, str(e))
        e = self.assertRaises(exception.ImageExists, pool.create_image,
                              name, MiB)
        self.assertIn(name, str(e))
        e = self.assertRaises(exception.GroupNotFound, pool.group, 'nogroup')
        self.assertIn('vms/nogroup', str(e))

    def test_connect_with_wrong_keyring_fails_clearly(self):
        s = self.sandbox.site('site-a')
        bad = os.path.join(self.useFixture(fixtures.TempDir()).path,
                           'keyring')
        with open(bad, 'w') as f:
            f.write('[client.admin]\n\tkey = AQBzZXRlc3RrZXl0ZXN0a2V5dGVzdGtleQ==\n')
        cluster = Cluster(s.conf, bad, site='site-a', connect_timeout=5)
        e = self.assertRaises(exception.ClusterConnectError, cluster.connect)
        self.assertIn('site-a', str(e))
        self.assertIn('client.admin', str(e))

    def test_write_read_back_unaligned(self):
        pool, name = self.new_image(16 * MiB, object_size=1 * MiB)
        data = os.urandom(3 * MiB + 12345)
        offset = 777_777  # crosses object boundaries at odd offsets
        with pool.open_image(name) as img:
            img.write(offset, data)
            img.flush()
        with pool.open_image(name) as img:
            self.assertEqual(data, img.read(offset, len(data)))
            self.assertEqual(bytes(1000), img.read(offset - 1000, 1000))
            e = self.assertRaises(exception.InvalidExtent, img.zero,
                                  16 * MiB - 10, 11)
            self.assertIn('outside the image', str(e))

    def test_zero_is_exact_at_any_offset(self):
        pool, name = self.new_image(8 * MiB, object_size=1 * MiB)
        data = os.urandom(8 * MiB)
        with pool.open_image(name) as img:
            img.write(0, data)
            # Partial objects at both ends, whole objects in the middle.
            img.zero(1_000_001, 3 * MiB + 17)
            expected = (data[:1_000_001] + bytes(3 * MiB + 17)
                        + data[1_000_001 + 3 * MiB + 17:])
            self.assertEqual(expected, img.read(0, 8 * MiB))
            img.create_snapshot('z')
        self.assertEqual(hashlib.sha256(expected).hexdigest(),
                         self.cli_sha256('site-a', 'vms/%s@z' % name))

    def test_snapshot_life_cycle(self):
        pool, name = self.new_image(4 * MiB)
        with pool.open_image(name) as img:
            img.write(0, b'A' * 4096)
            img.create_snapshot('s1')
            img.write(0, b'B' * 4096)
            e = self.assertRaises(exception.SnapshotExists,
                                  img.create_snapshot, 's1')
            self.assertIn('vms/%s@s1' % name, str(e))
            img.protect_snapshot('s1')
            self.assertTrue(img.is_protected('s1'))
            snaps = img.list_snapshots()
            self.assertEqual(['s1'], [s.name for s in snaps])
            self.assertTrue(snaps[0].protected)
            self.assertEqual('user', snaps[0].namespace)
            self.assertRaises(exception.ImageBusy, img.remove_snapshot, 's1')
            img.unprotect_snapshot('s1')
            img.rollback_to_snapshot('s1')
            self.assertEqual(b'A' * 4096, img.read(0, 4096))
            img.remove_snapshot('s1')
            self.assertFalse(img.snapshot_exists('s1'))
            self.assertRaises(exception.SnapshotNotFound,
                              img.rollback_to_snapshot, 's1')
        cli = self.rbd_cli('site-a', 'snap', 'ls', 'vms/%s' % name)
        self.assertNotIn('s1', cli)

    def test_snapshot_reads_are_frozen(self):
        pool, name = self.new_image(4 * MiB)
        with pool.open_image(name) as img:
            img.write(100, b'old')
            img.create_snapshot('s')
            img.write(100, b'new')
        with pool.open_image(name, snapshot='s') as snap:
            self.assertEqual(b'old', snap.read(100, 3))
            self.assertRaises(exception.CephError, snap.write, 0, b'x')
        with pool.open_image(name) as img:
            self.assertEqual(b'new', img.read(100, 3))

    def test_same_snapshot_on_several_images(self):
        p, a = self.new_image(MiB)
        _, b = self.new_image(MiB)
        p.snapshot_images([a, b], 'fedex-x-base')
        for n in (a, b):
            with p.open_image(n) as img:
                self.assertTrue(img.snapshot_exists('fedex-x-base'))
