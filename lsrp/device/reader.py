"""Reading chunks back from a device set, repairing from parity.

A stripe is read as its k data shards straight off the devices. Only when a
device is missing, or a chunk in the stripe fails its digest, is the stripe
rebuilt from parity; with a damaged shard, each shard in turn is left out
until the chunk checks out.

Stripes are read outside the reader's lock, their k shards at once (one
thread per device: separate disks read in parallel), into page-aligned
buffers that are reused, and the next stripe is read ahead while the
current one is decrypted when stripes are wanted in order (an import): see
``ChunkReader._stripe_data``.
"""

import collections
import concurrent.futures
import itertools
import sys
import threading

import numpy

from lsrp.device import deviceset
from lsrp.device import erasure
from lsrp import exception
from lsrp import memory

_GRAIN = 1 << 20


class ChunkReader(object):

    def __init__(self, devset, crypto, manifest, cache_stripes=4,
                 workers=2, read_ahead=True):
        self.devset = devset
        self.crypto = crypto
        self.manifest = manifest
        self.coder = erasure.StripeCoder(devset.k, devset.m, devset.code)
        self._cache = collections.OrderedDict()
        self._cache_size = cache_stripes
        self.repaired = 0
        self._pool = concurrent.futures.ThreadPoolExecutor(workers)
        # Shard files and the stripe cache are shared: several threads may
        # read at once (see read_many); decrypting runs outside the lock,
        # and so does reading a stripe off the devices.
        self._lock = threading.RLock()
        self._loading = {}         # stripe -> Future of its data
        self._read_ahead = read_ahead
        self._last = None          # the stripe last asked for
        # One thread reads the next stripe ahead; k threads read the
        # shards of a stripe, one each.
        self._ahead = concurrent.futures.ThreadPoolExecutor(1)
        self._shard_io = (concurrent.futures.ThreadPoolExecutor(devset.k)
                          if devset.k > 1 else None)
        # Stripe buffers, reused once no view of them is left: a fresh
        # 8 MiB buffer was faulted in (and zeroed by the kernel) page by
        # page on every stripe, 4 % of an import's CPU in perf.
        self._buffers = []
        self._keep_buffers = cache_stripes + workers + 1
        self._closed = False

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
        data = self._stripe_data(stripe)
        # A view, not a copy: the record is only decrypted from.
        return (None if data is None
                else memoryview(data)[start:start + length])

    def close(self):
        self._closed = True
        self._ahead.shutdown()   # waits for a read ahead still running
        if self._shard_io is not None:
            self._shard_io.shutdown()
        self._pool.shutdown()

    def _shards(self, stripe):
        data_length, shard_length, offset = self.manifest.stripes[stripe]
        return {j: s for j in range(self.devset.n)
                for s in [self.devset.read_shard(stripe, j, offset, 0,
                                                 shard_length)]
                if s is not None}

    def _buffer(self, size):
        """A page-aligned writable view of ``size`` bytes, reused if free."""
        # Whole MiB: stripes differ by a few KiB, one buffer fits the next.
        need = -(-(size + memory.PAGE) // _GRAIN) * _GRAIN
        with self._lock:
            raw = found = small = None
            for raw in self._buffers:
                # The list, ``raw`` and getrefcount's argument: nothing
                # else (a view of it, cached or handed out, refers to it).
                if sys.getrefcount(raw) == 3:
                    if raw.nbytes >= need:
                        found = raw
                        break
                    small = raw
            if found is None:
                # numpy.empty: not zeroed first (bytearray's memset showed
                # in perf).
                found = numpy.empty(need, numpy.uint8)
                if small is not None:
                    # By identity: == compares numpy arrays element-wise.
                    self._buffers = [b for b in self._buffers
                                     if b is not small]
                if len(self._buffers) < self._keep_buffers:
                    self._buffers.append(found)
            del raw, small
        skip = -found.__array_interface__['data'][0] % memory.PAGE
        return memoryview(found[skip:skip + size])

    def _data_shards(self, stripe):
        """The stripe's data read off its k data shards, or None.

        The common case: no parity read, no decoding, and the shards land
        in one page-aligned buffer, for O_DIRECT (a view of it is returned:
        no join, no slice copy). The k shards are read at once.
        """
        data_length, shard_length, offset = self.manifest.stripes[stripe]
        view = self._buffer(shard_length * self.devset.k)

        def read(j):
            return self.devset.read_shard_into(
                stripe, j, offset,
                view[j * shard_length:(j + 1) * shard_length], direct=True)
        if self._shard_io is None:
            ok = all(read(j) for j in range(self.devset.k))
        else:
            ok = all(list(self._shard_io.map(read, range(self.devset.k))))
        return view[:data_length] if ok else None

    def _load(self, stripe):
        """A stripe's data off the devices, rebuilt from parity if need be."""
        data = self._data_shards(stripe)
        if data is None:
            data_length = self.manifest.stripes[stripe][0]
            shards = self._shards(stripe)
            data = (self.coder.decode(shards, data_length)
                    if len(shards) >= self.devset.k else None)
        return data

    def _stripe_data(self, stripe):
        """The stripe's data (None: unreadable), from the cache or read.

        Only one thread reads a given stripe; others wanting it wait for
        that read, not for the lock. When stripes are wanted in order, the
        next one is read ahead on a thread of its own.
        """
        ahead = None
        with self._lock:
            key = (stripe, ())
            sequential = self._last is not None and stripe in (
                self._last, self._last + 1)
            self._last = stripe
            if (self._read_ahead and sequential
                    and stripe + 1 < len(self.manifest.stripes)):
                ahead = self._start_loading(stripe + 1, background=True)
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
            future = self._loading.get(stripe)
            mine = future is None
            if mine:
                future = self._start_loading(stripe, background=False)
        del ahead
        if mine:
            self._finish_loading(stripe, future)
        return future.result()

    def _start_loading(self, stripe, background):
        """With the lock held: a Future of the stripe, read on a thread.

        None when it is cached or being read already (background).
        """
        if ((stripe, ()) in self._cache or stripe in self._loading
                or (background and self._closed)):
            return None
        future = concurrent.futures.Future()
        self._loading[stripe] = future
        if background:
            self._ahead.submit(self._finish_loading, stripe, future)
        return future

    def _finish_loading(self, stripe, future):
        try:
            data = self._load(stripe)
        except BaseException as e:
            with self._lock:
                del self._loading[stripe]
            future.set_exception(e)
            return
        with self._lock:
            self._put(stripe, (), data)
            del self._loading[stripe]
        future.set_result(data)

    def _put(self, stripe, leave_out, data):
        """With the lock held: cache a stripe's data."""
        self._cache[(stripe, tuple(leave_out))] = data
        self._cache.move_to_end((stripe, tuple(leave_out)))
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def _stripe(self, stripe, leave_out):
        """With the lock held: the stripe's data without some shards."""
        key = (stripe, tuple(leave_out))
        if key in self._cache:
            self._cache.move_to_end(key)
            return self._cache[key]
        data_length = self.manifest.stripes[stripe][0]
        shards = self._shards(stripe)
        for j in leave_out:
            shards.pop(j, None)
        data = (self.coder.decode(shards, data_length)
                if len(shards) >= self.devset.k else None)
        self._put(stripe, leave_out, data)
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
                    self._put(stripe, (), data)
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
