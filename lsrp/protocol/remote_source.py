"""Another terminal as a source: the ``lsrp.source.Source`` interface over LSRP.

The terminal's lsrp-server serves the reads (``lsrp.server.reads``) of an
image of its cluster to a peer its access list allows: READ_OPEN opens the
image at a snapshot (``size``, ``describe``), READ_CHANGES starts a stream
of its changes since an earlier snapshot or of all of it, from an offset
(``changes``), READ_NEXT takes the pieces (several in flight), the last one
with the image's BLAKE3 digest; READ_DIGEST asks for a digest by algorithm.

Checked here: every piece against the digest it came with, and a whole
image read from its start against the digest the terminal sends at the end
(``VerificationFailed`` otherwise). A delta is checked by its sink, against
``digest('blake3')``. An ERROR answer is raised as ``RemoteError`` naming
the terminal, the request and the terminal's code and reason.

Synchronous like every source: the connection lives on an event loop of its
own thread.
"""

import asyncio
import collections
import threading

from lsrp import digest as digest_mod
from lsrp import exception
from lsrp.protocol import messages as m
from lsrp.rbd.extents import Extent
from lsrp import source

# READ_NEXT requests in flight: enough to keep a WAN busy, few enough that
# the pieces waiting here stay small (4 MiB each at most).
WINDOW = 8


class RemoteSource(source.Source):
    """One image at one snapshot, read from another terminal."""

    def __init__(self, connect, disk, shipment, snapshot, timeout=300):
        """``disk`` (``pool/image``) of ``shipment`` at ``snapshot``.

        ``connect``: a coroutine function returning a connected
        ``lsrp.protocol.client.TerminalClient``.
        """
        self.disk, self.shipment, self.snapshot = disk, shipment, snapshot
        self.timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, daemon=True,
            name='remote-source %s' % disk)
        self._thread.start()
        self.client = None
        self._digests = {}
        try:
            self.client = self._call(connect())
            self._opened = self._request(m.READ_OPEN, {
                'disk': disk, 'shipment': shipment, 'snapshot': snapshot})
        except BaseException:
            self.close()
            raise
        self.read_id = self._opened['session']

    @property
    def peer(self):
        return self.client.peer

    @property
    def where(self):
        return 'terminal %s, %s@%s of shipment %s' % (
            self.peer, self.disk, self.snapshot, self.shipment)

    # --- the event loop ---------------------------------------------------

    def _call(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(
            self.timeout)

    def _request(self, type_, body, session=0):
        return self._call(self.client.conn.request(type_, body, session))

    async def _next(self):
        frame = await (await self.client.conn.submit(m.READ_NEXT, {},
                                                     self.read_id))
        return self.client.conn.check(frame, m.READ_NEXT)

    # --- the Source interface ---------------------------------------------

    def size(self):
        return self._opened['size']

    def describe(self):
        return {'object_size': self._opened.get('object_size'),
                'features': self._opened.get('features')}

    def changes(self, from_snapshot, start=0):
        body = {'offset': start, 'with_digest': True}
        if from_snapshot is not None:
            body['from_snapshot'] = from_snapshot
        self._request(m.READ_CHANGES, body, self.read_id)
        whole = digest_mod.OrderedDigest('blake3') if (
            from_snapshot is None and start == 0) else None
        pending = collections.deque()
        try:
            while True:
                while len(pending) < WINDOW:
                    pending.append(asyncio.run_coroutine_threadsafe(
                        self._next(), self._loop))
                piece = pending.popleft().result(self.timeout)
                if piece.get('last'):
                    self._end(piece, whole)
                    return
                yield self._check(piece, whole)
        finally:
            # Answers still in flight are read and dropped: the connection
            # stays usable for the next stream.
            for future in pending:
                try:
                    future.result(self.timeout)
                except exception.FedexException:
                    pass

    def _check(self, piece, whole):
        offset, length = piece['offset'], piece['length']
        data = piece.get('data')
        if data is None:
            if whole is not None:
                whole.zeros(offset, length)
            return Extent(offset, length, False), None
        if (len(data) != length
                or digest_mod.block_digest(data) != piece.get('digest')):
            raise exception.VerificationFailed(
                shipment=self.shipment, reason='%s: the piece at offset %d '
                'does not match its digest' % (self.where, offset))
        if whole is not None:
            whole.data(offset, data)
        return Extent(offset, length, True), data

    def _end(self, piece, whole):
        told = piece.get('image_digest')
        if told:
            self._digests['blake3'] = told
        if whole is None or not told:
            return
        got = whole.hexdigest(self.size())
        if got != told:
            self._digests.pop('blake3', None)
            raise exception.VerificationFailed(
                shipment=self.shipment, reason='%s: the image received has '
                'BLAKE3 %s, the terminal says %s' % (self.where, got, told))

    def digest(self, algorithm):
        if algorithm not in self._digests:
            self._digests[algorithm] = self._request(
                m.READ_DIGEST, {'algorithm': algorithm},
                self.read_id)['image_digest']
        return self._digests[algorithm]

    def close(self):
        try:
            if self.client is not None:
                self._call(self.client.close())
                self.client = None
        finally:
            if self._thread.is_alive():
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._thread.join(self.timeout)
                self._loop.close()
