"""One connected source terminal: its frames, dispatched to the sinks.

The connection's loop, the pipelined application of data frames (updates
and checksums of a session with parallel streams run at once, in the
server's worker threads), the dispatch of the others by type, and the
release of its sessions when it ends; the server
(``lsrp.server.service.TerminalServer``) holds what outlives a connection.
The frames other than updates are served by the methods of mixins, one
module a group: ``session_frames``, ``round_frames``, ``read_frames``,
``group_frames``, ``config_frames``.
"""

import asyncio
import collections
import itertools
import threading

from oslo_log import log as logging
import zstandard

from lsrp import digest as digest_mod
from lsrp import exception
from lsrp.protocol import frames
from lsrp.protocol import messages as m
from lsrp.protocol import sessions as sessions_mod
from lsrp.server import config_frames
from lsrp.server import group_frames
from lsrp.server import read_frames
from lsrp.server import round_frames
from lsrp.server import session_frames

LOG = logging.getLogger(__name__)
MAX_BLOCK = round_frames.MAX_BLOCK
_LOCAL = threading.local()
# Data frames of one connection applied at once (per connection; all
# connections share the server's worker threads).
PIPELINE = 4

_DATA = (m.REPLICATION_UPDATE, m.DELTA_CONSOLIDATION_UPDATE)
_WRITES = _DATA + (m.REPLICATION_ZERO,)
_CONCURRENT = _WRITES + (m.REPLICATION_CHECKSUM,)
# A round in these states has changed the image and has no snapshot N yet.
_UNDER_WAY = (sessions_mod.REPLICATING, sessions_mod.PREPARED)


class PeerHandler(session_frames.SessionFrames, round_frames.RoundFrames,
                  read_frames.ReadFrames, group_frames.GroupFrames,
                  config_frames.ConfigFrames):
    """One connected source terminal."""

    # Frame type -> the method serving it once the HANDSHAKE is done,
    # called with the frame and its place among the pipelined writes
    # (``queued``: None but for writes). A type not here is not served by
    # a terminal.
    HANDLERS = {
        m.GET_SERVER_STATE: '_server_state',
        m.INIT_SESSION: '_init_session',
        m.REPLICATION_START: '_start',
        m.DELTA_CONSOLIDATION_START: '_start',
        m.READ_OPEN: '_read_open',
        m.READ_CHANGES: '_read_changes',
        m.READ_NEXT: '_read_next',
        m.READ_DIGEST: '_read_digest',
        m.CTL_GROUP_PREPARE_AND_COMMIT: '_group',
        m.REPLICATION_UPDATE: '_update',
        m.DELTA_CONSOLIDATION_UPDATE: '_update',
        m.REPLICATION_ZERO: '_update',
        m.TRANSFER_CONFIG_FILE: '_config_file',
        m.REPLICATION_CHECKSUM: '_checksum',
        m.REPLICATION_COMPLETE: '_complete',
        m.DELTA_CONSOLIDATION_COMPLETE: '_complete',
    }

    def __init__(self, server, conn, peer, address='?'):
        self.server = server
        self.conn = conn
        self.peer = peer
        # Logs name the peer by certificate and address.
        self.label = '%s (%s)' % (peer or 'peer', address)
        self.shaken = False
        self.sessions = set()  # ids of the sessions this connection uses
        self._closed = False
        # Data frames being applied concurrently, and their order: a
        # stream's acknowledged offset only moves over a prefix of its
        # updates that are all applied.
        self._pending = set()
        self._slots = asyncio.Semaphore(PIPELINE)
        self._order = collections.deque()   # [session, end, done]
        # Reads of this connection (a terminal as a source): id -> ImageRead.
        self.reads = {}
        self._read_ids = itertools.count(1)

    async def run(self):
        try:
            while True:
                frame = await self.conn.recv()
                if self._pipelined(frame):
                    await self._slots.acquire()
                    task = asyncio.ensure_future(
                        self._concurrently(frame, self._queue(frame)))
                    self._pending.add(task)
                    task.add_done_callback(self._pending.discard)
                    continue
                # Anything else waits for the updates before it (COMPLETE
                # must see them all).
                await self._settle()
                if not await self._handle(frame, self._queue(frame)):
                    return
        except exception.ProtocolError as e:
            LOG.warning('%s: %s; closing the connection', self.label, e)
            try:
                await self.conn.send_error(e.code, str(e))
            except (exception.ConnectionClosed, OSError):
                pass
        except exception.ConnectionClosed as e:
            LOG.info('%s', e)
        except (ConnectionError, OSError, asyncio.IncompleteReadError) as e:
            LOG.info('%s: connection lost: %s', self.label, e)

    def _pipelined(self, frame):
        """Whether ``frame`` may be applied alongside the ones before it."""
        if not self.shaken or frame.type not in _CONCURRENT:
            return False
        shared = self.server.shared.get(frame.session)
        return (frame.session in self.sessions and shared is not None
                and shared.sink is not None and shared.sink.parallel_streams)

    def _queue(self, frame):
        if frame.type not in _WRITES or frame.session not in self.sessions:
            return None
        entry = [frame.session, None, False]
        self._order.append(entry)
        return entry

    def _applied(self, entry, end):
        """An update is applied (``end``) or failed (None)."""
        entry[1:] = [end, True]
        while self._order and self._order[0][2]:
            session, end, _ = self._order.popleft()
            shared = self.server.shared.get(session)
            if shared is not None and end is not None:
                shared.acked[self] = end

    async def _settle(self):
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)

    async def _concurrently(self, frame, entry):
        try:
            if not await self._handle(frame, entry):
                await self.conn.close()   # ends run() too
        except (exception.ConnectionClosed, OSError):
            pass
        finally:
            self._slots.release()

    async def _handle(self, frame, entry):
        """Dispatch one frame; False if the connection must be closed."""
        try:
            await self._dispatch(frame, entry)
        except exception.ProtocolError as e:
            self._failed(frame, entry)
            # Answer the request that failed, by its seq.
            await self.conn.send_error(e.code, str(e), frame.seq,
                                       frame.session)
            if e.code == 'NOT_ALLOWED':
                LOG.warning('%s: refused %s: %s', self.label, frame.name, e)
            if self.shaken and e.code in (
                    'BAD_STATE', 'NOT_ALLOWED', 'STALE_SESSION',
                    'DIGEST_MISMATCH', 'BASE_UNPROVEN', 'BASE_DIFFERS'):
                # The peer spoke correctly but asked for something not
                # allowed now: keep the connection.
                return True
            LOG.warning('%s: %s; closing the connection', self.label, e)
            return False
        except exception.FedexException as e:
            if isinstance(e, exception.ConnectionClosed) and \
                    self.conn.gone is not None:
                # This connection's peer left while it was answered: not
                # the request's failure. Its round stays resumable (a
                # failed one is rolled back when its streams are gone).
                raise
            # A failure here (Ceph, a full pool): the peer hears what it
            # was; the connection stays usable.
            self._failed(frame, entry)
            LOG.error('%s: %s failed: %s', self.label, frame.name, e)
            await self.conn.send_error('INTERNAL', str(e), frame.seq,
                                       frame.session)
        return True

    def _failed(self, frame, entry=None):
        if entry is not None:
            self._applied(entry, None)
        if frame.session in self.sessions:
            self.server.shared[frame.session].failed = True

    async def _sink_op(self, shared, fn, *args):
        """A sink operation; a session taking the sink over waits for it."""
        shared.busy += 1
        try:
            return await self._in_thread(fn, *args)
        finally:
            shared.busy -= 1

    async def _in_thread(self, fn, *args):
        async with self.server.workers:
            return await asyncio.to_thread(fn, *args)

    async def _dispatch(self, frame, entry=None):
        if frame.is_response:
            raise exception.ProtocolError(code='BAD_STATE',
                                          reason='unexpected response')
        if not self.shaken:
            await self._handshake(frame)
            return
        name = self.HANDLERS.get(frame.type)
        if name is None:
            raise exception.ProtocolError(
                code='NOT_ALLOWED', reason='%s is not served by a terminal' %
                frame.name)
        await getattr(self, name)(frame, entry)

    async def _handshake(self, frame):
        """The first frame: both ends speak the same version."""
        if frame.type != m.HANDSHAKE:
            raise exception.ProtocolError(
                code='BAD_STATE', reason='%s before HANDSHAKE' %
                frame.name)
        if frame.body['version'] != frames.VERSION:
            raise exception.ProtocolError(
                code='BAD_VERSION', reason='peer speaks version %d, we '
                'speak %d' % (frame.body['version'], frames.VERSION))
        self.shaken = True
        await self.conn.respond(frame, {'version': frames.VERSION,
                                        'id': frame.body['id'],
                                        'server': self.server.name})

    async def _update(self, frame, queued):
        """An update or a zeroed range, applied; ``queued`` its place."""
        shared = self._session(frame, sessions_mod.REPLICATING)
        disk, sink = shared.disk, shared.sink
        body = frame.body
        if frame.type == m.REPLICATION_ZERO:
            _check_range(disk, body['offset'], body['length'], shared.size)
            await self._sink_op(shared, sink.zero, body['offset'],
                                body['length'])
            end = body['offset'] + body['length']
        else:
            # Decompressing, hashing and writing all run in the worker
            # thread: zstd, BLAKE3 and librbd let go of the GIL.
            end = await self._sink_op(shared, _unpack_and_write, sink, disk,
                                      body, shared.size)
        if queued is not None:
            self._applied(queued, end)
        await self.conn.respond(frame, {'acked': end})

    def _shared(self, frame):
        if frame.session not in self.sessions:
            raise exception.StaleSession(code='STALE_SESSION', disk='?',
                                         session=frame.session, current=0)
        return self.server.shared[frame.session]

    def _session(self, frame, state=None):
        """The frame's SharedSession, checked: current, in ``state``.

        Callers take ``.sink`` from it at once: a session taken over later
        has none.
        """
        shared = self._shared(frame)
        disk = shared.disk
        self.server.sessions.check(disk, frame.session)
        if state and self.server.sessions.state(disk) != state:
            raise exception.ProtocolError(
                code='BAD_STATE', reason='%s: %s while %s' % (
                    disk, frame.name, self.server.sessions.state(disk)))
        return shared

    async def close(self):
        if self._closed:
            return
        self._closed = True
        try:
            # Writes still running end before a round is kept or rolled
            # back.
            await self._settle()
            for session in list(self.sessions):
                await self._release(session)
            reads, self.reads = self.reads, {}
            for read in reads.values():
                await self._in_thread(read.close)
        finally:
            self.sessions = set()
            await self.conn.close()

    async def _release(self, session):
        """This connection leaves a session; the last one closes the sink."""
        shared = self.server.shared[session]
        shared.streams -= 1
        if shared.streams > 0:
            return   # other streams of the session go on
        del self.server.shared[session]
        disk, sink = shared.disk, shared.sink
        if sink is None:
            return   # a new session took the round over
        kept = False
        try:
            # Only rounds this session still owns: kept for a resume, or
            # rolled back.
            if self.server.sessions.state(disk) in _UNDER_WAY:
                self.server.sessions.check(disk, session)
                kept = self.server.keep(shared)
                if not kept:
                    await self._in_thread(sink.abort)
        except exception.StaleSession:
            pass
        except exception.FedexException as e:
            LOG.error('%s: rollback failed: %s', disk, e)
        finally:
            if not kept:
                await self._in_thread(sink.close)


def _check_range(disk, offset, length, size):
    """Refuse a write past the end of the round's image (``size``).

    librbd would refuse it too, as an error of the terminal's (INTERNAL);
    a device set's writer would store it: the peer's error, said so.
    """
    if size is not None and offset + length > size:
        raise exception.ProtocolError(
            code='BAD_FIELD', reason='%s: %d bytes at offset %d end past '
            'the image\'s size in this round, %d' % (disk, length, offset,
                                                     size))


def _unpack_and_write(sink, disk, body, size=None):
    """Check an update's block against its digest and write it; its end."""
    data = body['data']
    if body.get('zstd'):
        try:
            data = _zstd().decompress(data, max_output_size=MAX_BLOCK)
        except zstandard.ZstdError as e:
            raise exception.ProtocolError(
                code='BAD_FIELD', reason='%s: block at %d does not '
                'decompress: %s' % (disk, body['offset'], e))
    _check_range(disk, body['offset'], len(data), size)
    if digest_mod.block_digest(data) != body['digest']:
        raise exception.ProtocolError(
            code='DIGEST_MISMATCH', reason='%s: block at %d' % (
                disk, body['offset']))
    sink.write(body['offset'], data)
    return body['offset'] + len(data)


def _zstd():
    # A decompressor is not thread-safe: one per worker thread.
    if not hasattr(_LOCAL, 'zstd'):
        _LOCAL.zstd = zstandard.ZstdDecompressor()
    return _LOCAL.zstd
