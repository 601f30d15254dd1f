"""Another terminal as a sink: the ``lsrp.sink.Sink`` interface over LSRP.

Each call becomes the request the senders make (``lsrp.protocol.sender``):
``start`` is INIT_SESSION and REPLICATION_START (with the proof of N-1),
``differing`` REPLICATION_CHECKSUM, ``write`` REPLICATION_UPDATE with the
block's digest, ``zero`` REPLICATION_ZERO, ``complete`` REPLICATION_COMPLETE,
``has_snapshot`` GET_SERVER_STATE. The terminal applies them to the sink its
access list names for the disk (an RBD image or a device set), so whatever
holds for a local sink holds through this one: the shared compliance test
(``tests/functional/test_compliance.py``) runs the same checks on it.

It is synchronous like every sink: the connection lives on an event loop of
its own thread. An ERROR answer is raised as ``ProtocolError`` with the
terminal's code (``BAD_STATE``, ``DIGEST_MISMATCH``, ...), its message
naming the terminal, the disk and the request.
"""

import asyncio
import threading

from lsrp import digest as digest_mod
from lsrp import exception
from lsrp.protocol import messages as m
from lsrp import sink

# Largest REPLICATION_UPDATE this sink sends (the terminal's MAX_BLOCK);
# bigger writes are cut.
PIECE = 1 << 20


class RemoteSink(sink.Sink):
    """The rounds of one disk of a shipment, applied at another terminal."""

    # One connection, requests answered in order: the terminal's sink sees
    # the writes in the order they were made.
    parallel_streams = False
    # The terminal keeps a round's progress (journal or its session) when
    # the connection drops: a new start resumes at the offset it answers.
    durable_progress = True

    def __init__(self, connect, disk, shipment, timeout=300):
        """One disk of a shipment at the terminal ``connect`` reaches.

        ``connect``: a coroutine function returning a connected
        ``lsrp.protocol.client.TerminalClient``; ``disk``: ``pool/image``.
        """
        self.disk, self.shipment = disk, shipment
        self.timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, daemon=True,
            name='remote-sink %s' % disk)
        self._thread.start()
        self.session = None
        self._in_round = False
        try:
            self.client = self._call(connect())
        except BaseException:
            self._stop_loop()
            raise

    @property
    def peer(self):
        return self.client.peer

    # --- the event loop ---------------------------------------------------

    def _call(self, coro):
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return future.result(self.timeout)

    def _request(self, type_, body, what, session=True):
        try:
            return self._call(self.client.conn.request(
                type_, body, (self.session or 0) if session else 0))
        except exception.RemoteError as e:
            # The interface's error: the terminal's code, and where.
            raise exception.ProtocolError(
                code=e.code, reason='terminal %s, disk %s of shipment %s, '
                '%s: %s' % (self.peer, self.disk, self.shipment, what,
                            e.kwargs.get('reason'))) from e

    def _stop_loop(self):
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(self.timeout)
        self._loop.close()

    # --- the Sink interface -----------------------------------------------

    def _open_session(self):
        self.session = None
        body = self._request(m.INIT_SESSION, {
            'disk': self.disk, 'shipment': self.shipment}, 'INIT_SESSION',
            session=False)
        self.session = body['session']
        return body

    def info(self):
        body = self._open_session()
        return body['size'], body.get('snapshot')

    def start(self, snapshot, from_snapshot, size, resume=0, image=None,
              proof=None):
        # A session per round, as the senders open one: the terminal makes
        # its sink (or takes the one a lost connection left) for it.
        self._open_session()
        self._in_round = True
        body = {'snapshot': snapshot, 'size': size}
        if from_snapshot is not None:
            body['from_snapshot'] = from_snapshot
        for key in ('object_size', 'features'):
            if image and image.get(key) is not None:
                body[key] = image[key]
        for key in ('base_id', 'snapshot_id', 'base_digest'):
            if proof and proof.get(key):
                body[key] = proof[key]
        # ``resume`` is the terminal's own knowledge: it answers with it.
        return self._request(m.REPLICATION_START, body,
                             'REPLICATION_START %s' % snapshot)['offset']

    def differing(self, offset, block, digests):
        return self._request(m.REPLICATION_CHECKSUM, {
            'offset': offset, 'block': block, 'digests': list(digests)},
            'REPLICATION_CHECKSUM at %d' % offset)['differ']

    def write(self, offset, data):
        view = memoryview(data)
        for start in range(0, len(view), PIECE):
            piece = bytes(view[start:start + PIECE])
            self._request(m.REPLICATION_UPDATE, {
                'offset': offset + start, 'data': piece,
                'digest': digest_mod.block_digest(piece)},
                'REPLICATION_UPDATE at %d' % (offset + start))

    def zero(self, offset, length):
        self._request(m.REPLICATION_ZERO, {'offset': offset,
                                           'length': length},
                      'REPLICATION_ZERO at %d' % offset)

    def complete(self, snapshot, digest=None, final=False):
        body = {'snapshot': snapshot}
        if digest:
            body['image_digest'] = digest
        if final:
            body['final'] = True
        try:
            return self._request(m.REPLICATION_COMPLETE, body,
                                 'REPLICATION_COMPLETE %s' % snapshot
                                 ).get('image_digest')
        finally:
            self._in_round = False

    def has_snapshot(self, snapshot):
        body = self._request(m.GET_SERVER_STATE, {
            'shipment': self.shipment, 'disks': [self.disk]},
            'GET_SERVER_STATE', session=False)
        if snapshot in (body.get('snapshots') or [[]])[0]:
            return True
        # NOTE: GET_SERVER_STATE lists the snapshots of a finished image
        # only (not of one still being copied, nor of a device set); the
        # newest snapshot of the sink itself comes with a new session,
        # which would take over a round in flight: asked between rounds
        # only.
        return not self._in_round and self.info()[1] == snapshot

    def abort(self):
        # The terminal undoes or keeps the round when its session goes: a
        # new connection for what follows.
        self._call(self.client.close())
        self.session = None
        self._in_round = False
        self.client = self._call(self._reconnect())

    def close(self):
        try:
            self._call(self.client.close())
        finally:
            self._stop_loop()

    def _reconnect(self):
        client = self.client
        return type(client)(client.host, client.port, client.ssl_context,
                            client.server_name, client.name).connect()
