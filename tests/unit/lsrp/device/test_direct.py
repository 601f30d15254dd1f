"""Stripes written with O_DIRECT: aligned, readable, rebuilt from parity."""

import errno
import os
from unittest import mock

import fixtures
import numpy
import testtools

from lsrp.device import crypto as crypto_mod
from lsrp.device import deviceset
from lsrp.device import erasure
from lsrp.device import journal as journal_mod
from lsrp.device import manifest as manifest_mod
from lsrp.device import reader as reader_mod
from lsrp.device import writer as writer_mod
from lsrp import memory

SHARD = 1 << 20   # 2 MiB stripes: written with O_DIRECT
CHUNK = 64 << 10


def direct_supported(path):
    probe = os.path.join(path, 'probe')
    try:
        os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_DIRECT))
        return True
    except OSError:
        return False
    finally:
        if os.path.exists(probe):
            os.unlink(probe)


class TestEncodeInto(testtools.TestCase):

    def test_same_shards_as_encode(self):
        for k, m in ((2, 0), (2, 1), (3, 1), (2, 2)):
            coder = erasure.StripeCoder(k, m)
            length = k * 8192
            data = os.urandom(length - 100) + bytes(100)
            buf = memory.AlignedBuffers().get((k + m) * 8192)
            buf[:length] = data
            got = [bytes(s) for s in coder.encode_into(buf, 8192)]
            self.assertEqual([bytes(s) for s in coder.encode(data)], got,
                             (k, m))


class TestDirectStripes(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        self.paths = [os.path.join(self.root, 'dev%d' % i) for i in range(3)]
        self.crypto = crypto_mod.ShipmentCrypto(os.urandom(32), 'ship-1')
        self.devset = deviceset.DeviceSet.create(self.paths, 'ship-1', 2, 1,
                                                 self.crypto.key_check)
        # Random pieces (stored as they are), text (compressed), zeros.
        self.data = b''.join(
            os.urandom(CHUNK) if i % 3 else
            (b'line %d of a log\n' % i) * (CHUNK // 16)
            for i in range(96))[:96 * CHUNK] + bytes(4 * CHUNK)

    def export(self, devset):
        m = manifest_mod.Manifest.new('ship-1', {'site': 'x'}, CHUNK, 2, 1,
                                      ['a', 'b', 'c'], SHARD)
        m.images.append({'pool': 'p', 'name': 'i', 'snapshots': [
            {'name': 's', 'from': None, 'size': len(self.data),
             'digest': None, 'runs': []}]})
        w = writer_mod.ShipmentWriter(
            devset, self.crypto, m,
            journal_mod.Journal(os.path.join(self.root, 'journal')), SHARD)
        for offset in range(0, len(self.data), 4 << 20):
            w.add_data(offset, self.data[offset:offset + (4 << 20)])
            w.end_piece(0, 0, min(len(self.data), offset + (4 << 20)))
        w.flush()
        return m, w

    def read_all(self, m, devset):
        reader = reader_mod.ChunkReader(devset, self.crypto, m)
        out = bytearray()
        for run in m.images[0]['snapshots'][0]['runs']:
            out += (bytes(run[2]) if run[0] == 'z'
                    else reader.read(run[3], 'p/i', run[1]))
        reader.close()
        return bytes(out)

    def test_stripes_are_aligned_read_back_and_rebuilt(self):
        m, w = self.export(self.devset)
        if direct_supported(self.root):
            self.assertTrue(all(fd is not None
                                for fd in self.devset._direct.values()))
            self.assertEqual(3, len(self.devset._direct))
        w.close()
        self.assertGreater(len(m.stripes), 1)
        for length, shard_length, offset in m.stripes:
            self.assertEqual(0, shard_length % deviceset.DIRECT_ALIGN)
            self.assertEqual(0, offset % deviceset.DIRECT_ALIGN)
            self.assertEqual(2 * shard_length, length)
        sizes = {os.path.getsize(os.path.join(p, 'shards.dat'))
                 for p in self.paths}
        self.assertEqual({m.shards_end()}, sizes)
        self.assertEqual(self.data,
                         self.read_all(m, deviceset.DeviceSet.open(
                             self.paths)))
        # Without a data device: every stripe is rebuilt by XOR.
        os.unlink(os.path.join(self.paths[0], 'shards.dat'))
        self.assertEqual(self.data,
                         self.read_all(m, deviceset.DeviceSet.open(
                             self.paths)))

    def test_filesystem_refusing_o_direct_gets_buffered_writes(self):
        real_open = os.open

        def no_direct(path, flags, *args):
            if flags & os.O_DIRECT:
                raise OSError(errno.EINVAL, 'Invalid argument', path)
            return real_open(path, flags, *args)
        with mock.patch.object(deviceset.os, 'open', no_direct):
            m, w = self.export(self.devset)
        self.assertEqual({None}, set(self.devset._direct.values()))
        w.close()
        self.assertEqual(self.data,
                         self.read_all(m, deviceset.DeviceSet.open(
                             self.paths)))

    def read_into(self, m, devset):
        """The data runs decoded in place, group by group, as the import."""
        reader = reader_mod.ChunkReader(devset, self.crypto, m)
        runs = m.images[0]['snapshots'][0]['runs']
        out = bytearray(len(self.data))
        for i in range(0, len(runs), 7):
            group = [r for r in runs[i:i + 7] if r[0] == 'd']
            if group:
                start = group[0][1]
                length = sum(r[2] for r in group)
                reader.read_into([(r[3], 'p/i', r[1], r[2]) for r in group],
                                 memoryview(out)[start:start + length],
                                 check_digest=False)
        reader.close()
        return bytes(out)

    def test_read_into_decodes_in_place_and_repairs(self):
        m, w = self.export(self.devset)
        w.close()
        devset = deviceset.DeviceSet.open(self.paths)
        self.assertEqual(self.data, self.read_into(m, devset))
        if direct_supported(self.root):
            # The stripes were read around the page cache (data shards
            # rotate over the three devices).
            self.assertEqual(3, len([fd for fd in
                                     devset._direct_read.values()
                                     if fd is not None]))
        # A flipped byte in a data shard: the chunk fails AES-GCM and is
        # rebuilt from parity into its place.
        with open(os.path.join(self.paths[0], 'shards.dat'), 'r+b') as f:
            f.seek(100)
            byte = f.read(1)
            f.seek(100)
            f.write(bytes([byte[0] ^ 1]))
        self.assertEqual(self.data,
                         self.read_into(m, deviceset.DeviceSet.open(
                             self.paths)))

    def test_filesystem_refusing_o_direct_gets_buffered_reads(self):
        m, w = self.export(self.devset)
        w.close()
        real_open = os.open

        def no_direct(path, flags, *args):
            if flags & os.O_DIRECT:
                raise OSError(errno.EINVAL, 'Invalid argument', path)
            return real_open(path, flags, *args)
        devset = deviceset.DeviceSet.open(self.paths)
        with mock.patch.object(deviceset.os, 'open', no_direct):
            self.assertEqual(self.data, self.read_into(m, devset))
        self.assertEqual({None}, set(devset._direct_read.values()))

    def test_stripe_buffers_are_reused_only_once_nothing_views_them(self):
        m, w = self.export(self.devset)
        w.close()
        devset = deviceset.DeviceSet.open(self.paths)
        reader = reader_mod.ChunkReader(devset, self.crypto, m,
                                        cache_stripes=2, workers=1)
        self.addCleanup(reader.close)
        in_order = [d for d, _ in sorted(m.chunks.items(),
                                         key=lambda kv: kv[1][:2])]
        held = reader._record(in_order[0])   # a view into stripe 0's buffer
        before = bytes(held)
        made, loads = [], []
        real_empty, real_load = numpy.empty, reader._load

        def empty(*args):
            made.append(args)
            return real_empty(*args)

        def load(stripe):
            loads.append(stripe)
            return real_load(stripe)
        with mock.patch.object(reader_mod.numpy, 'empty', empty), \
                mock.patch.object(reader, '_load', load):
            for _ in range(3):
                for digest in reversed(in_order):
                    self.assertIsNotNone(reader.read(digest, 'p/i'))
        # Stripe 0's buffer was not read into while a view of it was held,
        # and the stripes read again and again went into kept buffers.
        self.assertEqual(before, bytes(held))
        self.assertGreater(len(loads), reader._keep_buffers)
        self.assertLessEqual(len(made), reader._keep_buffers)
        self.assertEqual(0, reader.repaired)

    def test_a_free_buffer_too_small_gives_way_to_a_larger_one(self):
        m, w = self.export(self.devset)
        w.close()
        reader = reader_mod.ChunkReader(deviceset.DeviceSet.open(self.paths),
                                        self.crypto, m, cache_stripes=1,
                                        workers=1)
        self.addCleanup(reader.close)
        self.assertEqual(1 << 20, len(reader._buffer(1 << 20)))
        self.assertEqual(1, len(reader._buffers))
        small = id(reader._buffers[0])   # not a reference: that holds it
        for size in (3 << 20, 3 << 20):
            view = reader._buffer(size)
            self.assertEqual(size, len(view))
            self.assertEqual(0, numpy.frombuffer(view, numpy.uint8)
                             .ctypes.data % memory.PAGE)
            del view
        self.assertEqual(1, len(reader._buffers))
        self.assertNotEqual(small, id(reader._buffers[0]))
