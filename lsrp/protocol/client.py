"""The LSRP client: a connection from this terminal to another's lsrp-server.

The source side of every exchange (catch-up rounds, remote export and
import) connects through :class:`TerminalClient`; what it sends is in
``lsrp.protocol.sender``.
"""

import asyncio
import ssl
import uuid

from lsrp import exception
from lsrp.protocol import connection as connection_mod
from lsrp.protocol import frames
from lsrp.protocol import messages as m


class TerminalClient(object):
    """A connection from this terminal to another terminal's lsrp-server."""

    def __init__(self, host, port, ssl_context, server_name, name):
        self.host, self.port = host, port
        self.ssl_context = ssl_context
        self.server_name = server_name
        self.name = name
        self.conn = None

    @property
    def peer(self):
        return '%s at %s:%d' % (self.server_name, self.host, self.port)

    async def connect(self, timeout=30):
        """Connect and shake hands; errors name the terminal and the cause.

        Raises TerminalRefused (TLS: a certificate refused either way) or
        TerminalUnreachable (anything else before the handshake answer).
        """
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(
                self.host, self.port, ssl=self.ssl_context,
                server_hostname=self.server_name,
                limit=frames.MAX_BODY + frames.HEADER_SIZE), timeout)
        except ssl.SSLCertVerificationError as e:
            raise exception.TerminalRefused(
                peer=self.peer, reason='certificate verify failed: %s'
                % (e.verify_message or e.reason)) from e
        except ssl.SSLError as e:
            raise exception.TerminalRefused(
                peer=self.peer, reason='TLS handshake failed: %s'
                % (e.reason or e)) from e
        except asyncio.TimeoutError as e:
            raise exception.TerminalUnreachable(
                peer=self.peer, reason='no connection within %s s'
                % timeout) from e
        except OSError as e:
            raise exception.TerminalUnreachable(
                peer=self.peer, reason=e.strerror or str(e)
                or type(e).__name__) from e
        self.conn = connection_mod.Connection(reader, writer, self.peer)
        self.conn.start_receiving()
        hello = uuid.uuid4().hex
        try:
            body = await asyncio.wait_for(self.conn.request(m.HANDSHAKE, {
                'version': frames.VERSION, 'id': hello,
                'peer': self.name}), timeout)
        except ssl.SSLError as e:
            await self.close()
            raise exception.TerminalRefused(
                peer=self.peer, reason='it refused our certificate: %s'
                % (e.reason or e)) from e
        except (exception.ConnectionClosed, ConnectionError, OSError,
                asyncio.IncompleteReadError, asyncio.TimeoutError) as e:
            await self.close()
            why = str(e) or type(e).__name__
            if not await self._listening():
                # Killed (or stopped) as we shook hands: down, not refusing
                # (seen in CI: a round's connection reset by a terminal
                # killed mid-round failed the migration as a refusal).
                raise exception.TerminalUnreachable(
                    peer=self.peer, reason='it closed the connection during '
                    'the handshake (%s) and no longer accepts connections'
                    % why) from e
            raise exception.TerminalRefused(
                peer=self.peer, reason='it closed the connection during the '
                'handshake (%s): it may refuse our certificate (see its '
                'log)' % why) from e
        if body['id'] != hello or body['version'] != frames.VERSION:
            raise exception.ProtocolError(
                code='BAD_VERSION', reason='handshake answered with version '
                '%d and id %s' % (body['version'], body['id']))
        return self

    async def _listening(self, timeout=5):
        """Whether the terminal's port still accepts a TCP connection.

        A TLS 1.3 server that refuses our certificate may just close the
        connection after the handshake, as a dying one does: a refusing
        server still listens.
        """
        try:
            _, writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port), timeout)
        except (OSError, asyncio.TimeoutError):
            return False
        writer.close()
        try:
            await writer.wait_closed()
        except OSError:
            pass
        return True

    async def send_config_file(self, session, name, data, piece=1 << 20):
        """D8: send a VM's configuration file within a disk's session."""
        for offset in range(0, max(len(data), 1), piece):
            chunk = data[offset:offset + piece]
            await self.conn.request(m.TRANSFER_CONFIG_FILE, {
                'name': name, 'offset': offset, 'data': chunk,
                'last': offset + piece >= len(data)}, session)

    async def close(self):
        if self.conn is not None:
            await self.conn.close()
