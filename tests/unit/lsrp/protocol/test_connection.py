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


class TestPeerGone(testtools.TestCase):

    def test_a_reset_is_connection_closed_naming_the_peer(self):
        async def scenario():
            client, server = await pair()
            # The peer's socket closes with data unread: its kernel resets.
            server.writer.transport.abort()
            await asyncio.sleep(0.05)
            try:
                for _ in range(64):
                    await client.send(frames.Frame(m.READ_DIGEST, {
                        'algorithm': 'sha256'}, session=1, seq=1))
                    await asyncio.sleep(0.01)
            finally:
                gone = client.gone
                await client.close()
            return gone

        e = self.assertRaises(exception.ConnectionClosed, asyncio.run,
                              scenario())
        self.assertIn('terminal-b at test closed (', str(e))

    def test_gone_is_none_while_the_peer_is_there(self):
        async def scenario():
            client, server = await pair()
            await client.send(frames.Frame(m.READ_DIGEST, {
                'algorithm': 'sha256'}, session=1, seq=1))
            await server.recv()
            gone = client.gone, server.gone
            await server.close()
            with testtools.ExpectedException(exception.ConnectionClosed):
                await client.recv()
            gone += (client.gone,)
            await client.close()
            return gone

        before_client, before_server, after = asyncio.run(scenario())
        self.assertIsNone(before_client)
        self.assertIsNone(before_server)
        self.assertIsInstance(after, exception.ConnectionClosed)
