"""Appending chunks to a device set: dedup, sealing, striping, journaling.

The writer is the one place where bytes reach the devices during export and
consolidation. Its state after ``kill -9`` is the journal: every journal line
is written after the stripes it names are fsync'd on every device, and on
start the writer replays the journal and cuts the shard files back to what it
names, so work is neither lost nor stored twice.
"""

import concurrent.futures

from lsrp.device import erasure
from lsrp.device import manifest as manifest_mod


_ZEROS = bytes(1 << 20)


def _is_zero(chunk):
    # bytes comparison is a memcmp that stops at the first difference.
    if len(chunk) <= len(_ZEROS):
        return chunk == _ZEROS[:len(chunk)]
    return not any(chunk)


class ShipmentWriter(object):

    def __init__(self, devset, crypto, manifest, journal, shard_size,
                 workers=2):
        self.devset = devset
        self.crypto = crypto
        self.manifest = manifest
        self.journal = journal
        self.coder = erasure.StripeCoder(devset.k, devset.m)
        self.stripe_bytes = shard_size * devset.k
        self._buffer = bytearray()
        self._buffer_chunks = {}   # digest -> [offset in buffer, length]
        self._pending_runs = []    # [image, snapshot, run] since last journal
        self._piece_runs = []      # runs of the piece being processed
        self._pending_done = []
        self._cursor = None
        self._positions = {}       # (image, snapshot) -> resume offset
        self._done = set()
        self._pool = concurrent.futures.ThreadPoolExecutor(workers)
        self.new_bytes = 0         # record bytes written by this run
        self._replay()

    # --- resume ---------------------------------------------------------------

    def _replay(self):
        for entry in self.journal.entries():
            self._apply(entry)
        # Shards written after the last journal line are not accounted for:
        # drop them; the chunks they held will be written again, once.
        self.devset.truncate(self.manifest.shards_end())

    def _apply(self, entry):
        if entry.get('stripe'):
            self.manifest.stripes.append(entry['stripe'])
        self.manifest.chunks.update(entry.get('chunks', {}))
        for image, snap, run in entry.get('runs', []):
            self._snapshot(image, snap)['runs'].append(run)
        if entry.get('cursor'):
            image, snap, offset = entry['cursor']
            self._positions[(image, snap)] = offset
        for image, snap, digest in entry.get('done', []):
            self._snapshot(image, snap)['digest'] = digest
            self._done.add((image, snap))

    def _snapshot(self, image, snap):
        return self.manifest.images[image]['snapshots'][snap]

    def is_done(self, image, snap):
        return (image, snap) in self._done

    def resume_offset(self, image, snap):
        """Bytes of (image, snapshot) already recorded; 0 for a fresh start."""
        return self._positions.get((image, snap), 0)

    # --- adding content -------------------------------------------------------

    def add_zeros(self, offset, length):
        self._piece_runs.append([manifest_mod.ZERO, offset, length])

    def add_data(self, offset, data):
        """Add a data range.

        It is cut on the chunk grid: zero chunks become runs, known chunks
        are referenced, new chunks are sealed and appended.
        """
        size = self.manifest.chunk_size
        cuts = []
        pos, end = offset, offset + len(data)
        while pos < end:
            stop = min(end, (pos // size + 1) * size)
            cuts.append((pos, data[pos - offset:stop - offset]))
            pos = stop
        digests = list(self._pool.map(
            lambda c: None if _is_zero(c[1]) else self.crypto.digest(c[1]),
            cuts))
        fresh = {}
        for (pos, chunk), digest in zip(cuts, digests):
            if digest is None:
                self._piece_runs.append([manifest_mod.ZERO, pos, len(chunk)])
                continue
            self._piece_runs.append([manifest_mod.DATA, pos, len(chunk),
                                     digest])
            if (digest not in self.manifest.chunks
                    and digest not in self._buffer_chunks
                    and digest not in fresh):
                fresh[digest] = chunk
        records = self._pool.map(lambda kv: self.crypto.seal_chunk(*kv),
                                 fresh.items())
        for digest, record in zip(fresh, records):
            self._buffer_chunks[digest] = [len(self._buffer), len(record)]
            self._buffer += record
            if len(self._buffer) >= self.stripe_bytes:
                self.flush()

    def end_piece(self, image, snap, end):
        """Everything of (image, snap) before ``end`` has been added."""
        self._pending_runs.extend([image, snap, run]
                                  for run in self._piece_runs)
        self._piece_runs = []
        self._cursor = [image, snap, end]

    def end_snapshot(self, image, snap, digest):
        self._pending_done.append([image, snap, digest])
        self._done.add((image, snap))

    # --- to the devices ---------------------------------------------------

    def flush(self):
        """Write the buffered stripe (if any), then journal the progress."""
        entry = {}
        if self._buffer:
            stripe = len(self.manifest.stripes)
            shards = self.coder.encode(self._buffer)
            offset = self.manifest.shards_end()
            self.devset.write_stripe(stripe, offset, shards)
            self.devset.sync()
            entry['stripe'] = [len(self._buffer), len(shards[0]), offset]
            entry['chunks'] = {d: [stripe, off, length] for d, (off, length)
                               in self._buffer_chunks.items()}
            self.new_bytes += len(shards[0]) * len(shards)
        entry['runs'] = self._pending_runs
        entry['cursor'] = self._cursor
        entry['done'] = self._pending_done
        self.journal.append(entry)
        self._apply(entry)
        self._buffer = bytearray()
        self._buffer_chunks = {}
        self._pending_runs, self._pending_done = [], []

    def close(self):
        self._pool.shutdown()
        self.journal.close()
        self.devset.close()
