"""Changed extents agree with the real ``rbd diff`` for random workloads."""

import os
import random

from lsrp.rbd import extents as extents_mod
from lsrp.rbd.extents import Extent
from tests.functional import base

MiB = 1 << 20
SIZE = 24 * MiB


def cli_extents(entries):
    return list(extents_mod.merge(
        Extent(e['offset'], e['length'], e['exists'] == 'true')
        for e in entries))


class TestExtents(base.FunctionalTestCase):

    def _workload(self, img, rng, ops):
        """Random writes, zeroes and discards at non-aligned offsets."""
        for _ in range(ops):
            offset = rng.randrange(0, SIZE - 1)
            length = min(rng.choice([1, 511, 4097, 70_001, MiB + 3,
                                     2 * MiB + 12_345]), SIZE - offset)
            kind = rng.choice(['write', 'write', 'zero', 'discard'])
            if kind == 'write':
                img.write(offset, rng.randbytes(length))
            elif kind == 'zero':
                img.zero(offset, length)
            else:
                img.discard(offset, length)

    def _check_seed(self, seed, object_size):
        rng = random.Random(seed)
        pool, name = self.new_image(SIZE, object_size=object_size)
        with pool.open_image(name) as img:
            self._workload(img, rng, 12)
            img.create_snapshot('s1')
            self._workload(img, rng, 12)
            img.create_snapshot('s2')
            self._workload(img, rng, 6)
            head_since_s2 = list(img.extents('s2'))
        with pool.open_image(name, snapshot='s2') as s2:
            ours = list(s2.extents('s1'))
            since_creation = list(s2.extents())
            s2_data = s2.read(0, SIZE)
        spec = 'vms/%s' % name
        msg = 'seed %d object size %d' % (seed, object_size)
        self.assertEqual(cli_extents(self.cli_diff('site-a', spec + '@s2',
                                                   from_snap='s1')),
                         ours, msg)
        self.assertEqual(cli_extents(self.cli_diff('site-a', spec + '@s2')),
                         since_creation, msg)
        self.assertEqual(cli_extents(self.cli_diff('site-a', spec,
                                                   from_snap='s2')),
                         head_since_s2, msg)
        # What a user needs: s1 plus the listed extents (read from s2, zeros
        # where they no longer exist) is exactly s2.
        with pool.open_image(name, snapshot='s1') as s1:
            rebuilt = bytearray(s1.read(0, SIZE))
        for ext in ours:
            end = ext.offset + ext.length
            rebuilt[ext.offset:end] = (s2_data[ext.offset:end] if ext.exists
                                       else bytes(ext.length))
        self.assertTrue(bytes(rebuilt) == s2_data, msg)

    def test_random_patterns_small_objects(self):
        for seed in range(4):
            self._check_seed(seed, 1 * MiB)

    def test_random_patterns_default_objects(self):
        for seed in range(100, 103):
            self._check_seed(seed, 4 * MiB)

    def test_whole_object_extents_cover_changes(self):
        pool, name = self.new_image(SIZE, object_size=MiB)
        with pool.open_image(name) as img:
            img.write(0, os.urandom(10))
            img.create_snapshot('s1')
            img.write(5 * MiB + 3, os.urandom(10))
            coarse = list(img.extents('s1', whole_object=True))
            fine = list(img.extents('s1'))
        self.assertEqual([Extent(5 * MiB, MiB, True)], coarse)
        for ext in fine:
            self.assertTrue(any(c.offset <= ext.offset and
                                ext.offset + ext.length <= c.offset + c.length
                                for c in coarse))

    def test_sub_range(self):
        pool, name = self.new_image(SIZE, object_size=MiB)
        with pool.open_image(name) as img:
            img.write(MiB - 5, b'x' * 10)
            img.write(10 * MiB, b'y' * 10)
            self.assertEqual([Extent(MiB, 5, True)],
                             [e for e in img.extents(offset=MiB, length=MiB)
                              if e.length])
