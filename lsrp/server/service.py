"""The terminal service: serves LSRP over mutual TLS to other terminals.

Each connection must start with a HANDSHAKE of the same protocol version.
A source then opens a session per disk (INIT_SESSION, only for disks of
shipments this terminal imported: ``<state_dir>/<shipment>/authorized.json``)
and streams rounds into it. A malformed or disallowed frame gets an ERROR
frame and the connection is closed; other connections are not affected.
"""

import asyncio
import json
import os
import re

from oslo_log import log as logging
import zstandard

from lsrp import exception
from lsrp.protocol import connection as connection_mod
from lsrp.protocol import frames
from lsrp.protocol import messages as m
from lsrp.protocol import sessions as sessions_mod
from lsrp.rbd import digest as digest_mod
from lsrp.server import sinks
from lsrp import tls

LOG = logging.getLogger(__name__)
MAX_BLOCK = 16 << 20
MAX_CONFIG = 16 << 20
_CONFIG_NAME = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$')
_ZSTD = zstandard.ZstdDecompressor()

_DATA = (m.REPLICATION_UPDATE, m.DELTA_CONSOLIDATION_UPDATE)
_START = (m.REPLICATION_START, m.DELTA_CONSOLIDATION_START)
_COMPLETE = (m.REPLICATION_COMPLETE, m.DELTA_CONSOLIDATION_COMPLETE)


def authorize(state_dir, shipment, disk):
    """Raise NOT_ALLOWED unless ``disk`` belongs to a shipment we imported."""
    path = os.path.join(state_dir, shipment, 'authorized.json')
    try:
        with open(path) as f:
            allowed = json.load(f)['images']
    except (OSError, ValueError, KeyError):
        raise exception.ProtocolError(
            code='NOT_ALLOWED', reason='shipment %s is not known here' %
            shipment)
    if disk not in allowed:
        raise exception.ProtocolError(
            code='NOT_ALLOWED', reason='%s is not an image of shipment %s'
            % (disk, shipment))


class SharedSession(object):
    """A session's sink, shared by the streams (connections) that use it."""

    def __init__(self, disk, sink, shipment):
        self.disk, self.sink, self.shipment = disk, sink, shipment
        self.streams = 1


class TerminalServer(object):

    def __init__(self, name, cluster, state_dir, ssl_context, host, port,
                 workers=4, frame_timeout=30):
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

    async def start(self):
        self._server = await asyncio.start_server(
            self._accept, self.host, self.port, ssl=self.ssl_context,
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

    async def _accept(self, reader, writer):
        ssl_object = writer.get_extra_info('ssl_object')
        peer = tls.peer_name(ssl_object) if ssl_object else None
        conn = connection_mod.Connection(reader, writer, peer or '?',
                                         self.frame_timeout)
        handler = PeerHandler(self, conn, peer)
        self._handlers.add(handler)
        task = asyncio.current_task()
        self._tasks.add(task)
        try:
            await handler.run()
        finally:
            await handler.close()
            self._handlers.discard(handler)
            self._tasks.discard(task)


class PeerHandler(object):
    """One connected source terminal."""

    def __init__(self, server, conn, peer):
        self.server = server
        self.conn = conn
        self.peer = peer
        self.shaken = False
        self.sessions = set()  # ids of the sessions this connection uses
        self._closed = False

    async def run(self):
        try:
            while True:
                frame = await self.conn.recv()
                try:
                    await self._dispatch(frame)
                except exception.ProtocolError as e:
                    # Answer the request that failed, by its seq.
                    await self.conn.send_error(e.code, str(e), frame.seq,
                                               frame.session)
                    if self.shaken and e.code in (
                            'BAD_STATE', 'NOT_ALLOWED', 'STALE_SESSION',
                            'DIGEST_MISMATCH'):
                        # The peer spoke correctly but asked for something
                        # not allowed now: keep the connection.
                        continue
                    LOG.warning('%s: %s; closing the connection', self.peer,
                                e)
                    return
                except exception.FedexException as e:
                    # A failure here (Ceph, a full pool): the peer hears
                    # what it was; the connection stays usable.
                    LOG.error('%s: %s failed: %s', self.peer, frame.name, e)
                    await self.conn.send_error('INTERNAL', str(e), frame.seq,
                                               frame.session)
        except exception.ProtocolError as e:
            LOG.warning('%s: %s; closing the connection', self.peer, e)
            try:
                await self.conn.send_error(e.code, str(e))
            except (ConnectionError, OSError):
                pass
        except exception.ConnectionClosed as e:
            LOG.info('%s', e)
        except (ConnectionError, OSError, asyncio.IncompleteReadError) as e:
            LOG.info('%s: connection lost: %s', self.peer, e)

    async def _in_thread(self, fn, *args):
        async with self.server.workers:
            return await asyncio.to_thread(fn, *args)

    async def _dispatch(self, frame):
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
            await self.conn.respond(frame, {'state': 'ready', 'disks': sorted(
                self.server.shared[s].disk for s in self.sessions)})
        elif frame.type == m.INIT_SESSION:
            await self._init_session(frame)
        elif frame.type in _START:
            disk, sink = self._session(frame)
            body = frame.body
            done = await self._in_thread(sink.start, body['snapshot'],
                                         body.get('from_snapshot'),
                                         body['size'])
            self.server.sessions.move(disk, frame.session,
                                      sessions_mod.REPLICATING)
            if done:
                # Snapshot N is here already: this round has nothing to do.
                self.server.sessions.move(disk, frame.session,
                                          sessions_mod.COMPLETE)
            await self.conn.respond(frame, {
                'offset': body['size'] if done else 0})
        elif frame.type in _DATA or frame.type == m.REPLICATION_ZERO:
            await self._update(frame)
        elif frame.type == m.TRANSFER_CONFIG_FILE:
            await self._config_file(frame)
        elif frame.type == m.REPLICATION_CHECKSUM:
            disk, sink = self._session(frame, sessions_mod.REPLICATING)
            body = frame.body
            if not 0 < body['block'] <= MAX_BLOCK:
                raise exception.ProtocolError(
                    code='BAD_FIELD', reason='block size %d' % body['block'])
            differ = await self._in_thread(sink.differing, body['offset'],
                                           body['block'], body['digests'])
            await self.conn.respond(frame, {'offset': body['offset'],
                                            'differ': differ})
        elif frame.type in _COMPLETE:
            disk, sink = self._session(frame, sessions_mod.REPLICATING)
            digest = frame.body.get('image_digest')
            await self._in_thread(sink.complete, frame.body['snapshot'],
                                  digest, frame.body.get('final', False))
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
        authorize(self.server.state_dir, shipment, disk)
        if 'attach' in frame.body:
            session = frame.body['attach']
            shared = self.server.shared.get(session)
            if (shared is None or shared.disk != disk
                    or shared.shipment != shipment):
                raise exception.ProtocolError(
                    code='NOT_ALLOWED', reason='no session %d of %s to '
                    'attach to' % (session, disk))
            self.server.sessions.check(disk, session)
            shared.streams += 1
        else:
            session = self.server.sessions.open(disk)
            # Sessions of this disk held by other connections are now stale.
            sink = await self._in_thread(sinks.RbdImageSink,
                                         self.server.cluster, disk, shipment)
            shared = self.server.shared[session] = SharedSession(
                disk, sink, shipment)
        self.sessions.add(session)
        size, snapshot = await self._in_thread(shared.sink.info)
        body = {'session': session, 'size': size}
        if snapshot:
            body['snapshot'] = snapshot
        await self.conn.respond(frame, body)

    def _shared(self, frame):
        if frame.session not in self.sessions:
            raise exception.StaleSession(code='STALE_SESSION', disk='?',
                                         session=frame.session, current=0)
        return self.server.shared[frame.session]

    def _session(self, frame, state=None):
        shared = self._shared(frame)
        disk, sink = shared.disk, shared.sink
        self.server.sessions.check(disk, frame.session)
        if state and self.server.sessions.state(disk) != state:
            raise exception.ProtocolError(
                code='BAD_STATE', reason='%s: %s while %s' % (
                    disk, frame.name, self.server.sessions.state(disk)))
        return disk, sink

    async def _config_file(self, frame):
        """D8: a VM's configuration, in pieces, kept with its shipment."""
        self._session(frame)
        shipment = self._shared(frame).shipment
        body = frame.body
        name = body['name']
        if not _CONFIG_NAME.match(name):
            raise exception.ProtocolError(
                code='NOT_ALLOWED', reason='config file name %r: letters, '
                'digits, ".", "_" and "-" only' % name[:64])
        if body['offset'] + len(body['data']) > MAX_CONFIG:
            raise exception.ProtocolError(
                code='NOT_ALLOWED', reason='config file %s beyond %d bytes'
                % (name, MAX_CONFIG))
        directory = os.path.join(self.server.state_dir, shipment, 'config')
        await self._in_thread(_write_piece, directory, name, body['offset'],
                              body['data'], body['last'])
        await self.conn.respond(frame, {
            'acked': body['offset'] + len(body['data'])})

    async def _update(self, frame):
        disk, sink = self._session(frame, sessions_mod.REPLICATING)
        body = frame.body
        if frame.type == m.REPLICATION_ZERO:
            await self._in_thread(sink.zero, body['offset'], body['length'])
            end = body['offset'] + body['length']
        else:
            data = body['data']
            if body.get('zstd'):
                try:
                    data = _ZSTD.decompress(data, max_output_size=MAX_BLOCK)
                except zstandard.ZstdError as e:
                    raise exception.ProtocolError(
                        code='BAD_FIELD', reason='%s: block at %d does not '
                        'decompress: %s' % (disk, body['offset'], e))
            if digest_mod.block_digest(data) != body['digest']:
                raise exception.ProtocolError(
                    code='DIGEST_MISMATCH', reason='%s: block at %d' % (
                        disk, body['offset']))
            await self._in_thread(sink.write, body['offset'], data)
            end = body['offset'] + len(data)
        await self.conn.respond(frame, {'acked': end})

    async def close(self):
        if self._closed:
            return
        self._closed = True
        try:
            for session in list(self.sessions):
                await self._release(session)
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
        try:
            # Roll back only rounds this session still owns.
            if self.server.sessions.state(disk) == sessions_mod.REPLICATING:
                self.server.sessions.check(disk, session)
                await self._in_thread(sink.abort)
        except exception.StaleSession:
            pass
        except exception.FedexException as e:
            LOG.error('%s: rollback failed: %s', disk, e)
        finally:
            await self._in_thread(sink.close)


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
