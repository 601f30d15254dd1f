"""The WAN's relay: its mappings, its byte counters, its delay.

In this process's own network namespace, between loopback addresses (any
127/8 address is local): a face on 127.0.0.2 forwards to a service on
127.0.0.1 at the same port.
"""

import asyncio
import json
import os
import socket
import time

import fixtures
import testtools

from fedex_sandbox import relay
from fedex_sandbox import wan

FACE = '127.0.0.2'
TARGET = '127.0.0.1'


def free_port():
    with socket.socket() as s:
        s.bind((TARGET, 0))
        return s.getsockname()[1]


class RelayTestCase(testtools.TestCase):

    def run_async(self, coro, timeout=30):
        return asyncio.run(asyncio.wait_for(coro, timeout))

    async def service(self, port, answer=b''):
        """Reads everything, then answers its length (and ``answer``)."""
        async def handle(reader, writer):
            n = 0
            while True:
                data = await reader.read(1 << 16)
                if not data:
                    break
                n += len(data)
            writer.write(b'%d%s' % (n, answer))
            await writer.drain()
            writer.close()
        return await asyncio.start_server(handle, TARGET, port)

    async def exchange(self, port, payload):
        reader, writer = await asyncio.open_connection(FACE, port)
        writer.write(payload)
        await writer.drain()
        writer.write_eof()
        answer = await reader.read()
        writer.close()
        return answer


class TestRelay(RelayTestCase):

    def test_counts_bytes_per_mapping_and_direction(self):
        p1, p2 = free_port(), free_port()

        async def scenario():
            s1 = await self.service(p1)
            s2 = await self.service(p2, b'!' * 1000)
            r = relay.Relay()
            await r.apply([
                {'name': 'h1/memory', 'path': 'memory', 'listen': FACE,
                 'target': TARGET, 'ports': [[p1, p1]]},
                {'name': 'h1/control', 'path': 'control', 'listen': FACE,
                 'target': TARGET, 'ports': [p2]}])
            # Half-closed by the client: the answer still comes back.
            a1 = await self.exchange(p1, b'x' * 300000)
            a2 = await self.exchange(p2, b'y' * 10)
            a3 = await self.exchange(p2, b'y' * 5)
            s1.close()
            s2.close()
            # The relay's side of the last connection closes after ours.
            await asyncio.sleep(0.1)
            return a1, a2, a3, r.stats()

        a1, a2, a3, stats = self.run_async(scenario())
        self.assertEqual(b'300000', a1)
        self.assertEqual(b'10' + b'!' * 1000, a2)
        self.assertEqual(b'5' + b'!' * 1000, a3)
        m = stats['mappings']
        self.assertEqual({'path': 'memory', 'sent': 300000, 'received': 6,
                          'connections': 1, 'open': 0}, m['h1/memory'])
        self.assertEqual({'path': 'control', 'sent': 15, 'received': 2003,
                          'connections': 2, 'open': 0}, m['h1/control'])
        paths = wan.by_path(stats)
        self.assertEqual({'sent': 300000, 'received': 6}, paths['memory'])
        self.assertEqual({'sent': 0, 'received': 0}, paths['catch-up'])

    def test_delay_is_added_each_way(self):
        port = free_port()

        async def scenario():
            s = await self.service(port)
            r = relay.Relay(delay=0.1)
            await r.apply([{'name': 'x', 'path': 'control', 'listen': FACE,
                            'target': TARGET, 'ports': [port]}])
            begin = time.monotonic()
            # Request (its end) one way, the answer the other: 2 delays.
            answer = await self.exchange(port, b'ping')
            rtt = time.monotonic() - begin
            r.delay = 0.0       # as a SIGHUP with a new delay does
            begin = time.monotonic()
            await self.exchange(port, b'ping')
            fast = time.monotonic() - begin
            s.close()
            return answer, rtt, fast

        answer, rtt, fast = self.run_async(scenario())
        self.assertEqual(b'4', answer)
        self.assertGreaterEqual(rtt, 0.2)
        self.assertLess(rtt, 0.2 + 0.5)
        self.assertLess(fast, 0.1)

    def test_stream_arrives_whole_and_in_order(self):
        port = free_port()
        payload = os.urandom(3 << 20)

        async def scenario():
            got = bytearray()

            async def handle(reader, writer):
                while True:
                    data = await reader.read(1 << 16)
                    if not data:
                        break
                    got.extend(data)
                writer.close()
            s = await asyncio.start_server(handle, TARGET, port)
            r = relay.Relay(delay=0.005)
            await r.apply([{'name': 'x', 'path': 'memory', 'listen': FACE,
                            'target': TARGET, 'ports': [port]}])
            await self.exchange(port, payload)
            s.close()
            return bytes(got)

        self.assertEqual(payload, self.run_async(scenario()))

    def test_reset_by_the_service_resets_the_client(self):
        port = free_port()

        async def scenario():
            async def handle(reader, writer):
                await reader.read(10)
                sock = writer.get_extra_info('socket')
                # SO_LINGER 0: close() sends a RST.
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                b'\1\0\0\0\0\0\0\0')
                writer.transport.abort()
            s = await asyncio.start_server(handle, TARGET, port)
            r = relay.Relay()
            await r.apply([{'name': 'x', 'path': 'memory', 'listen': FACE,
                            'target': TARGET, 'ports': [port]}])
            reader, writer = await asyncio.open_connection(FACE, port)
            writer.write(b'0123456789')
            got = await reader.read()      # the end, not a hang
            writer.close()
            s.close()
            await asyncio.sleep(0.05)
            return got, r.stats()['mappings']['x']['open']

        got, still_open = self.run_async(scenario(), timeout=10)
        self.assertEqual(b'', got)
        self.assertEqual(0, still_open)

    def test_mappings_change_on_a_running_relay(self):
        p1, p2 = free_port(), free_port()

        async def scenario():
            s1 = await self.service(p1)
            s2 = await self.service(p2)
            r = relay.Relay()
            m1 = {'name': 'a', 'path': 'memory', 'listen': FACE,
                  'target': TARGET, 'ports': [p1]}
            m2 = {'name': 'b', 'path': 'control', 'listen': FACE,
                  'target': TARGET, 'ports': [p2]}
            await r.apply([m1])
            first = await self.exchange(p1, b'abc')
            await r.apply([m2])
            second = await self.exchange(p2, b'de')
            try:
                await self.exchange(p1, b'abc')
                gone = False
            except ConnectionRefusedError:
                gone = True
            s1.close()
            s2.close()
            return first, second, gone

        first, second, gone = self.run_async(scenario())
        self.assertEqual((b'3', b'2', True), (first, second, gone))


class TestConfig(testtools.TestCase):

    def test_port_ranges(self):
        self.assertEqual([5, 7, 8, 9], relay.expand_ports([[7, 9], 5, 8]))

    def test_tbf_burst_reaches_the_rate(self):
        self.assertEqual(64 << 10, wan.tbf_burst(20))
        # 10 ms at 1 Gbit/s.
        self.assertEqual(1250000, wan.tbf_burst(1000))

    def test_difference_per_path(self):
        before = wan.by_path({'mappings': {
            'h/memory': {'path': 'memory', 'sent': 10, 'received': 1}}})
        after = wan.by_path({'mappings': {
            'h/memory': {'path': 'memory', 'sent': 110, 'received': 3},
            't/final': {'path': 'final-delta', 'sent': 7, 'received': 2}}})
        diff = wan.difference(before, after)
        self.assertEqual({'sent': 100, 'received': 2}, diff['memory'])
        self.assertEqual({'sent': 7, 'received': 2}, diff['final-delta'])

    def test_stats_file_is_written_atomically(self):
        root = self.useFixture(fixtures.TempDir()).path
        path = os.path.join(root, 'stats.json')
        relay.write_stats(path, {'pid': 1, 'mappings': {}})
        with open(path) as f:
            self.assertEqual({'pid': 1, 'mappings': {}}, json.load(f))
        self.assertEqual(['stats.json'], os.listdir(root))
