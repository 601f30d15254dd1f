"""Whole-image digests equal ``rbd export <spec> - | sha256sum``."""

import os
import random

from tests.functional import base

MiB = 1 << 20
GiB = 1 << 30


class TestDigest(base.FunctionalTestCase):

    def test_sparse_image_at_snapshot_and_head(self):
        pool, name = self.new_image(1 * GiB)
        rng = random.Random(7)
        with pool.open_image(name) as img:
            for _ in range(20):
                img.write(rng.randrange(0, GiB - MiB), rng.randbytes(
                    rng.randrange(1, MiB)))
            img.zero(3 * MiB + 1, 10 * MiB)
            img.create_snapshot('s')
            img.write(GiB - 3, b'end')
            head = img.digest()
        with pool.open_image(name, snapshot='s') as snap:
            at_snap = snap.digest()
        self.assertEqual(self.cli_sha256('site-a', 'vms/%s@s' % name), at_snap)
        self.assertEqual(self.cli_sha256('site-a', 'vms/%s' % name), head)
        self.assertNotEqual(at_snap, head)

    def test_empty_image(self):
        pool, name = self.new_image(64 * MiB)
        with pool.open_image(name) as img:
            self.assertEqual(self.cli_sha256('site-a', 'vms/%s' % name),
                             img.digest())

    def test_clone_includes_parent_data(self):
        pool, parent = self.new_image(32 * MiB)
        with pool.open_image(parent) as img:
            img.write(0, os.urandom(20 * MiB))
            img.create_snapshot('tmpl')
            img.protect_snapshot('tmpl')
        child = self.name('clone')
        pool.clone_image(parent, 'tmpl', child)
        self.addCleanup(self._remove_image, 'site-a', 'vms', child)
        with pool.open_image(child) as img:
            img.write(5 * MiB + 7, os.urandom(MiB))
            img.zero(15 * MiB, 3)
            ours = img.digest()
        self.assertEqual(self.cli_sha256('site-a', 'vms/%s' % child), ours)

    def test_blake3_matches_python_blake3_of_cli_stream(self):
        import blake3
        pool, name = self.new_image(48 * MiB)
        with pool.open_image(name) as img:
            img.write(12345, os.urandom(9 * MiB))
            ours = img.digest('blake3')
        stream = self.rbd_cli('site-a', 'export', '--no-progress',
                              'vms/%s' % name, '-', binary=True)
        self.assertEqual(blake3.blake3(stream).hexdigest(), ours)
