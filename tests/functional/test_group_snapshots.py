"""RBD group snapshots: one crash-consistent point across several images."""

import os

from lsrp import exception
from lsrp.rbd import GroupSnapshotRef
from tests.functional import base

MiB = 1 << 20


class TestGroupSnapshots(base.FunctionalTestCase):

    def _group_of(self, count):
        pool = self.pool()
        images = []
        for _ in range(count):
            _, name = self.new_image(16 * MiB)
            images.append(name)
        gname = self.name('grp')
        group = pool.create_group(gname)
        # Removed before the images (cleanups run last-in first-out).
        self.addCleanup(self._remove_group, gname)
        for name in images:
            group.add_image(name)
        return pool, group, images

    def _remove_group(self, gname):
        with self.sites['site-a'].pool('vms') as pool:
            group = pool.group(gname)
            for snap in group.list_snapshots():
                group.remove_snapshot(snap)
            for image in group.list_images():
                group.remove_image(image)
            pool.remove_group(gname)

    def test_group_snapshot_is_one_point_for_all_images(self):
        pool, group, images = self._group_of(3)
        for i, name in enumerate(images):
            with pool.open_image(name) as img:
                img.write(i * MiB + 11, os.urandom(2 * MiB))
                img.create_snapshot('before')
        self.assertEqual(sorted(images), group.list_images())
        ref = group.create_snapshot('fedex-t-base')
        self.assertEqual(GroupSnapshotRef(group.name, 'fedex-t-base'), ref)
        self.assertEqual(['fedex-t-base'], group.list_snapshots())
        # Nothing is written between the two: the user snapshot, which the
        # real CLI can export, holds the same content as the group snapshot.
        pool.snapshot_images(images, 'same-point')
        digests = {}
        for name in images:
            with pool.open_image(name, snapshot=ref) as img:
                digests[name] = img.digest()
                # Extents can end at a group snapshot (not start from one).
                self.assertTrue(list(img.extents('before')) == [])
            self.assertEqual(
                self.cli_sha256('site-a', 'vms/%s@same-point' % name),
                digests[name])
            with pool.open_image(name) as img:
                img.write(0, b'after the snapshot')
                snaps = img.list_snapshots()
            members = [s for s in snaps if s.namespace == 'group']
            self.assertEqual([(group.name, 'fedex-t-base')],
                             [(s.group, s.group_snapshot) for s in members])
        # Later writes do not change the group snapshot.
        for name in images:
            with pool.open_image(name, snapshot=ref) as img:
                self.assertEqual(digests[name], img.digest())

    def test_group_rollback(self):
        pool, group, images = self._group_of(2)
        for name in images:
            with pool.open_image(name) as img:
                img.write(0, b'v1' * 100)
        group.create_snapshot('g1')
        for name in images:
            with pool.open_image(name) as img:
                img.write(0, b'v2' * 100)
        group.rollback_to_snapshot('g1')
        for name in images:
            with pool.open_image(name) as img:
                self.assertEqual(b'v1' * 100, img.read(0, 200))

    def test_diff_from_group_snapshot_is_refused_clearly(self):
        pool, group, images = self._group_of(1)
        ref = group.create_snapshot('g1')
        with pool.open_image(images[0]) as img:
            e = self.assertRaises(exception.CephError, img.extents, ref)
        self.assertIn('group snapshot', str(e))
        self.assertRaises(exception.SnapshotNotFound, pool.open_image,
                          images[0], snapshot=GroupSnapshotRef(group.name,
                                                               'nope'))
