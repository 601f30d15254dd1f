"""The source side of a round: one disk's changes, sent through a session.

:class:`DiskSender` reads the changes between two snapshots of an RBD image
and streams them to a terminal (checksum exchange, compression, several
streams, the proof of N-1, resuming at the acknowledged offset);
:class:`RateLimiter` caps the bytes per second. Used by catch-up
(``lsrp.catchup``) and the remote export (``lsrp.device.remote``).
"""

import asyncio
import collections
import time

from oslo_log import log as logging
import zstandard

from lsrp import digest as digest_mod
from lsrp import exception
from lsrp.protocol import frames
from lsrp.protocol import messages as m
from lsrp.rbd import snaprecord

LOG = logging.getLogger(__name__)

BLOCK = 1 << 20
WINDOW = 16
# Granularity of the checksum exchange: a changed 1 MiB piece is compared
# with the destination 64 KiB at a time, and only differing blocks travel.
DEDUP_BLOCK = 64 << 10


class RateLimiter(object):
    """A token bucket in bytes/s; ``rate`` may be changed at any time.

    ``rate`` 0 or None means no limit.
    """

    def __init__(self, rate=None, burst=None):
        self.rate = rate
        self._burst = burst
        self._tokens = 0.0
        self._last = time.monotonic()

    async def acquire(self, n):
        while self.rate:
            now = time.monotonic()
            burst = self._burst or max(self.rate / 10.0, 2 * BLOCK)
            self._tokens = min(burst, self._tokens +
                               (now - self._last) * self.rate)
            self._last = now
            if self._tokens >= n or (self._tokens >= 0 and n > burst):
                self._tokens -= n
                return
            await asyncio.sleep(min((n - self._tokens) / self.rate, 0.05))


# ``DiskSender.send(AT_DESTINATION, ...)``: from the destination's newest.
AT_DESTINATION = object()

# A round that fails with one of these is resumed under new sessions (the
# destination answers REPLICATION_START with the offset to go on from).
CONNECTION_LOST = (exception.ConnectionClosed, ConnectionError, OSError,
                   asyncio.TimeoutError, asyncio.IncompleteReadError,
                   exception.TerminalUnreachable)


def identity(cluster, image, snapshot):
    """The source's identity of ``snapshot`` of ``image`` (an open Image)."""
    return snaprecord.source_id(cluster.fsid, image, snapshot)


class DiskSender(object):
    """Sends one disk's changes between two snapshots through a session."""

    def __init__(self, client, cluster, spec, shipment, limiter=None,
                 compress=True, block=BLOCK, window=WINDOW, dedup=True):
        self.client = client
        self.cluster = cluster
        self.spec = spec
        self.shipment = shipment
        self.limiter = limiter or RateLimiter()
        self.compress = compress
        self.block = block
        self.window = window
        self.dedup = dedup
        self._zstd = zstandard.ZstdCompressor(level=1)
        self.changed = self.wire = 0
        self.resumed_at = 0
        self.ordered = None

    async def send(self, from_snapshot, snapshot, verify=False, extra=(),
                   describe=False, group=None, head=False, final=False,
                   record=False):
        """Returns (changed bytes, bytes on the wire).

        ``from_snapshot`` None sends every allocated extent (a full copy);
        AT_DESTINATION: the newest snapshot the destination reports.
        ``extra``: more connected TerminalClients; they attach to the same
        session and carry a share of the blocks (parallel streams).
        ``describe``: tell the destination the image's object size and
        features (a device set records them). ``group``: snapshot N waits
        for that group's commit (``commit_group``). ``head``: read the
        image's head, not a source snapshot (its writer is stopped: the
        final delta of a cutover), and name the result ``snapshot`` at the
        destination. ``final``: the last snapshot of a full copy; the
        destination names the image only then (needs ``verify``).
        ``record``: the destination keeps its state at ``snapshot`` in a
        record written after the group's deferred commit, not in a snapshot
        (``lsrp.server.records``; a cutover's final delta).
        """
        conn = self.client.conn
        opened = await conn.request(m.INIT_SESSION, {
            'disk': self.spec, 'shipment': self.shipment})
        session = opened['session']
        if from_snapshot is AT_DESTINATION:
            from_snapshot = opened.get('snapshot')
            if from_snapshot is None:
                raise exception.ShipmentError(
                    shipment=self.shipment, reason='the destination terminal '
                    '%s holds no snapshot of %s to go on from: send the seed '
                    'first' % (self.client.peer, self.spec))
        pool_name, name = self.spec.split('/', 1)
        with self.cluster.pool(pool_name) as pool:
            with pool.open_image(name, snapshot=None if head else snapshot,
                                 read_only=True if head else None) as image:
                size = image.size()
                start = {'snapshot': snapshot, 'size': size}
                ident = await asyncio.to_thread(identity, self.cluster, image,
                                                snapshot)
                if ident:
                    start['snapshot_id'] = ident
                if from_snapshot is not None:
                    start['from_snapshot'] = from_snapshot
                    base = await asyncio.to_thread(identity, self.cluster,
                                                   image, from_snapshot)
                    if base:
                        start['base_id'] = base
                if record:
                    start['record'] = True
                if describe:
                    info = await asyncio.to_thread(image.info)
                    start.update(object_size=info.object_size,
                                 features=list(info.feature_names))
                started = await self.start_round(conn, session, pool, name,
                                                 start)
                self.resumed_at = started['offset']
                if self.resumed_at >= size:
                    return 0, 0   # applied by an earlier run
                if self.resumed_at:
                    LOG.info('%s: the destination terminal %s has this round '
                             'up to offset %d; going on from there', self.spec,
                             self.client.peer, self.resumed_at)
                streams = [Stream(self, conn, session)]
                for client in extra:
                    await client.conn.request(m.INIT_SESSION, {
                        'disk': self.spec, 'shipment': self.shipment,
                        'attach': session})
                    streams.append(Stream(self, client.conn, session))
                changed = await self.stream(streams, image, from_snapshot,
                                            self.resumed_at)
                body = {'snapshot': snapshot}
                if group:
                    body['group'] = group
                if final:
                    body['final'] = True
                if verify:
                    digest = self.ordered and self.ordered.hexdigest(size)
                    body['image_digest'] = digest or await asyncio.to_thread(
                        image.digest, 'blake3')
        await conn.request(m.REPLICATION_COMPLETE, body, session)
        return changed, self.wire

    # The steps of send(), public for senders that split a round around
    # a pause (nova_fedex.final_delta.HeadSender): start_round() before
    # it, stream() and REPLICATION_COMPLETE inside it.

    async def start_round(self, conn, session, pool, name, start):
        """REPLICATION_START, with the proof of N-1; returns its answer.

        By digest when the destination has no record that ties its N-1 to
        ours (it answers BASE_UNPROVEN).
        """
        try:
            return await conn.request(m.REPLICATION_START, start, session)
        except exception.RemoteError as e:
            if e.code != 'BASE_UNPROVEN':
                raise
        LOG.info('%s: the destination terminal %s asks for the digest of %s '
                 'to prove it holds the same; reading it whole once at %s',
                 self.spec, self.client.peer, start['from_snapshot'],
                 self.cluster.site)

        def digest():
            with pool.open_image(name,
                                 snapshot=start['from_snapshot']) as base:
                return base.digest('blake3')
        start = dict(start, base_digest=await asyncio.to_thread(digest))
        return await conn.request(m.REPLICATION_START, start, session)

    def _pack(self, offset, data):
        body = {'offset': offset, 'data': data,
                'digest': digest_mod.block_digest(data)}
        if self.compress:
            packed = self._zstd.compress(data)
            if len(packed) < len(data):
                body.update(data=packed, zstd=True)
        return m.REPLICATION_UPDATE, body

    @staticmethod
    def _digests(data):
        return [digest_mod.block_digest(data[start:start + DEDUP_BLOCK])
                for start in range(0, len(data), DEDUP_BLOCK)]

    def _next(self, changes, done):
        item = next(changes, done)
        if self.ordered is not None and item is not done:
            piece, data = item
            if data is None:
                self.ordered.zeros(piece.offset, piece.length)
            else:
                self.ordered.data(piece.offset, data)
        return item

    async def stream(self, streams, image, from_snapshot, start=0):
        """Deal the changed pieces over the streams, in turn; drain them.

        ``streams``: :class:`Stream` objects, one per connection attached
        to the session. Returns the changed bytes.
        """
        changes = image.iter_changes(from_snapshot, chunk_size=self.block,
                                     start=start)
        self.changed = self.wire = 0
        # A whole image sent from its start: its digest on the way.
        self.ordered = (digest_mod.OrderedDigest()
                        if from_snapshot is None and not start else None)
        done = object()
        turn = 0
        reading = None
        try:
            while True:
                # Shielded: a cancelled round still waits for the read
                # running in its thread (below) before the image closes.
                reading = asyncio.ensure_future(
                    asyncio.to_thread(self._next, changes, done))
                item = await asyncio.shield(reading)
                if item is done:
                    break
                piece, data = item
                self.changed += piece.length
                await streams[turn % len(streams)].piece(piece, data)
                turn += 1
            for stream in streams:
                await stream.drain()
        finally:
            # NOTE: close the read-ahead here, not when the garbage
            # collector finds it: its thread pool then joins its threads
            # from whatever thread the collector runs in - once, from a
            # thread being started, which deadlocked.
            if reading is not None:
                await asyncio.wait([reading])
            await asyncio.to_thread(changes.close)
            for stream in streams:
                stream.abandon()
        return self.changed


class Stream(object):
    """One connection's share of a round: what it has in flight."""

    def __init__(self, sender, conn, session):
        self.sender = sender
        self.conn = conn
        self.session = session
        self.acks = collections.deque()      # updates in flight
        self.compares = collections.deque()  # checksum exchanges in flight

    async def _send(self, type_, body, size):
        sender = self.sender
        await sender.limiter.acquire(size)
        self.acks.append((type_, await self.conn.submit(type_, body,
                                                        self.session)))
        sender.wire += size
        while len(self.acks) >= sender.window:
            type_, future = self.acks.popleft()
            self.conn.check(await future, type_)

    async def _send_data(self, offset, data):
        type_, body = await asyncio.to_thread(self.sender._pack, offset, data)
        await self._send(type_, body, len(body['data']) + frames.HEADER_SIZE)

    async def _send_zero(self, offset, length):
        await self._send(m.REPLICATION_ZERO, {
            'offset': offset, 'length': length}, frames.HEADER_SIZE + 16)

    async def _settle_compare(self):
        offset, data, future = self.compares.popleft()
        if future is None:
            await self._send_zero(offset, data)   # (data: its length)
            return
        differ = self.conn.check(await future, m.REPLICATION_CHECKSUM)
        for i in differ['differ']:
            start = i * DEDUP_BLOCK
            await self._send_data(offset + start,
                                  data[start:start + DEDUP_BLOCK])

    async def piece(self, piece, data):
        sender = self.sender
        if data is None and self.compares:
            # NOTE: behind the data of the pieces before it. A stream's
            # writes must go in offset order: the terminal takes the end of
            # the last one it applied as the point a resumed round goes on
            # from. A zero sent ahead of data still waiting for its
            # checksum answer made a resume skip that data.
            self.compares.append((piece.offset, piece.length, None))
        elif data is None:
            await self._send_zero(piece.offset, piece.length)
        elif sender.dedup:
            digests = await asyncio.to_thread(sender._digests, data)
            sender.wire += 32 * len(digests) + frames.HEADER_SIZE
            self.compares.append((piece.offset, data, await self.conn.submit(
                m.REPLICATION_CHECKSUM, {'offset': piece.offset,
                                         'block': DEDUP_BLOCK,
                                         'digests': digests}, self.session)))
            if len(self.compares) >= sender.window:
                await self._settle_compare()
        else:
            await self._send_data(piece.offset, data)

    def abandon(self):
        """Answers nobody will wait for (the round failed): retrieved.

        Else each one logs "Future exception was never retrieved".
        """
        pending = ([f for _, f in self.acks] +
                   [f for _, _, f in self.compares if f is not None])
        self.acks.clear()
        self.compares.clear()
        for future in pending:
            future.add_done_callback(_retrieve)

    async def drain(self):
        while self.compares:
            await self._settle_compare()
        while self.acks:
            type_, future = self.acks.popleft()
            self.conn.check(await future, type_)


# The names these had before HeadSender used them (tests patch them).
_Stream = Stream


def _retrieve(future):
    if not future.cancelled():
        future.exception()
