"""READ_OPEN, _CHANGES, _NEXT, _DIGEST: this terminal as a source.

A mixin of :class:`lsrp.server.handler.PeerHandler`, whose ``reads`` (id
-> :class:`lsrp.server.reads.ImageRead`) it fills; the handler closes
them with the connection.
"""

from oslo_log import log as logging

from lsrp import access
from lsrp import exception
from lsrp.server import reads as reads_mod

LOG = logging.getLogger(__name__)


class ReadFrames(object):
    """The READ_* frames of one connection."""

    async def _read_open(self, frame, queued):
        """A snapshot opened for reading; its id is the frames' session."""
        body = frame.body
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

    async def _read_changes(self, frame, queued):
        """The read starts: the snapshot, or its changes since another."""
        body = frame.body
        read = self._open_read(frame)
        await self.conn.respond(frame, {'offset': await self._in_thread(
            read.start, body.get('from_snapshot'), body['offset'],
            body.get('with_digest', False))})

    async def _read_next(self, frame, queued):
        """The next piece of the read."""
        read = self._open_read(frame)
        await self.conn.respond(frame, await self._in_thread(read.next))

    async def _read_digest(self, frame, queued):
        """The digest of the whole snapshot."""
        read = self._open_read(frame)
        await self.conn.respond(frame, {'image_digest': await self._in_thread(
            read.digest, frame.body['algorithm'])})

    def _open_read(self, frame):
        """The read a READ_OPEN of this connection opened as frame.session."""
        read = self.reads.get(frame.session)
        if read is None:
            raise exception.ProtocolError(
                code='BAD_STATE', reason='%s: no read %d open on this '
                'connection' % (frame.name, frame.session))
        return read
