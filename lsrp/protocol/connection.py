"""One LSRP connection over an asyncio stream (TLS in practice)."""

import asyncio
import itertools

from lsrp import exception
from lsrp.protocol import frames
from lsrp.protocol import messages

READ_SIZE = 1 << 20


class Connection(object):
    """Sends and receives frames; matches responses to requests by seq."""

    def __init__(self, reader, writer, peer='peer', frame_timeout=None):
        self.reader, self.writer = reader, writer
        # Seconds a started frame may take to arrive whole: a peer that
        # stalls mid-frame must not hold a connection forever.
        self.frame_timeout = frame_timeout
        self.peer = peer
        self._decoder = frames.Decoder()
        self._ready = []
        self._seq = itertools.count(1)
        self._waiting = {}
        self._types = {}    # seq -> type of the request awaiting an answer
        self._receiver = None
        # The first ConnectionClosed this connection raised once its peer
        # was found gone (EOF, reset, broken pipe), else None: a server
        # tells by it its own peer's departure from a failed request.
        self.gone = None

    def _closed(self, detail):
        error = exception.ConnectionClosed(peer=self.peer, detail=detail)
        if self.gone is None:
            self.gone = error
        return error

    def _lost(self, error):
        """ConnectionClosed naming the peer, for a reset or broken pipe."""
        return self._closed(' (%s)' % (str(error) or type(error).__name__))

    async def recv(self):
        """The next frame; raises ConnectionClosed at EOF or a reset."""
        try:
            return await self._recv()
        except ConnectionError as e:
            raise self._lost(e) from e

    async def _recv(self):
        while not self._ready:
            if self._decoder.pending and self.frame_timeout:
                try:
                    data = await asyncio.wait_for(
                        self.reader.read(READ_SIZE), self.frame_timeout)
                except asyncio.TimeoutError:
                    raise exception.ProtocolError(
                        code='TRUNCATED', reason='%d bytes of a frame and '
                        'nothing more for %s s'
                        % (self._decoder.pending, self.frame_timeout))
            else:
                data = await self.reader.read(READ_SIZE)
            if not data:
                detail = (' in the middle of a frame (%d bytes)'
                          % self._decoder.pending
                          if self._decoder.pending else '')
                raise self._closed(detail)
            self._ready.extend(self._decoder.feed(data))
        return self._ready.pop(0)

    async def send(self, frame):
        """Send a frame; raises ConnectionClosed when the peer is gone."""
        try:
            self.writer.write(frames.encode(frame))
            await self.writer.drain()
        except ConnectionError as e:
            raise self._lost(e) from e

    async def send_error(self, code, message, seq=0, session=0):
        await self.send(frames.Frame(messages.ERROR, {
            'code': code, 'message': message[:messages.MAX_STR]},
            session=session, seq=seq, flags=frames.FLAG_RESPONSE))

    async def respond(self, request, body):
        await self.send(frames.Frame(request.type, body,
                                     session=request.session,
                                     seq=request.seq,
                                     flags=frames.FLAG_RESPONSE))

    # --- the client side: pipelined requests --------------------------------

    def start_receiving(self):
        self._receiver = asyncio.ensure_future(self._receive_loop())

    async def _receive_loop(self):
        refusal = None
        try:
            while True:
                frame = await self.recv()
                self._types.pop(frame.seq, None)
                future = self._waiting.pop(frame.seq, None)
                if future is not None and not future.done():
                    future.set_result(frame)
                elif frame.type == messages.ERROR:
                    # An error that answers no request: the peer refused
                    # the stream (a request type it does not know, from a
                    # newer release) and closes the connection.
                    refusal = frame
        except Exception as e:
            for seq, future in self._waiting.items():
                if not future.done():
                    future.set_exception(e if refusal is None else
                                         self._refused(refusal, seq, e))
            self._waiting.clear()
            self._types.clear()

    def _refused(self, refusal, seq, cause):
        type_ = self._types.get(seq)
        error = exception.RemoteError(
            peer=self.peer, request=messages.NAMES.get(type_, 'a request'),
            code=refusal.body['code'], reason=refusal.body['message'])
        error.__cause__ = cause
        return error

    async def submit(self, type_, body, session=0):
        """Send a request; returns a future of its response frame."""
        seq = next(self._seq)
        future = asyncio.get_running_loop().create_future()
        self._waiting[seq] = future
        self._types[seq] = type_
        await self.send(frames.Frame(type_, body, session=session, seq=seq))
        return future

    async def request(self, type_, body, session=0):
        """Send a request and wait for its response body."""
        frame = await (await self.submit(type_, body, session))
        return self.check(frame, type_)

    def check(self, frame, type_):
        if frame.type == messages.ERROR:
            raise exception.RemoteError(
                peer=self.peer, request=messages.NAMES[type_],
                code=frame.body['code'], reason=frame.body['message'])
        return frame.body

    async def close(self):
        if self._receiver is not None:
            self._receiver.cancel()
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except (ConnectionError, OSError):
            pass
