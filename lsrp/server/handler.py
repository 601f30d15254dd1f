"""One connected source terminal: its frames, dispatched to the sinks.

Authorization (``authorize``), the pipelined application of data frames,
sessions opened, attached to, taken over and released; the server
(``lsrp.server.service.TerminalServer``) holds what outlives a connection.
"""

import asyncio
import collections
import functools
import itertools
import os
import threading

from oslo_log import log as logging
import zstandard

from lsrp import access
from lsrp.device import receiver
from lsrp import digest as digest_mod
from lsrp import exception
from lsrp.protocol import frames
from lsrp.protocol import messages as m
from lsrp.protocol import sessions as sessions_mod
from lsrp.server import names
from lsrp.server import reads as reads_mod
from lsrp.server import session as session_mod
from lsrp.server import sinks
from lsrp import sink as sink_mod

LOG = logging.getLogger(__name__)
MAX_BLOCK = 16 << 20
MAX_CONFIG = 16 << 20
_LOCAL = threading.local()
# Data frames of one connection applied at once (per connection; all
# connections share the server's worker threads).
PIPELINE = 4

_DATA = (m.REPLICATION_UPDATE, m.DELTA_CONSOLIDATION_UPDATE)
_WRITES = _DATA + (m.REPLICATION_ZERO,)
_CONCURRENT = _WRITES + (m.REPLICATION_CHECKSUM,)
_START = (m.REPLICATION_START, m.DELTA_CONSOLIDATION_START)
_COMPLETE = (m.REPLICATION_COMPLETE, m.DELTA_CONSOLIDATION_COMPLETE)
_READS = (m.READ_OPEN, m.READ_CHANGES, m.READ_NEXT, m.READ_DIGEST)
# A round in these states has changed the image and has no snapshot N yet.
_UNDER_WAY = (sessions_mod.REPLICATING, sessions_mod.PREPARED)


class PeerHandler(object):
    """One connected source terminal."""

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
            return
        if frame.type == m.GET_SERVER_STATE:
            answer = {'state': 'ready', 'disks': sorted(
                self.server.shared[s].disk for s in self.sessions)}
            if 'disks' in frame.body:
                answer['disks'] = frame.body['disks']
                answer['snapshots'] = [await self._in_thread(
                    self._snapshots, frame.body.get('shipment', ''), disk)
                    for disk in frame.body['disks']]
            await self.conn.respond(frame, answer)
        elif frame.type == m.INIT_SESSION:
            await self._init_session(frame)
        elif frame.type in _START:
            shared = self._session(frame)
            disk, sink = shared.disk, shared.sink
            body = frame.body
            image = {k: body[k] for k in ('object_size', 'features')
                     if k in body}
            proof = {k: body[k] for k in ('base_id', 'snapshot_id',
                                          'base_digest') if k in body}
            extra = {}
            if body.get('record'):
                # B's state at N kept by a record, not a snapshot in the
                # pause (lsrp.server.records): RBD image sinks only.
                if not isinstance(sink, sinks.RbdImageSink) or not body.get(
                        'from_snapshot'):
                    raise exception.ProtocolError(
                        code='NOT_ALLOWED', reason='%s: only a round of an '
                        'image from a snapshot can keep a record' % disk)
                extra['record'] = True
                # An earlier attempt's record is replaced only once written.
                await self.server.record_written(disk, body['snapshot'])
            offset = await self._sink_op(shared, functools.partial(
                                             sink.start, **extra),
                                         body['snapshot'],
                                         body.get('from_snapshot'),
                                         body['size'], shared.resume,
                                         image or None, proof)
            shared.resume = 0
            shared.started(offset)
            self.server.sessions.move(disk, frame.session,
                                      sessions_mod.REPLICATING)
            if offset >= body['size']:
                # Snapshot N is here already: this round has nothing to do.
                self.server.sessions.move(disk, frame.session,
                                          sessions_mod.COMPLETE)
            await self.conn.respond(frame, {'offset': offset})
        elif frame.type in _READS:
            await self._read(frame)
        elif frame.type == m.CTL_GROUP_PREPARE_AND_COMMIT:
            await self._group(frame)
        elif frame.type in _WRITES:
            await self._update(frame, entry)
        elif frame.type == m.TRANSFER_CONFIG_FILE:
            await self._config_file(frame)
        elif frame.type == m.REPLICATION_CHECKSUM:
            shared = self._session(frame, sessions_mod.REPLICATING)
            body = frame.body
            if not 0 < body['block'] <= MAX_BLOCK:
                raise exception.ProtocolError(
                    code='BAD_FIELD', reason='block size %d' % body['block'])
            differ = await self._sink_op(shared, shared.sink.differing,
                                         body['offset'], body['block'],
                                         body['digests'])
            await self.conn.respond(frame, {'offset': body['offset'],
                                            'differ': differ})
        elif frame.type in _COMPLETE:
            shared = self._session(frame, sessions_mod.REPLICATING)
            disk, sink = shared.disk, shared.sink
            digest = frame.body.get('image_digest')
            if 'group' in frame.body:
                if (frame.body.get('final')
                        or not isinstance(sink, sink_mod.GroupSink)):
                    raise exception.ProtocolError(
                        code='NOT_ALLOWED', reason='%s: this round cannot '
                        'wait for a group commit' % disk)
                await self._sink_op(shared, sink.prepare,
                                    frame.body['snapshot'], digest)
                shared.group = frame.body['group']
                self.server.sessions.move(disk, frame.session,
                                          sessions_mod.PREPARED)
            else:
                await self._sink_op(shared, sink.complete,
                                    frame.body['snapshot'], digest,
                                    frame.body.get('final', False))
                self.server.sessions.move(disk, frame.session,
                                          sessions_mod.COMPLETE)
            body = {'snapshot': frame.body['snapshot']}
            if digest:
                body['image_digest'] = digest
            if frame.type == m.DELTA_CONSOLIDATION_COMPLETE:
                body['version_id'] = frame.session
            await self.conn.respond(frame, body)
        else:
            raise exception.ProtocolError(
                code='NOT_ALLOWED', reason='%s is not served by a terminal' %
                frame.name)

    async def _init_session(self, frame):
        disk, shipment = frame.body['disk'], frame.body['shipment']
        entry = access.check(self.server.state_dir, shipment, disk,
                             self.peer)
        if 'attach' in frame.body:
            session = frame.body['attach']
            shared = self.server.shared.get(session)
            if (shared is None or shared.disk != disk
                    or shared.shipment != shipment):
                raise exception.ProtocolError(
                    code='NOT_ALLOWED', reason='no session %d of %s to '
                    'attach to' % (session, disk))
            # A session taken over since is stale; a current one whose sink
            # is not ready (or gone) cannot take a second stream either.
            self.server.sessions.check(disk, session)
            if shared.sink is None:
                raise exception.ProtocolError(
                    code='NOT_ALLOWED', reason='session %d of %s has no sink '
                    'to attach to' % (session, disk))
            if not shared.sink.parallel_streams:
                raise exception.ProtocolError(
                    code='NOT_ALLOWED', reason='%s is written to devices: one'
                    ' stream, in offset order' % disk)
        else:
            kept = await self.server.take_kept(disk, shipment)
            live = self.server.live_round(disk, shipment)
            session = self.server.sessions.open(disk)
            # Sessions of this disk held by other connections are now stale.
            if live is not None:
                kept = await self.server.take_over(live)
            if kept:
                sink, resume = kept
            else:
                sink = await self._in_thread(self._new_sink, entry, disk,
                                             shipment)
                resume = 0
            shared = self.server.shared[session] = session_mod.SharedSession(
                disk, sink, shipment, resume, self.peer)
        shared.attach(self)
        self.sessions.add(session)
        size, snapshot = await self._in_thread(shared.sink.info)
        body = {'session': session, 'size': size}
        if snapshot:
            body['snapshot'] = snapshot
        await self.conn.respond(frame, body)

    async def _read(self, frame):
        """READ_*: this terminal as a source (``lsrp.server.reads``)."""
        body = frame.body
        if frame.type == m.READ_OPEN:
            disk, shipment = body['disk'], body['shipment']
            entry = access.check(self.server.state_dir, shipment, disk,
                                 self.peer, verb='read')
            # A record still being written: read it once complete.
            await self.server.record_written(disk, body['snapshot'])
            if entry.get('sink') == 'devices' or self.server.cluster is None:
                raise exception.ProtocolError(
                    code='NOT_ALLOWED', reason='%s of shipment %s is not an '
                    'image of this terminal\'s cluster: nothing to read' % (
                        disk, shipment))
            read = await self._in_thread(reads_mod.ImageRead,
                                         self.server.cluster, disk,
                                         body['snapshot'])
            read_id = next(self._read_ids)
            self.reads[read_id] = read
            LOG.info('%s: reads %s@%s of shipment %s (read %d)', self.label,
                     disk, body['snapshot'], shipment, read_id)
            answer = await self._in_thread(read.describe)
            answer['session'] = read_id
            await self.conn.respond(frame, answer)
            return
        read = self.reads.get(frame.session)
        if read is None:
            raise exception.ProtocolError(
                code='BAD_STATE', reason='%s: no read %d open on this '
                'connection' % (frame.name, frame.session))
        if frame.type == m.READ_CHANGES:
            answer = {'offset': await self._in_thread(
                read.start, body.get('from_snapshot'), body['offset'],
                body.get('with_digest', False))}
        elif frame.type == m.READ_NEXT:
            answer = await self._in_thread(read.next)
        else:
            answer = {'image_digest': await self._in_thread(
                read.digest, body['algorithm'])}
        await self.conn.respond(frame, answer)

    async def _group(self, frame):
        """C4: a group's round becomes visible on all its disks at once."""
        body = frame.body
        group, phase, snapshot = body['group'], body['phase'], body['snapshot']
        if phase not in ('prepare', 'commit'):
            raise exception.ProtocolError(
                code='BAD_FIELD', reason='group phase %r: prepare or commit'
                % phase[:32])
        registry = self.server.sessions
        members = {}
        for disk in body['disks']:
            session = registry.current(disk)
            shared = self.server.shared.get(session)
            if (shared is None or shared.sink is None
                    or shared.peer != self.peer):
                raise exception.ProtocolError(
                    code='BAD_STATE', reason='group %s: %s has no session of '
                    '%s here' % (group, disk, self.peer))
            state = registry.state(disk)
            if (state == sessions_mod.PREPARED and shared.group == group
                    and shared.sink.prepared == snapshot):
                members[disk] = (session, shared)
            elif not (state == sessions_mod.COMPLETE and await
                      self._sink_op(shared, shared.sink.has_snapshot,
                                    snapshot)):
                # (COMPLETE with N: committed by an earlier attempt.)
                raise exception.ProtocolError(
                    code='BAD_STATE', reason='group %s: %s is %s, not '
                    'prepared for %s' % (group, disk, state, snapshot))
        for _, shared in members.values():
            shared.busy += 1     # a take-over waits for the commit
        try:
            if phase == 'prepare':
                await self._in_thread(self.server.groups.prepare, group,
                                      snapshot, list(members))
            else:
                pending = await self._in_thread(
                    self.server.groups.commit, group, snapshot,
                    {d: s.sink for d, (_, s) in members.items()},
                    bool(body.get('defer')))
                if pending:
                    self.server.write_records(group, snapshot, pending)
                for disk, (session, _) in members.items():
                    registry.move(disk, session, sessions_mod.COMPLETE)
                if body.get('release'):
                    # At once: each close waits for its lock's release.
                    await asyncio.gather(*[
                        self._in_thread(shared.sink.release)
                        for _, shared in members.values()
                        if hasattr(shared.sink, 'release')])
        finally:
            for _, shared in members.values():
                shared.busy -= 1
        await self.conn.respond(frame, {'phase': phase,
                                        'disks': sorted(body['disks'])})

    def _new_sink(self, entry, disk, shipment):
        """The sink the shipment's access list names (``lsrp.sink``)."""
        kind = entry.get('sink') or 'rbd'
        make = _SINKS.get(kind)
        if make is None:
            raise exception.ProtocolError(
                code='NOT_ALLOWED', reason='shipment %s sends to a %r sink, '
                'which this terminal does not have' % (shipment, kind))
        return make(self.server, disk, shipment, self.peer)

    def _snapshots(self, shipment, disk):
        """The user snapshots of ``disk`` here, oldest first.

        Checked like INIT_SESSION; none for an image written to devices, or
        absent.
        """
        entry = access.check(self.server.state_dir, shipment, disk, self.peer)
        if entry.get('sink') == 'devices' or self.server.cluster is None:
            return []
        pool_name, name = disk.split('/', 1)
        with self.server.cluster.pool(pool_name) as pool:
            if not pool.image_exists(name):
                return []
            with pool.open_image(name) as image:
                return [s.name for s in image.list_snapshots()
                        if s.namespace == 'user']

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

    async def _config_file(self, frame):
        """D8: a VM's configuration, in pieces, kept with its shipment."""
        shipment = self._session(frame).shipment
        body = frame.body
        name = names.check('config file', body['name'])
        if body['offset'] + len(body['data']) > MAX_CONFIG:
            raise exception.ProtocolError(
                code='NOT_ALLOWED', reason='config file %s beyond %d bytes'
                % (name, MAX_CONFIG))
        directory = os.path.join(self.server.state_dir, shipment, 'config')
        await self._in_thread(_write_piece, directory, name, body['offset'],
                              body['data'], body['last'])
        await self.conn.respond(frame, {
            'acked': body['offset'] + len(body['data'])})

    async def _update(self, frame, entry):
        shared = self._session(frame, sessions_mod.REPLICATING)
        disk, sink = shared.disk, shared.sink
        body = frame.body
        if frame.type == m.REPLICATION_ZERO:
            await self._sink_op(shared, sink.zero, body['offset'],
                                body['length'])
            end = body['offset'] + body['length']
        else:
            # Decompressing, hashing and writing all run in the worker
            # thread: zstd, BLAKE3 and librbd let go of the GIL.
            end = await self._sink_op(shared, _unpack_and_write, sink, disk,
                                      body)
        if entry is not None:
            self._applied(entry, end)
        await self.conn.respond(frame, {'acked': end})

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


def _rbd_sink(server, disk, shipment, peer):
    if server.cluster is None:
        raise exception.ProtocolError(
            code='NOT_ALLOWED', reason='this terminal writes devices '
            'only ([server] rbd_sink is off): no image %s here' % disk)
    return sinks.RbdImageSink(server.cluster, disk, shipment,
                              state_dir=server.state_dir)


def _device_sink(server, disk, shipment, peer):
    if server.key_store is None:
        raise exception.ProtocolError(
            code='NOT_ALLOWED', reason='this terminal has no key '
            'store to write shipment %s with' % shipment)
    return receiver.DeviceSetSink(server.state_dir, server.key_store,
                                  shipment, disk, peer,
                                  **server.device_options)


# The kinds of lsrp.sink.IMPLEMENTATIONS, as access lists name them.
_SINKS = {'rbd': _rbd_sink, 'devices': _device_sink}


def _unpack_and_write(sink, disk, body):
    """Check an update's block against its digest and write it; its end."""
    data = body['data']
    if body.get('zstd'):
        try:
            data = _zstd().decompress(data, max_output_size=MAX_BLOCK)
        except zstandard.ZstdError as e:
            raise exception.ProtocolError(
                code='BAD_FIELD', reason='%s: block at %d does not '
                'decompress: %s' % (disk, body['offset'], e))
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


def _write_piece(directory, name, offset, data, last):
    """Write a piece of ``name``; the last one makes it appear, whole."""
    os.makedirs(directory, exist_ok=True)
    part = os.path.join(directory, name + '.part')
    fd = os.open(part, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        os.pwrite(fd, data, offset)
        if last:
            os.ftruncate(fd, offset + len(data))
            os.fsync(fd)
    finally:
        os.close(fd)
    if last:
        os.replace(part, os.path.join(directory, name))
