"""REPLICATION_START, _CHECKSUM, _COMPLETE (and DELTA_CONSOLIDATION_*).

A mixin of :class:`lsrp.server.handler.PeerHandler`, whose sessions and
helpers its methods use: a round starts on a session's sink, its
checksums say which blocks differ, and it completes, or is prepared for
its group's commit (``lsrp.server.group_frames``). The updates between
are the handler's own: they are pipelined.
"""

import functools

from lsrp import exception
from lsrp.protocol import messages as m
from lsrp.protocol import sessions as sessions_mod
from lsrp.server import sinks
from lsrp import sink as sink_mod

# The largest block an update or a checksum covers.
MAX_BLOCK = 16 << 20


class RoundFrames(object):
    """The frames that start, compare and complete a round."""

    async def _start(self, frame, queued):
        """A round begins on the session's sink; where it resumes."""
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
        # Writes past it are refused (lsrp.server.handler._update).
        shared.size = body['size']
        self.server.sessions.move(disk, frame.session,
                                  sessions_mod.REPLICATING)
        if offset >= body['size']:
            # Snapshot N is here already: this round has nothing to do. Or
            # an attempt whose connection was lost applied and prepared it:
            # it still waits for its group's commit (N is not taken yet).
            waits = (shared.group is not None and
                     getattr(sink, 'prepared', None) == body['snapshot'])
            self.server.sessions.move(disk, frame.session,
                                      sessions_mod.PREPARED if waits
                                      else sessions_mod.COMPLETE)
        await self.conn.respond(frame, {'offset': offset})

    async def _checksum(self, frame, queued):
        """Which blocks of a range differ from the source's digests."""
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

    async def _complete(self, frame, queued):
        """Snapshot N: the round completes, or waits for its group."""
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
