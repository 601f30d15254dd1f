"""Appending chunks to a device set: dedup, sealing, striping, journaling.

The writer is the one place where bytes reach the devices during export and
consolidation. Its state after ``kill -9`` is the journal: every journal line
is written after the stripes it names are fsync'd on every device, and on
start the writer replays the journal and cuts the shard files back to what it
names, so work is neither lost nor stored twice.
"""

import collections
import concurrent.futures
import time

from lsrp.device import deviceset as deviceset_mod
from lsrp.device import erasure
from lsrp.device import manifest as manifest_mod
from lsrp import memory

# Progress is made durable (fsync of the shard files, then a journal line)
# after checkpoint_bytes or SYNC_SECONDS, whichever comes first: a crash
# redoes at most this much, and fsync does not run for every stripe.
SYNC_SECONDS = 5.0
# Stripes handed to the stripe thread and not yet written: bounds memory
# when the devices are slower than the source.
MAX_QUEUED_STRIPES = 2
# Stripes of at least this size are padded to whole DIRECT_ALIGN shards and
# written with O_DIRECT from reused aligned buffers; the padding of a small
# stripe (tests) would cost more than the page-cache copy it saves.
DIRECT_MIN_STRIPE = 1 << 20


_ZEROS = bytes(1 << 20)


def _is_zero(chunk):
    # NOTE: startswith is a memcmp that stops at the first difference and
    # takes a memoryview; memoryview == bytes compares byte by byte in Python.
    if len(chunk) <= len(_ZEROS):
        return _ZEROS.startswith(chunk)
    return not any(chunk)


class ShipmentWriter(object):

    _DATA, _ZEROS, _END = 'data', 'zeros', 'end'

    def __init__(self, devset, crypto, manifest, journal, shard_size,
                 workers=2, checkpoint_bytes=256 << 20):
        self.devset = devset
        self.crypto = crypto
        self.manifest = manifest
        self.journal = journal
        self.coder = erasure.StripeCoder(devset.k, devset.m, devset.code)
        self.stripe_bytes = shard_size * devset.k
        self._buffer, self._buffered = [], 0  # sealed records of a stripe
        self._buffer_chunks = {}   # digest -> [offset in buffer, length]
        self._committed = {}       # written, not yet journaled
        self._pending_runs = []    # [image, snapshot, run] since last journal
        self._piece_runs = []      # runs of the piece being processed
        self._pending_done = []
        self._cursor = None
        self._positions = {}       # (image, snapshot) -> resume offset
        self._done = set()
        self._workers = workers
        self.checkpoint_bytes = checkpoint_bytes
        self._pool = concurrent.futures.ThreadPoolExecutor(workers)
        # Pieces between add_data and the stripe (see _advance).
        self._pipeline = collections.deque()
        self._sealing_q = collections.deque()
        self._in_flight = {}       # digests being sealed
        # Pieces waiting in each stage: one per worker keeps them busy, and
        # each one waiting holds 4 MiB or more (peak RSS).
        self._depth = workers
        self._want_flush = False
        # Stripes are encoded and written by one thread of their own, in
        # order, while the next stripe's chunks are sealed.
        self._stripe_writer = concurrent.futures.ThreadPoolExecutor(1)
        self._direct = self.stripe_bytes >= DIRECT_MIN_STRIPE
        # One buffer per stripe queued, one being written, one being filled.
        self._buffers = memory.AlignedBuffers(keep=MAX_QUEUED_STRIPES + 2)
        self._writes = []
        self._unsynced = {'stripes': [], 'chunks': {}}
        self._last_sync = time.monotonic()
        self._replay()

    # --- resume ---------------------------------------------------------------

    def _replay(self):
        for entry in self.journal.entries():
            self._apply(entry)
        # Shards written after the last journal line are not accounted for:
        # drop them; the chunks they held will be written again, once.
        self.devset.truncate(self.manifest.shards_end())

    def _apply(self, entry):
        self.manifest.stripes.extend(entry.get('stripes', []))
        self.manifest.chunks.update(entry.get('chunks', {}))
        for image, snap, run in entry.get('runs', []):
            self._snapshot(image, snap)['runs'].append(run)
        if entry.get('cursor'):
            image, snap, offset = entry['cursor']
            self._positions[(image, snap)] = offset
        for image, snap, digest in entry.get('done', []):
            self._snapshot(image, snap)['digest'] = digest
            self._done.add((image, snap))
        for image, snap in entry.get('reset', []):
            self._snapshot(image, snap).update(runs=[], digest=None)
            self._positions.pop((image, snap), None)
            self._done.discard((image, snap))

    def _snapshot(self, image, snap):
        return self.manifest.images[image]['snapshots'][snap]

    def is_done(self, image, snap):
        return (image, snap) in self._done

    def resume_offset(self, image, snap):
        """Bytes of (image, snapshot) already recorded; 0 for a fresh start."""
        return self._positions.get((image, snap), 0)

    # --- adding content -------------------------------------------------------

    def add_zeros(self, offset, length):
        self._pipeline.append((self._ZEROS, offset, length))

    def add_data(self, offset, data):
        """Add a data range.

        It is cut on the chunk grid: zero chunks become runs, known chunks
        are referenced, new chunks are sealed and appended. The work runs
        on the worker threads, a few pieces ahead of the caller: see
        ``_advance``.
        """
        size = self.manifest.chunk_size
        cuts = []
        view = memoryview(data)  # slices without copies
        pos, end = offset, offset + len(data)
        while pos < end:
            stop = min(end, (pos // size + 1) * size)
            cuts.append((pos, view[pos - offset:stop - offset]))
            pos = stop
        # NOTE: one task per piece, not per chunk: a future per 64 KiB
        # chunk cost more Python time than hashing it.
        self._pipeline.append((self._DATA, cuts,
                               self._pool.submit(self._digests, cuts)))
        self._advance(self._depth)

    def _digests(self, cuts):
        return [None if _is_zero(c) else self.crypto.digest(c)
                for _, c in cuts]

    def _seal(self, fresh):
        return [self.crypto.seal_chunk(d, c) for d, c in fresh]

    def _advance(self, limit):
        """Move pieces along, in order, without waiting unless over ``limit``.

        Stage 1 (a piece's chunk digests are known): runs are recorded and
        new chunks handed to a worker to seal. Stage 2 (a piece's records
        are sealed): they are appended to the stripe. Both stages keep the
        order of the pieces, so the stripes are what a serial writer makes,
        and at most ``limit`` pieces wait in each (memory stays flat).
        """
        while self._pipeline or self._sealing_q:
            if self._pipeline and (len(self._pipeline) > limit
                                   or self._ready(self._pipeline[0])):
                self._stage1(self._pipeline.popleft())
            elif self._sealing_q and (len(self._sealing_q) > limit
                                      or self._sealing_q[0][1].done()):
                self._stage2(*self._sealing_q.popleft())
            else:
                break
        if self._want_flush and limit == self._depth:
            self.flush()

    def _ready(self, item):
        return item[0] != self._DATA or item[2].done()

    def _stage1(self, item):
        kind = item[0]
        if kind == self._ZEROS:
            self._piece_runs.append([manifest_mod.ZERO, item[1], item[2]])
            return
        if kind == self._END:
            _, image, snap, end = item
            self._pending_runs.extend([image, snap, run]
                                      for run in self._piece_runs)
            self._piece_runs = []
            self._cursor = [image, snap, end]
            return
        _, cuts, future = item
        fresh = {}
        for (pos, chunk), digest in zip(cuts, future.result()):
            if digest is None:
                self._piece_runs.append([manifest_mod.ZERO, pos, len(chunk)])
                continue
            self._piece_runs.append([manifest_mod.DATA, pos, len(chunk),
                                     digest])
            if (digest not in self.manifest.chunks
                    and digest not in self._committed
                    and digest not in self._buffer_chunks
                    and digest not in self._in_flight
                    and digest not in fresh):
                fresh[digest] = chunk
        if fresh:
            self._in_flight.update(dict.fromkeys(fresh))
            self._sealing_q.append((list(fresh), self._pool.submit(
                self._seal, list(fresh.items()))))

    def _stage2(self, digests, future):
        for digest, record in zip(digests, future.result()):
            del self._in_flight[digest]
            self._buffer_chunks[digest] = [self._buffered, len(record)]
            # NOTE: records are joined once per stripe; appending to one
            # growing bytearray copied it over and over under the GIL.
            self._buffer.append(record)
            self._buffered += len(record)
            if self._buffered >= self.stripe_bytes:
                self._write_stripe()
                if (sum(s[0] for s in self._unsynced['stripes'])
                        >= self.checkpoint_bytes
                        or time.monotonic() - self._last_sync
                        >= SYNC_SECONDS):
                    # Not here: pieces before this one may still be
                    # sealing; flush once the stages are drained.
                    self._want_flush = True

    def end_piece(self, image, snap, end):
        """Everything of (image, snap) before ``end`` has been added."""
        self._pipeline.append((self._END, image, snap, end))
        self._advance(self._depth)

    def reset(self, image, snap):
        """Forget what was added for (image, snapshot): it starts over.

        For content that turned out wrong (its digest did not match). The
        chunks stay in the stripes; later content may still refer to them.
        """
        self._advance(0)
        self._piece_runs = []
        self._pending_runs = [r for r in self._pending_runs
                              if (r[0], r[1]) != (image, snap)]
        self._pending_done = [d for d in self._pending_done
                              if (d[0], d[1]) != (image, snap)]
        self._cursor = None
        self.flush()
        entry = {'reset': [[image, snap]]}
        self.journal.append(entry)
        self._apply(entry)

    def end_snapshot(self, image, snap, digest):
        self._pending_done.append([image, snap, digest])
        self._done.add((image, snap))

    # --- to the devices ---------------------------------------------------

    def _write_stripe(self):
        """Hand the buffered stripe to the stripe thread."""
        stripe = len(self.manifest.stripes) + len(self._unsynced['stripes'])
        if self._direct:
            length, shard_length, job = self._aligned_stripe()
        else:
            length = self._buffered
            # The padding is joined in too: the coder then cuts whole
            # shards out of it without another copy.
            data = b''.join(self._buffer
                            + [bytes(self.coder.padding(length))])
            shard_length = self.coder.shard_length(length)
            job = (self._encode_and_write, data)
        offset = (self.manifest.shards_end()
                  + sum(s[1] for s in self._unsynced['stripes']))
        self._unsynced['stripes'].append([length, shard_length, offset])
        self._unsynced['chunks'].update(
            {d: [stripe, off, length]
             for d, (off, length) in self._buffer_chunks.items()})
        # The chunks are committed for dedup from now on: a later reference
        # is journaled only with or after the stripe that holds them.
        self._committed.update(self._buffer_chunks)
        while sum(not w.done() for w in self._writes) >= MAX_QUEUED_STRIPES:
            concurrent.futures.wait(self._writes,
                                    return_when=concurrent.futures.FIRST_COMPLETED)
        self._writes.append(self._stripe_writer.submit(
            job[0], stripe, offset, *job[1:]))
        self._buffer, self._buffered = [], 0
        self._buffer_chunks = {}

    def _aligned_stripe(self):
        """The buffered records laid out in an aligned buffer of n shards.

        The stripe's length is rounded up to k whole DIRECT_ALIGN shards
        and recorded so (the zeros at its end belong to no chunk): every
        shard file then grows by whole blocks and O_DIRECT can write it.
        Readers of any version cut shards the same way.
        """
        unit = self.coder.k * deviceset_mod.DIRECT_ALIGN
        length = -(-self._buffered // unit) * unit
        shard_length = length // self.coder.k
        buf = self._buffers.get(shard_length * self.coder.n)
        view = memoryview(buf)
        pos = 0
        for record in self._buffer:
            view[pos:pos + len(record)] = record
            pos += len(record)
        view[pos:length] = bytes(length - pos)
        del view
        return length, shard_length, (self._encode_into_and_write, buf,
                                      shard_length)

    def _encode_and_write(self, stripe, offset, data):
        self.devset.write_stripe(stripe, offset, self.coder.encode(data))

    def _encode_into_and_write(self, stripe, offset, buf, shard_length):
        try:
            self.devset.write_stripe(
                stripe, offset, self.coder.encode_into(buf, shard_length),
                direct=True)
        finally:
            self._buffers.put(buf)

    def flush(self):
        """Write what is buffered, fsync it, then journal the progress."""
        self._advance(0)
        self._want_flush = False
        if self._buffer:
            self._write_stripe()
        for future in self._writes:
            future.result()
        self._writes = []
        self.devset.sync()
        entry = {'stripes': self._unsynced['stripes'],
                 'chunks': self._unsynced['chunks'],
                 'runs': self._pending_runs, 'cursor': self._cursor,
                 'done': self._pending_done}
        self.journal.append(entry)
        self._apply(entry)
        self._unsynced = {'stripes': [], 'chunks': {}}
        self._committed = {}
        self._pending_runs, self._pending_done = [], []
        self._last_sync = time.monotonic()

    def close(self):
        self._pool.shutdown()
        self._stripe_writer.shutdown()
        self.journal.close()
        self.devset.close()
