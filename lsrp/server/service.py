"""The terminal service: serves LSRP over mutual TLS to other terminals.

Each connection must start with a HANDSHAKE of the same protocol version.
A source then opens a session per disk (INIT_SESSION, only for disks of
shipments this terminal imported: ``<state_dir>/<shipment>/authorized.json``)
and streams rounds into it. A malformed or disallowed frame gets an ERROR
frame and the connection is closed; other connections are not affected.
"""

import asyncio
import os
import ssl

from oslo_log import log as logging

from lsrp import exception
from lsrp.protocol import connection as connection_mod
from lsrp.protocol import frames
from lsrp.protocol import sessions as sessions_mod
from lsrp.server import groups as groups_mod
from lsrp.server import handler as handler_mod
from lsrp.server import inflight as inflight_mod
from lsrp.server import session as session_mod
from lsrp import tls

LOG = logging.getLogger(__name__)
# Seconds between a deferred commit's answer and its records' writes.
RECORD_DELAY = 0.5

# Moved to lsrp.server.handler and .session; the names stay here for the
# callers of old.
PeerHandler = handler_mod.PeerHandler
SharedSession = session_mod.SharedSession


class TerminalServer(object):

    def __init__(self, name, cluster, state_dir, ssl_context, host, port,
                 workers=4, frame_timeout=30, resume_timeout=300,
                 key_store=None, device_options=None):
        self.name = name
        self.cluster = cluster
        self.state_dir = state_dir
        self.ssl_context = ssl_context
        self.host, self.port = host, port
        os.makedirs(state_dir, exist_ok=True)
        self.sessions = sessions_mod.SessionRegistry(
            os.path.join(state_dir, 'sessions.json'))
        self._server = None
        self._handlers = set()
        self._tasks = set()
        # session id -> SharedSession: several connections (parallel
        # streams) may write one session's round.
        self.shared = {}
        self.workers = asyncio.Semaphore(workers)
        self.frame_timeout = frame_timeout
        # For shipments written onto devices here (lsrp.device.receiver).
        self.key_store = key_store
        self.device_options = device_options or {}
        # disk -> (SharedSession, offset, timer): rounds whose source was
        # lost, kept for a new session to resume until the timer fires.
        self.resume_timeout = resume_timeout
        self.kept = {}
        self.groups = groups_mod.GroupLog(state_dir)
        self._dropping = {}   # disk -> task rolling a kept round back
        # (disk, snapshot) -> task writing the record of a deferred commit
        self._records = {}

    async def start(self):
        # Commits a killed terminal left half done are finished first.
        # Then heads a killed terminal left mid-round go back to N-1.
        if self.cluster is not None:
            await asyncio.to_thread(self.groups.recover, self.cluster)
            await asyncio.to_thread(
                inflight_mod.InFlight(self.state_dir).recover, self.cluster)
        # TLS is started per connection (``_accept``): a refused handshake
        # is then ours to log, with the peer's address and the reason.
        self._server = await asyncio.start_server(
            self._accept, self.host, self.port,
            limit=frames.MAX_BODY + frames.HEADER_SIZE)
        self.port = self._server.sockets[0].getsockname()[1]
        LOG.info('%s: serving LSRP on %s:%d', self.name, self.host,
                 self.port)

    async def stop(self):
        """Stop accepting, end every connection, roll back open rounds."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for handler in list(self._handlers):
            await handler.close()
        # Connections that ended by themselves may still be closing their
        # sinks (rolling back): wait for them, or the rollback is lost.
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for disk in list(self.kept):
            shared, _, timer = self.kept.pop(disk)
            timer.cancel()
            await self._drop(shared, 'the terminal stops')
        await asyncio.gather(*self._dropping.values(),
                             return_exceptions=True)

    # --- records of deferred commits (lsrp.server.records) ----------------

    def write_records(self, group, snapshot, pending):
        """Write a deferred commit's records once its answer is out.

        They start :data:`RECORD_DELAY` later: the resumed guest's first
        writes at B go first.
        """
        async def write():
            await asyncio.sleep(RECORD_DELAY)
            return await asyncio.to_thread(self.groups.record, group,
                                           pending)
        task = asyncio.get_running_loop().create_task(write())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        for disk in pending:
            self._records[(disk, snapshot)] = task

        def forget(_):
            for disk in pending:
                if self._records.get((disk, snapshot)) is task:
                    del self._records[(disk, snapshot)]
        task.add_done_callback(forget)

    async def record_written(self, disk, snapshot, timeout=300):
        """Wait for the record of ``disk`` at ``snapshot`` being written."""
        task = self._records.get((disk, snapshot))
        if task is not None:
            await asyncio.wait_for(asyncio.shield(task), timeout)

    # --- rounds kept for a resume ------------------------------------------

    def keep(self, shared):
        """Keep a round whose streams are all gone; False if it cannot be."""
        offset = shared.frontier()
        if (not self.resume_timeout or offset is None
                or shared.sink.durable_progress):
            return False
        LOG.warning('%s of shipment %s: the source %s was lost mid-round; '
                    'the round is kept %d s for a new session to resume at '
                    'offset %d', shared.disk, shared.shipment, shared.peer,
                    self.resume_timeout, offset)
        timer = asyncio.get_running_loop().call_later(
            self.resume_timeout, self._expire, shared)
        self.kept[shared.disk] = (shared, offset, timer)
        return True

    def _expire(self, shared):
        entry = self.kept.get(shared.disk)
        if entry is None or entry[0] is not shared:
            return
        del self.kept[shared.disk]
        task = asyncio.ensure_future(self._drop(
            shared, 'no source resumed the round in %d s'
            % self.resume_timeout))
        self._dropping[shared.disk] = task
        task.add_done_callback(
            lambda t: self._dropping.pop(shared.disk, None))

    async def _drop(self, shared, why):
        LOG.warning('%s of shipment %s (from %s): %s; rolling it back',
                    shared.disk, shared.shipment, shared.peer, why)
        try:
            await asyncio.to_thread(shared.sink.abort)
        except exception.FedexException as e:
            LOG.error('%s of shipment %s: rollback failed: %s', shared.disk,
                      shared.shipment, e)
        finally:
            await asyncio.to_thread(shared.sink.close)

    def live_round(self, disk, shipment):
        """The SharedSession of a round of ``disk`` under way, or None."""
        shared = self.shared.get(self.sessions.current(disk))
        if (shared is None or shared.sink is None
                or shared.shipment != shipment
                or self.sessions.state(disk) not in handler_mod._UNDER_WAY):
            return None
        return shared

    async def take_over(self, old):
        """A new session takes the round of ``old``: ``(sink, offset, group)``.

        A source whose connections broke may come back before this side
        noticed. Call it once the new session is open: the old session's
        frames are refused from then on, and those being applied are
        waited for (they count for nothing in the offset).
        """
        offset = old.frontier()
        sink, old.sink = old.sink, None
        while old.busy:
            await asyncio.sleep(0.01)
        LOG.warning('%s of shipment %s: a new session takes the round from '
                    '%s over at offset %s', old.disk, old.shipment, old.peer,
                    offset)
        return sink, offset or 0, old.group

    async def take_kept(self, disk, shipment):
        """The kept round of ``disk``, as ``(sink, offset, group)``, or None.

        ``group``: the group commit its prepared round waits for, if any.
        """
        if disk in self._dropping:
            await asyncio.gather(self._dropping[disk],
                                 return_exceptions=True)
        entry = self.kept.pop(disk, None)
        if entry is None:
            return None
        shared, offset, timer = entry
        timer.cancel()
        if shared.shipment != shipment:
            await self._drop(shared, 'another shipment took the disk')
            return None
        return shared.sink, offset, shared.group

    async def _handshake(self, writer):
        """TLS on a new connection; False (logged) if the peer is refused."""
        address = writer.get_extra_info('peername') or ('?', 0)
        address = '%s:%s' % tuple(address[:2])
        try:
            # NOTE: no await (and no wait_for, a task of its own) before
            # this: the stream would read the peer's ClientHello first,
            # and the handshake would wait for it for ever.
            await writer.start_tls(self.ssl_context,
                                   ssl_handshake_timeout=self.frame_timeout)
        except (ssl.SSLError, ConnectionError, OSError,
                asyncio.TimeoutError) as e:
            reason = (getattr(e, 'verify_message', None) or
                      getattr(e, 'reason', None) or str(e) or
                      type(e).__name__)
            LOG.warning('%s: refused peer %s: TLS handshake failed: %s',
                        self.name, address, reason)
            writer.transport.abort()
            return False
        return True

    async def _accept(self, reader, writer):
        if self.ssl_context is not None and not await self._handshake(
                writer):
            return
        ssl_object = writer.get_extra_info('ssl_object')
        peer = tls.peer_name(ssl_object) if ssl_object else None
        conn = connection_mod.Connection(reader, writer, peer or '?',
                                         self.frame_timeout)
        address = writer.get_extra_info('peername') or ('?', 0)
        handler = handler_mod.PeerHandler(self, conn, peer,
                                          '%s:%s' % tuple(address[:2]))
        self._handlers.add(handler)
        task = asyncio.current_task()
        self._tasks.add(task)
        try:
            await handler.run()
        finally:
            await handler.close()
            self._handlers.discard(handler)
            self._tasks.discard(task)
