"""A TCP relay with an optional one-way delay: the far end of the test WAN.

Run inside the WAN namespace: it listens on the namespace's veth address and
forwards to the destination terminal behind the root namespace's veth
address, so that every byte crosses the veth pair (and its ``tbf`` rate
limit) in both directions. ``netem`` does not exist in this kernel, so the
delay, if any, is added here.
"""

import argparse
import asyncio
import time


async def _pump(reader, writer, delay):
    queue = asyncio.Queue()

    async def deliver():
        while True:
            due, data = await queue.get()
            if data is None:
                break
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        writer.close()

    sender = asyncio.ensure_future(deliver())
    try:
        while True:
            data = await reader.read(1 << 16)
            if not data:
                break
            await queue.put((time.monotonic() + delay, data))
    except (ConnectionError, OSError):
        pass
    await queue.put((0, None))
    try:
        await sender
    except (ConnectionError, OSError):
        pass


async def serve(listen, target, delay):
    async def handle(reader, writer):
        try:
            up_reader, up_writer = await asyncio.open_connection(*target)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pump(reader, up_writer, delay),
                             _pump(up_reader, writer, delay))

    server = await asyncio.start_server(handle, *listen)
    print('relay %s:%d -> %s:%d' % (listen + target), flush=True)
    async with server:
        await server.serve_forever()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--listen', required=True, metavar='HOST:PORT')
    parser.add_argument('--target', required=True, metavar='HOST:PORT')
    parser.add_argument('--delay-ms', type=float, default=0)
    args = parser.parse_args()

    def addr(text):
        host, port = text.rsplit(':', 1)
        return host, int(port)
    asyncio.run(serve(addr(args.listen), addr(args.target),
                      args.delay_ms / 1000.0))


if __name__ == '__main__':
    main()
