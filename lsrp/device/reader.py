"""Reading chunks back from a device set, repairing from parity.

A stripe is read as its k data shards straight off the devices. Only when a
device is missing, or a chunk in the stripe fails its digest, is the stripe
rebuilt from parity; with a damaged shard, each shard in turn is left out
until the chunk checks out.
"""

import collections
import concurrent.futures
import itertools
import threading

import numpy

from lsrp.device import deviceset
from lsrp.device import erasure
from lsrp import exception
from lsrp import memory


class ChunkReader(object):

    def __init__(self, devset, crypto, manifest, cache_stripes=3,
                 workers=2):
        self.devset = devset
        self.crypto = crypto
        self.manifest = manifest
        self.coder = erasure.StripeCoder(devset.k, devset.m, devset.code)
        self._cache = collections.OrderedDict()
        self._cache_size = cache_stripes
        self.repaired = 0
        self._pool = concurrent.futures.ThreadPoolExecutor(workers)
        # Shard files and the stripe cache are shared: several threads may
        # read at once (see read_many); decrypting runs outside the lock.
        self._lock = threading.RLock()

    def read_many(self, wanted, parallel=True, check_digest=True):
        """Plaintexts of ``[(digest, image, offset)]``, in order.

        With ``parallel``, decrypting and checking them runs on the worker
        threads; without, on the calling thread (itself a worker). Without
        ``check_digest`` the plaintexts are authenticated (AES-GCM) but not
        hashed: see ``ShipmentCrypto.open_chunk``.
        """
        records = [self._record(digest) for digest, _, _ in wanted]

        def open_(dr):
            return dr[1] is not None and self.crypto.open_chunk(
                *dr, check_digest=check_digest)
        pairs = zip((w[0] for w in wanted), records)
        opened = (self._pool.map(open_, pairs) if parallel
                  else [open_(p) for p in pairs])
        return [plain if plain else self.read(*w)
                for w, plain in zip(wanted, opened)]

    def read_into(self, wanted, out, check_digest=True):
        """Plaintexts of ``[(digest, image, offset, length)]`` into ``out``.

        One after the other, on the calling thread: ``out`` is a writable
        buffer (a bytearray, or a view of one) of their total length. Each
        is decrypted and decompressed in place (see
        ``ShipmentCrypto.open_chunk_into``); one that does not open is
        repaired as ``read`` does, or raises ChunkCorrupt.
        """
        view = memoryview(out)
        pos = 0
        for digest, image, offset, length in wanted:
            piece = view[pos:pos + length]
            record = self._record(digest)
            if record is None or not self.crypto.open_chunk_into(
                    digest, record, piece, check_digest=check_digest):
                plain = self.read(digest, image, offset)
                if len(plain) != length:
                    raise exception.ChunkCorrupt(
                        shipment=self.manifest.shipment_id,
                        chunk=digest[:16], image=image, offset=offset,
                        reason='its plaintext holds %d bytes, its run %d'
                        % (len(plain), length))
                piece[:] = plain
            pos += length
        if pos != len(view):
            raise ValueError('read_into: %d bytes wanted into a buffer of %d'
                             % (pos, len(view)))

    def _record(self, digest):
        location = self.manifest.chunks.get(digest)
        if location is None:
            return None
        stripe, start, length = location
        with self._lock:
            data = self._stripe(stripe)
        # A view, not a copy: the record is only decrypted from.
        return (None if data is None
                else memoryview(data)[start:start + length])

    def close(self):
        self._pool.shutdown()

    def _shards(self, stripe):
        data_length, shard_length, offset = self.manifest.stripes[stripe]
        return {j: s for j in range(self.devset.n)
                for s in [self.devset.read_shard(stripe, j, offset, 0,
                                                 shard_length)]
                if s is not None}

    def _data_shards(self, stripe):
        """The stripe's data read off its k data shards, or None.

        The common case: no parity read, no decoding, and the shards land
        in one buffer (a view of it is returned: no join, no slice copy).
        """
        data_length, shard_length, offset = self.manifest.stripes[stripe]
        # numpy.empty: not zeroed first (bytearray's memset showed in perf);
        # page-aligned, for O_DIRECT reads (lsrp.memory keeps it in the
        # heap, so it is not faulted in afresh either).
        size = shard_length * self.devset.k
        raw = numpy.empty(size + memory.PAGE, numpy.uint8)
        skip = -raw.ctypes.data % memory.PAGE
        view = memoryview(raw[skip:skip + size])
        for j in range(self.devset.k):
            if not self.devset.read_shard_into(
                    stripe, j, offset, view[j * shard_length:
                                            (j + 1) * shard_length],
                    direct=True):
                return None
        return view[:data_length]

    def _stripe(self, stripe, leave_out=()):
        key = (stripe, tuple(leave_out))
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        data = None if leave_out else self._data_shards(stripe)
        if data is None:
            data_length = self.manifest.stripes[stripe][0]
            shards = self._shards(stripe)
            for j in leave_out:
                shards.pop(j, None)
            data = (self.coder.decode(shards, data_length)
                    if len(shards) >= self.devset.k else None)
        self._cache[key] = data
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return data

    def read(self, digest, image='?', offset=0):
        """The plaintext of chunk ``digest``, verified; raises ChunkCorrupt."""
        if digest not in self.manifest.chunks:
            raise exception.ChunkCorrupt(
                shipment=self.manifest.shipment_id, chunk=digest[:16],
                image=image, offset=offset, reason='not in the manifest')
        record = self._record(digest)
        if record is not None:
            plain = self.crypto.open_chunk(digest, record)
            if plain is not None:
                return plain
        with self._lock:
            return self._repair(digest, image, offset)

    def _repair(self, digest, image, offset):
        stripe, start, length = self.manifest.chunks[digest]
        # Damaged: leave out shards, one combination at a time.
        for count in range(1, self.devset.m + 1):
            for leave_out in itertools.combinations(range(self.devset.n),
                                                    count):
                data = self._stripe(stripe, leave_out)
                if data is None:
                    continue
                plain = self.crypto.open_chunk(digest,
                                               data[start:start + length])
                if plain is not None:
                    self.repaired += 1
                    # Later chunks of this stripe: use the good copy.
                    self._cache[(stripe, ())] = data
                    return plain
        missing = self.devset.missing()
        raise exception.ChunkCorrupt(
            shipment=self.manifest.shipment_id, chunk=digest[:16],
            image=image, offset=offset,
            reason='stripe %d fails its digest with every %d of %d shards%s'
            '; %s' % (stripe, self.devset.k, self.devset.n,
                      ' (missing devices: %s)' % missing if missing else '',
                      self._suspects(stripe)))

    def _suspects(self, stripe):
        """Which devices hold the stripe, and those whose file is short.

        A shard file cut short (a copy interrupted, a truncated file) is
        named as such; else the devices of the stripe are listed: one of
        them holds damaged data, or another device's or shipment's.
        """
        _, shard_length, offset = self.manifest.stripes[stripe]
        short, held = [], []
        for j in range(self.devset.n):
            index = self.devset.device_of(stripe, j)
            if index not in self.devset.paths:
                continue
            where = 'device %d (%s)' % (index, self.devset.paths[index])
            held.append(where)
            size = self.devset.shard_file_size(index)
            if size is None:
                short.append('%s has no %s' % (where, deviceset.SHARDS))
            elif size < offset + shard_length:
                short.append('%s: %s is truncated (%d bytes; the stripe '
                             'ends at %d)' % (where, deviceset.SHARDS, size,
                                              offset + shard_length))
        if short:
            return '; '.join(short)
        return ('its shards are on %s: damaged, or copied from another '
                'device or shipment' % ', '.join(held))
