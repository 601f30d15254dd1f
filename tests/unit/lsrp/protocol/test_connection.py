"""The client side of a connection: answers matched to requests."""

import asyncio
import socket

import testtools

from lsrp import exception
from lsrp.protocol import connection as connection_mod
from lsrp.protocol import frames
from lsrp.protocol import messages as m


async def pair():
    a, b = socket.socketpair()
    client = connection_mod.Connection(*await asyncio.open_connection(
        sock=a), peer='terminal-b at test')
    server = connection_mod.Connection(*await asyncio.open_connection(
        sock=b))
    return client, server


class TestRefusedStream(testtools.TestCase):

    def test_an_unknown_request_is_reported_with_the_peers_code(self):
        # A peer of an older release refuses a request it does not know:
        # it sends an ERROR that answers no request and closes.
        async def scenario():
            client, server = await pair()
            client.start_receiving()
            request = asyncio.ensure_future(client.request(
                m.READ_OPEN, {'disk': 'vms/a', 'shipment': 's',
                              'snapshot': 's1'}))
            await server.recv()
            await server.send_error('UNKNOWN_TYPE', 'LSRP protocol error '
                                    'UNKNOWN_TYPE: type 0xd')
            await server.close()
            try:
                return await request
            finally:
                await client.close()

        e = self.assertRaises(exception.RemoteError, asyncio.run, scenario())
        self.assertEqual('UNKNOWN_TYPE', e.code)
        self.assertEqual('terminal-b at test refused READ_OPEN: UNKNOWN_TYPE:'
                         ' type 0xd', str(e))

    def test_a_closed_connection_without_error_stays_closed(self):
        async def scenario():
            client, server = await pair()
            client.start_receiving()
            request = asyncio.ensure_future(client.request(
                m.READ_DIGEST, {'algorithm': 'sha256'}, 1))
            frame = await server.recv()
            self.assertEqual(frames.Frame(m.READ_DIGEST, {
                'algorithm': 'sha256'}, session=1, seq=1), frame)
            await server.close()
            try:
                return await request
            finally:
                await client.close()

        self.assertRaises(exception.ConnectionClosed, asyncio.run,
                          scenario())
