"""A TCP relay with a one-way delay and byte counters: the test WAN's far end.

Each *mapping* listens on an address and a set of ports (a "WAN face") and
forwards every connection to the same port of a target address. With
``netns`` in its configuration the relay runs in the root network namespace
but opens its listening sockets inside the WAN's namespace: network
namespace membership is per thread in Linux and a socket keeps the
namespace it was made in, so a helper thread enters the namespace
(``setns``), binds, and leaves; the relay's own connections to the targets
(services on the root namespace's loopback) are made from the root
namespace. A client in the root namespace that connects to a face crosses
the veth pair (and its ``tbf``) to reach the relay, and the answers cross
back: each direction is shaped once and delayed once. ``netem`` does not
exist in this kernel, so the delay is added here.

Configuration (JSON, ``--config``; SIGHUP re-reads it: the delay and the
mappings change on a running relay, connections in flight are kept)::

    {"netns": "/var/run/netns/fedex-wan160", "delay_ms": 20,
     "stats": "/path/stats.json",
     "mappings": [{"name": "site-b-h1/memory", "path": "memory",
                   "listen": "10.77.160.12", "target": "127.78.32.12",
                   "ports": [[20440, 20459]]}, ...]}

Every second (and at exit) the relay writes its counters to ``stats``: per
mapping, the bytes from the clients to the service (``sent``) and back
(``received``), and the connections. The old form, one mapping in the
relay's own namespace, still works: ``--listen HOST:PORT --target HOST:PORT
--delay-ms N``.
"""

import argparse
import asyncio
import ctypes
import json
import os
import signal
import socket
import threading
import time

CLONE_NEWNET = 0x40000000
# Per direction of a connection: what the relay holds before it stops
# reading (the sender then waits, as behind a slow link). Far above the
# bandwidth-delay product of any link the sandbox emulates (1 Gbit/s at
# 40 ms is 5 MB).
BUFFER_LIMIT = 16 << 20
READ_SIZE = 256 << 10
STATS_INTERVAL = 1.0


def expand_ports(ranges):
    """[[lo, hi], port, ...] -> sorted list of ports."""
    out = set()
    for r in ranges:
        if isinstance(r, int):
            out.add(r)
        else:
            lo, hi = r
            out.update(range(lo, hi + 1))
    return sorted(out)


def listen_sockets(addrs, netns=None):
    """Listening sockets for [(host, port)], made inside ``netns`` if given.

    The namespace is entered by a thread of its own, which ends afterwards:
    the caller's threads stay where they are.
    """
    result = {}

    def make():
        socks = []
        try:
            for host, port in addrs:
                s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                socks.append(s)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind((host, port))
                s.listen(128)
                s.setblocking(False)
        except BaseException:
            for s in socks:
                s.close()
            raise
        return socks

    def run():
        try:
            if netns:
                libc = ctypes.CDLL(None, use_errno=True)
                fd = os.open(netns, os.O_RDONLY)
                try:
                    if libc.setns(fd, CLONE_NEWNET) != 0:
                        err = ctypes.get_errno()
                        raise OSError(err, 'setns(%s): %s' % (
                            netns, os.strerror(err)))
                finally:
                    os.close(fd)
            result['socks'] = make()
        except BaseException as e:
            result['error'] = e

    thread = threading.Thread(target=run, name='relay-netns')
    thread.start()
    thread.join()
    if 'error' in result:
        raise result['error']
    return result['socks']


class Counter(object):
    """Bytes and connections of one mapping."""

    def __init__(self, name, path):
        self.name, self.path = name, path
        self.sent = 0           # client -> service
        self.received = 0       # service -> client
        self.connections = 0
        self.open = 0

    def as_dict(self):
        return {'path': self.path, 'sent': self.sent,
                'received': self.received, 'connections': self.connections,
                'open': self.open}


class _Buffer(object):
    """A FIFO of (due time, bytes) bounded in bytes."""

    def __init__(self, limit=BUFFER_LIMIT):
        self.items = []
        self.size = 0
        self.limit = limit
        self.changed = asyncio.Event()

    async def put(self, due, data):
        # The end mark never waits: the delivery may be gone.
        while data is not None and self.size >= self.limit:
            self.changed.clear()
            await self.changed.wait()
        self.items.append((due, data))
        self.size += len(data) if data else 0
        self.changed.set()

    async def get(self):
        while not self.items:
            self.changed.clear()
            await self.changed.wait()
        due, data = self.items.pop(0)
        self.size -= len(data) if data else 0
        self.changed.set()
        return due, data


class Relay(object):

    def __init__(self, delay=0.0, netns=None):
        self.delay = delay
        self.netns = netns
        self.counters = {}      # mapping name -> Counter
        self.servers = {}       # (host, port) -> (mapping name, server)
        self.mappings = {}      # mapping name -> mapping dict
        self._tasks = set()

    # --- one connection ------------------------------------------------------

    async def _pump(self, reader, writer, counter, attr, abort):
        """Copy one direction; each chunk leaves ``delay`` after it came."""
        buf = _Buffer()

        async def deliver():
            while True:
                due, data = await buf.get()
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if data is None:
                    break
                writer.write(data)
                await writer.drain()
            # Half-close: the other direction may still carry answers.
            if writer.can_write_eof():
                writer.write_eof()

        sender = asyncio.ensure_future(deliver())
        try:
            while True:
                read = asyncio.ensure_future(reader.read(READ_SIZE))
                done, _ = await asyncio.wait(
                    {read, sender}, return_when=asyncio.FIRST_COMPLETED)
                if read not in done:
                    # The delivery failed (its peer reset): stop reading.
                    read.cancel()
                    raise ConnectionResetError('delivery failed')
                data = read.result()
                if not data:
                    break
                setattr(counter, attr, getattr(counter, attr) + len(data))
                # Waits while the buffer is full, or the delivery fails.
                put = asyncio.ensure_future(
                    buf.put(time.monotonic() + self.delay, data))
                done, _ = await asyncio.wait(
                    {put, sender}, return_when=asyncio.FIRST_COMPLETED)
                if put not in done:
                    put.cancel()
                    raise ConnectionResetError('delivery failed')
            # The end, too, arrives a delay later.
            await buf.put(time.monotonic() + self.delay, None)
            await sender
        except (ConnectionError, OSError):
            # A reset on either side resets both: as one TCP path would.
            abort()
            sender.cancel()

    async def _handle(self, name, target, reader, writer):
        counter = self.counters[name]
        counter.connections += 1
        counter.open += 1
        _nodelay(writer)
        try:
            try:
                up_reader, up_writer = await asyncio.open_connection(*target)
            except OSError:
                writer.transport.abort()
                return
            _nodelay(up_writer)

            def abort():
                writer.transport.abort()
                up_writer.transport.abort()
            await asyncio.gather(
                self._pump(reader, up_writer, counter, 'sent', abort),
                self._pump(up_reader, writer, counter, 'received', abort))
            up_writer.close()
            writer.close()
        finally:
            counter.open -= 1

    # --- mappings ------------------------------------------------------------

    async def apply(self, mappings, delay=None):
        """Listen as ``mappings`` say: new faces open, removed ones close."""
        if delay is not None:
            self.delay = delay
        wanted = {}
        for m in mappings:
            for port in expand_ports(m['ports']):
                wanted[(m['listen'], port)] = (m['name'], (m['target'], port))
            self.counters.setdefault(m['name'], Counter(m['name'],
                                                        m.get('path')))
            self.counters[m['name']].path = m.get('path')
            self.mappings[m['name']] = m
        for addr in list(self.servers):
            if addr not in wanted or wanted[addr][0] != self.servers[addr][0]:
                self.servers.pop(addr)[1].close()
        new = [addr for addr in wanted if addr not in self.servers]
        socks = listen_sockets(new, self.netns) if new else []
        for addr, sock in zip(new, socks):
            name, target = wanted[addr]
            server = await asyncio.start_server(
                lambda r, w, n=name, t=target: self._handle(n, t, r, w),
                sock=sock)
            self.servers[addr] = (name, server)

    def stats(self):
        return {'pid': os.getpid(), 'delay_ms': self.delay * 1000,
                'at': time.time(),
                'mappings': {n: c.as_dict() for n, c in
                             sorted(self.counters.items())}}


def _nodelay(writer):
    sock = writer.get_extra_info('socket')
    if sock is not None:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass


def write_stats(path, stats):
    tmp = '%s.%d.tmp' % (path, os.getpid())
    with open(tmp, 'w') as f:
        json.dump(stats, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def read_config(path):
    with open(path) as f:
        return json.load(f)


async def serve_config(path):
    conf = read_config(path)
    relay = Relay(conf.get('delay_ms', 0) / 1000.0, conf.get('netns'))
    await relay.apply(conf['mappings'])
    stats_path = conf.get('stats')
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    reload = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    loop.add_signal_handler(signal.SIGHUP, reload.set)
    print('relay: %d listening sockets, delay %g ms' % (
        len(relay.servers), relay.delay * 1000), flush=True)
    last = None
    while not stop.is_set():
        if reload.is_set():
            reload.clear()
            try:
                conf = read_config(path)
                await relay.apply(conf['mappings'],
                                  conf.get('delay_ms', 0) / 1000.0)
                print('relay: reloaded, %d listening sockets, delay %g ms' % (
                    len(relay.servers), relay.delay * 1000), flush=True)
            except Exception as e:     # keep relaying what we had
                print('relay: reload failed: %s' % e, flush=True)
        if stats_path:
            stats = relay.stats()
            key = json.dumps([stats['mappings'], stats['delay_ms']])
            if key != last:
                write_stats(stats_path, stats)
                last = key
        try:
            await asyncio.wait_for(_either(stop, reload), STATS_INTERVAL)
        except asyncio.TimeoutError:
            pass
    if stats_path:
        write_stats(stats_path, relay.stats())


async def _either(*events):
    waits = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waits:
            w.cancel()


async def serve(listen, target, delay):
    """One mapping, in this process's namespace (the old command line)."""
    if listen[1] != target[1]:
        raise SystemExit('the relay forwards to the same port')
    relay = Relay(delay)
    await relay.apply([{'name': 'relay', 'path': None, 'listen': listen[0],
                        'target': target[0], 'ports': [listen[1]]}])
    print('relay %s:%d -> %s:%d' % (listen + target), flush=True)
    await asyncio.Event().wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--config', metavar='JSON')
    parser.add_argument('--listen', metavar='HOST:PORT')
    parser.add_argument('--target', metavar='HOST:PORT')
    parser.add_argument('--delay-ms', type=float, default=0)
    args = parser.parse_args()
    if args.config:
        asyncio.run(serve_config(args.config))
        return
    if not (args.listen and args.target):
        parser.error('--config, or --listen and --target')

    def addr(text):
        host, port = text.rsplit(':', 1)
        return host, int(port)
    asyncio.run(serve(addr(args.listen), addr(args.target),
                      args.delay_ms / 1000.0))


if __name__ == '__main__':
    main()
