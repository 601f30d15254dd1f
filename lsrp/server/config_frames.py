"""TRANSFER_CONFIG_FILE (D8): a VM's configuration, kept with its shipment.

A mixin of :class:`lsrp.server.handler.PeerHandler`.
"""

import os

from lsrp import exception
from lsrp.server import names

MAX_CONFIG = 16 << 20


class ConfigFrames(object):
    """TRANSFER_CONFIG_FILE of one connection."""

    async def _config_file(self, frame, queued):
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
