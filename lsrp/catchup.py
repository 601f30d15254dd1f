"""WAN catch-up: rounds of changed blocks until the remainder is small.

With the seed imported at the destination (same snapshot name, digest
verified), each round takes snapshot N of every disk at the source, sends
the extents changed since N-1 to the destination terminal, which applies
them and takes snapshot N. Rounds stop when the next round is estimated to
fit the threshold, or when they cannot converge (the disks are written as
fast as the link carries): that is said with the figures, never looped on.
"""

import asyncio
import collections
import ssl
import time
import uuid

from oslo_log import log as logging
import zstandard

from lsrp import digest as digest_mod
from lsrp import exception
from lsrp.protocol import connection as connection_mod
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


class TerminalClient(object):
    """A connection from this terminal to another terminal's lsrp-server."""

    def __init__(self, host, port, ssl_context, server_name, name):
        self.host, self.port = host, port
        self.ssl_context = ssl_context
        self.server_name = server_name
        self.name = name
        self.conn = None

    @property
    def peer(self):
        return '%s at %s:%d' % (self.server_name, self.host, self.port)

    async def connect(self, timeout=30):
        """Connect and shake hands; errors name the terminal and the cause.

        Raises TerminalRefused (TLS: a certificate refused either way) or
        TerminalUnreachable (anything else before the handshake answer).
        """
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(
                self.host, self.port, ssl=self.ssl_context,
                server_hostname=self.server_name,
                limit=frames.MAX_BODY + frames.HEADER_SIZE), timeout)
        except ssl.SSLCertVerificationError as e:
            raise exception.TerminalRefused(
                peer=self.peer, reason='certificate verify failed: %s'
                % (e.verify_message or e.reason)) from e
        except ssl.SSLError as e:
            raise exception.TerminalRefused(
                peer=self.peer, reason='TLS handshake failed: %s'
                % (e.reason or e)) from e
        except asyncio.TimeoutError as e:
            raise exception.TerminalUnreachable(
                peer=self.peer, reason='no connection within %s s'
                % timeout) from e
        except OSError as e:
            raise exception.TerminalUnreachable(
                peer=self.peer, reason=e.strerror or str(e)
                or type(e).__name__) from e
        self.conn = connection_mod.Connection(reader, writer, self.peer)
        self.conn.start_receiving()
        hello = uuid.uuid4().hex
        try:
            body = await asyncio.wait_for(self.conn.request(m.HANDSHAKE, {
                'version': frames.VERSION, 'id': hello,
                'peer': self.name}), timeout)
        except ssl.SSLError as e:
            await self.close()
            raise exception.TerminalRefused(
                peer=self.peer, reason='it refused our certificate: %s'
                % (e.reason or e)) from e
        except (exception.ConnectionClosed, ConnectionError, OSError,
                asyncio.IncompleteReadError, asyncio.TimeoutError) as e:
            await self.close()
            raise exception.TerminalRefused(
                peer=self.peer, reason='it closed the connection during the '
                'handshake (%s): it may refuse our certificate (see its '
                'log)' % (str(e) or type(e).__name__)) from e
        if body['id'] != hello or body['version'] != frames.VERSION:
            raise exception.ProtocolError(
                code='BAD_VERSION', reason='handshake answered with version '
                '%d and id %s' % (body['version'], body['id']))
        return self

    async def send_config_file(self, session, name, data, piece=1 << 20):
        """D8: send a VM's configuration file within a disk's session."""
        for offset in range(0, max(len(data), 1), piece):
            chunk = data[offset:offset + piece]
            await self.conn.request(m.TRANSFER_CONFIG_FILE, {
                'name': name, 'offset': offset, 'data': chunk,
                'last': offset + piece >= len(data)}, session)

    async def close(self):
        if self.conn is not None:
            await self.conn.close()


# ``DiskSender.send(AT_DESTINATION, ...)``: from the destination's newest.
AT_DESTINATION = object()

RoundReport = collections.namedtuple(
    'RoundReport', 'round snapshot changed_bytes wire_bytes seconds '
                   'dirty_rate wire_rate estimate resumes')

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
                   describe=False, group=None, head=False):
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
        destination.
        """
        conn = self.client.conn
        opened = await conn.request(m.INIT_SESSION, {
            'disk': self.spec, 'shipment': self.shipment})
        session = opened['session']
        if from_snapshot is AT_DESTINATION:
            from_snapshot = opened.get('snapshot')
            if from_snapshot is None:
                raise exception.ShipmentError(
                    shipment=self.shipment, reason='the destination holds no '
                    'snapshot of %s to go on from: send the seed first'
                    % self.spec)
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
                if describe:
                    info = await asyncio.to_thread(image.info)
                    start.update(object_size=info.object_size,
                                 features=list(info.feature_names))
                started = await self._start(conn, session, pool, name,
                                            start)
                self.resumed_at = started['offset']
                if self.resumed_at >= size:
                    return 0, 0   # applied by an earlier run
                if self.resumed_at:
                    LOG.info('%s: the destination has this round up to '
                             'offset %d; going on from there', self.spec,
                             self.resumed_at)
                streams = [_Stream(self, conn, session)]
                for client in extra:
                    await client.conn.request(m.INIT_SESSION, {
                        'disk': self.spec, 'shipment': self.shipment,
                        'attach': session})
                    streams.append(_Stream(self, client.conn, session))
                changed = await self._stream(streams, image, from_snapshot,
                                             self.resumed_at)
                body = {'snapshot': snapshot}
                if group:
                    body['group'] = group
                if verify:
                    digest = self.ordered and self.ordered.hexdigest(size)
                    body['image_digest'] = digest or await asyncio.to_thread(
                        image.digest, 'blake3')
        await conn.request(m.REPLICATION_COMPLETE, body, session)
        return changed, self.wire

    async def _start(self, conn, session, pool, name, start):
        """REPLICATION_START, with the proof of N-1.

        By digest when the destination has no record that ties its N-1 to
        ours (it answers BASE_UNPROVEN).
        """
        try:
            return await conn.request(m.REPLICATION_START, start, session)
        except exception.RemoteError as e:
            if e.code != 'BASE_UNPROVEN':
                raise
        LOG.info('%s: the destination asks for the digest of %s to prove '
                 'it holds the same; reading it whole once', self.spec,
                 start['from_snapshot'])

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

    async def _stream(self, streams, image, from_snapshot, start=0):
        """Deal the changed pieces over the streams, in turn; drain them."""
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


class _Stream(object):
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

    async def _settle_compare(self):
        offset, data, future = self.compares.popleft()
        differ = self.conn.check(await future, m.REPLICATION_CHECKSUM)
        for i in differ['differ']:
            start = i * DEDUP_BLOCK
            await self._send_data(offset + start,
                                  data[start:start + DEDUP_BLOCK])

    async def piece(self, piece, data):
        sender = self.sender
        if data is None:
            await self._send(m.REPLICATION_ZERO, {
                'offset': piece.offset, 'length': piece.length},
                frames.HEADER_SIZE + 16)
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
                   [f for _, _, f in self.compares])
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


def _retrieve(future):
    if not future.cancelled():
        future.exception()


async def commit_group(client, group, disks, snapshot, phases=('commit',)):
    """C4: ``snapshot`` on all ``disks`` or none.

    One terminal holds all the disks here, so it is its own coordinator:
    commit checks that every disk is prepared, as prepare would. A group
    spread over several terminals would send ``prepare`` to each first.
    """
    for phase in phases:
        await client.conn.request(m.CTL_GROUP_PREPARE_AND_COMMIT, {
            'group': group, 'phase': phase, 'disks': list(disks),
            'snapshot': snapshot})


class CatchUp(object):
    """Rounds for a set of disks, ``streams`` connections per disk."""

    def __init__(self, cluster, connect, shipment, disks, base_snapshot,
                 threshold_bytes=8 << 20, max_rounds=10, prefix=None,
                 limiter=None, compress=True, report=None, dedup=True,
                 streams=1, threshold_seconds=None, retries=3,
                 retry_delay=1.0):
        self.cluster = cluster
        self.connect = connect          # async () -> TerminalClient
        self.shipment = shipment
        self.disks = list(disks)
        self.previous = base_snapshot
        self.threshold = threshold_bytes
        # Or: the next round would take no longer than this at the rate the
        # last one reached.
        self.threshold_seconds = threshold_seconds
        self.max_rounds = max_rounds
        self.prefix = prefix or '%s-r' % shipment
        self.limiter = limiter or RateLimiter()
        self.compress = compress
        self.report = report or (lambda r: None)
        self.dedup = dedup
        self.streams = streams
        self.retries = retries
        self.retry_delay = retry_delay
        self.rounds = []
        self._last_snapshot_time = None
        self._next = None      # the number of the next new round snapshot
        self._pending = None   # a round snapshot a killed run did not send

    def _number(self, name):
        """N of a round snapshot ``<prefix>N`` of this shipment, or None."""
        rest = name[len(self.prefix):]
        if name.startswith(self.prefix) and rest.isdigit():
            return int(rest)
        return None

    def _source_snapshots(self):
        """Per disk, the user snapshots at the source, oldest first."""
        out = []
        for spec in self.disks:
            pool_name, name = spec.split('/', 1)
            with self.cluster.pool(pool_name) as pool:
                with pool.open_image(name) as image:
                    out.append([s.name for s in image.list_snapshots()
                                if s.namespace == 'user'])
        return out

    async def plan(self):
        """Where this run starts: after a kill -9, where the last one was.

        Starts from the newest snapshot that every disk has at both sites
        and that is the base or a round of this shipment taken after it; a
        round snapshot the source has beyond that and the destination not
        (a run killed mid-round) is sent first, under its name (the
        destination may resume it). New rounds are numbered past every
        round snapshot either site holds: names never collide. Whether the
        destination's N-1 really is the source's is proved at each START.
        """
        source = await asyncio.to_thread(self._source_snapshots)
        client = await self.connect()
        try:
            state = await client.conn.request(m.GET_SERVER_STATE, {
                'shipment': self.shipment, 'disks': self.disks})
        finally:
            await client.close()
        there = state.get('snapshots') or [[] for _ in self.disks]
        both = [n for n in source[0] if all(n in s for s in source)]
        if self.previous not in both:
            raise exception.ShipmentError(
                shipment=self.shipment, reason='the source has no snapshot '
                '%s of every disk (%s) to start from' % (
                    self.previous, ', '.join(self.disks)))
        at_destination = set.intersection(*[set(t) for t in there])
        later = [n for n in both[both.index(self.previous) + 1:]
                 if self._number(n) is not None]
        for name in later:
            if name in at_destination:
                self.previous = name
        unsent = later[later.index(self.previous) + 1:] \
            if self.previous in later else later
        self._pending = unsent[-1] if unsent else None
        numbers = [self._number(n) for names in source + there
                   for n in names]
        self._next = max([n for n in numbers if n is not None],
                         default=0) + 1
        if self._pending or self.previous in later:
            LOG.info('going on from %s%s', self.previous,
                     ', with %s first' % self._pending
                     if self._pending else '')

    async def round(self, number=None, verify=False):
        """One round: snapshot, send every disk in parallel, report.

        ``number`` counts the rounds of this run (reports); the snapshot
        is named after ``plan``'s numbering.
        """
        if self._next is None:
            await self.plan()
        if number is None:
            number = len(self.rounds) + 1
        begin = time.monotonic()
        if self._pending:
            snapshot, self._pending = self._pending, None
        else:
            snapshot = '%s%d' % (self.prefix, self._next)
            self._next += 1
            await asyncio.to_thread(self.cluster.snapshot_images,
                                    self.disks, snapshot)
        since = begin - (self._last_snapshot_time or begin)
        self._last_snapshot_time = begin
        changed = wire = resumes = 0
        for attempt in range(self.retries + 1):
            senders, failures = await self._send_all(snapshot, verify)
            # Pieces sent again after a resume count twice: the estimate
            # of the next round errs high, never low.
            wire += sum(s.wire for s in senders)
            changed += sum(s.changed for s in senders)
            if not failures:
                break
            lost = [f for f in failures if isinstance(f, CONNECTION_LOST)]
            if len(lost) < len(failures) or attempt == self.retries:
                raise failures[0]
            resumes += 1
            LOG.warning('round %d: connection lost (%s); resuming under new '
                        'sessions in %.0f s', number, lost[0],
                        self.retry_delay)
            await asyncio.sleep(self.retry_delay)
        seconds = time.monotonic() - begin
        dirty_rate = changed / since if since else None
        wire_rate = wire / seconds if seconds else None
        # What the next round will put on the wire: what is written during
        # this one, shrunk as this round's changes were (compression, dedup,
        # and extents that report whole new objects of which little is new).
        ratio = wire / changed if changed else 1.0
        estimate = (dirty_rate * seconds * ratio if dirty_rate is not None
                    else wire)
        report = RoundReport(number, snapshot, changed, wire, seconds,
                             dirty_rate, wire_rate, estimate, resumes)
        self.rounds.append(report)
        self.previous = snapshot
        self.report(report)
        return report

    async def _send_all(self, snapshot, verify):
        """Every disk's share of a round; returns (senders, exceptions)."""
        clients, senders, failures = [], [], []
        try:
            for _ in self.disks:
                mine = []
                clients.append(mine)
                for _ in range(self.streams):
                    mine.append(await self.connect())
            senders = [DiskSender(mine[0], self.cluster, spec, self.shipment,
                                  self.limiter, self.compress,
                                  dedup=self.dedup)
                       for mine, spec in zip(clients, self.disks)]
            results = await asyncio.gather(*[
                sender.send(self.previous, snapshot, verify, mine[1:],
                            group=snapshot)
                for sender, mine in zip(senders, clients)],
                return_exceptions=True)
            failures = [r for r in results if isinstance(r, BaseException)]
            if not failures:
                # Snapshot N appears on every disk at once, or on none.
                await commit_group(clients[0][0], snapshot, self.disks,
                                   snapshot)
        except CONNECTION_LOST as e:
            failures.append(e)
        finally:
            for mine in clients:
                for client in mine:
                    await client.close()
        return senders, failures

    async def run(self):
        """Rounds until the estimate fits; returns the list of reports.

        Raises ShipmentError when the rounds cannot converge.
        """
        first = len(self.rounds) + 1
        for number in range(first, first + self.max_rounds):
            report = await self.round(number)
            if report.estimate <= self.threshold:
                return self.rounds
            if (self.threshold_seconds and report.wire_rate and
                    report.estimate / report.wire_rate
                    <= self.threshold_seconds):
                return self.rounds
            # The wire traffic the writers make per second: the estimate
            # is that much over one round's time.
            needed = report.estimate / report.seconds if report.seconds else 0
            if (number >= first + 2 and report.dirty_rate
                    and report.wire_rate and needed >= report.wire_rate
                    and report.wire_bytes >= self.rounds[-2].wire_bytes):
                raise exception.ShipmentError(
                    shipment=self.shipment, reason='catch-up cannot converge:'
                    ' the disks change %.1f MB/s worth of wire traffic and the'
                    ' rounds carry %.1f MB/s; round %d sent %.1f MB, no less '
                    'than the one before. Raise the rate cap or slow the '
                    'writers.' % (needed / 1e6, report.wire_rate / 1e6,
                                  number, report.wire_bytes / 1e6))
        raise exception.ShipmentError(
            shipment=self.shipment, reason='no convergence in %d rounds: the '
            'next one would still send about %.1f MB (threshold %.1f MB)' % (
                self.max_rounds, self.rounds[-1].estimate / 1e6,
                self.threshold / 1e6))
