"""The final delta of a cutover, sent from the source compute itself.

While the guest is paused at site B and its source QEMU has stopped, the
blocks written since the last catch-up round go straight from this compute
to the destination terminal with the catch-up engine (``lsrp.catchup``):
read from the images' heads (no snapshot inside the pause: nothing writes
them any more), every block with its digest, and one group commit that ends
the round on all disks at once or on none. B's state at the resume is kept
by the destination terminal in a record of each disk written after the
commit's answer (``lsrp.server.records``): no snapshot at B inside the
pause either. The connections are
opened *before* the pause (:meth:`FinalDelta.open`); only a connection lost
during the delta makes a new one, and the round resumes where the terminal
says it stopped.

nova-compute runs its own threads (or eventlet); the engine is asyncio, so
it gets an event loop of its own in a thread.
"""

import asyncio
import concurrent.futures
import threading
import time

from oslo_log import log as logging

from lsrp import catchup
from lsrp import digest as digest_mod
from lsrp import exception
from lsrp.protocol import messages as m
from lsrp.protocol import sender as sender_mod

LOG = logging.getLogger(__name__)
# The whole-image comparison after the resume (the terminals' default).
DIGEST = 'blake3'


class HeadSender(sender_mod.DiskSender):
    """A disk's final delta in two halves, around the pause.

    ``begin()`` before the pause: the session at the destination terminal,
    REPLICATION_START (the terminal opens its image, proves N-1, checks its
    head and records the round in flight) and the source image opened.
    Nothing writes either image meanwhile: B's QEMU waits for the incoming
    memory, and the changes at A are read only in ``finish()``, inside the
    pause, from the head (the source QEMU stopped). No dedup: a block
    changed since the last round is new, and the checksum exchange would
    cost a read at B and a round trip inside the pause.
    """

    def __init__(self, *args, **kwargs):
        kwargs.setdefault('dedup', False)
        super().__init__(*args, **kwargs)
        self._pool = self._image = None
        self._round = None

    async def begin(self, snapshot, extra=(), group=None):
        conn = self.client.conn
        opened = await conn.request(m.INIT_SESSION, {
            'disk': self.spec, 'shipment': self.shipment})
        session = opened['session']
        from_snapshot = opened.get('snapshot')
        if from_snapshot is None:
            raise exception.ShipmentError(
                shipment=self.shipment, reason='the destination terminal %s '
                'holds no snapshot of %s to go on from: send the seed first'
                % (self.client.peer, self.spec))
        pool_name, name = self.spec.split('/', 1)
        self._pool = self.cluster.pool(pool_name)
        try:
            return await self._begin(name, session, from_snapshot, snapshot,
                                     extra, group)
        except BaseException:
            # Closed now: a handle left to the garbage collector may close
            # in any thread, and librbd's close can block there.
            self.close()
            raise

    async def _begin(self, name, session, from_snapshot, snapshot, extra,
                     group):
        conn = self.client.conn
        self._image = self._pool.open_image(name, read_only=True)
        size = await asyncio.to_thread(self._image.size)
        start = {'snapshot': snapshot, 'size': size,
                 'from_snapshot': from_snapshot, 'record': True}
        base = await asyncio.to_thread(sender_mod.identity, self.cluster,
                                       self._image, from_snapshot)
        if base:
            start['base_id'] = base
        started = await self.start_round(conn, session, self._pool, name,
                                         start)
        self.resumed_at = started['offset']
        streams = [sender_mod.Stream(self, conn, session)]
        for client in extra:
            await client.conn.request(m.INIT_SESSION, {
                'disk': self.spec, 'shipment': self.shipment,
                'attach': session})
            streams.append(sender_mod.Stream(self, client.conn, session))
        self._round = (session, from_snapshot, size, streams, snapshot,
                       group)
        return self

    async def finish(self):
        """Inside the pause: the changed blocks, then the round's end."""
        session, from_snapshot, size, streams, snapshot, group = self._round
        try:
            if self.resumed_at < size:
                await self.stream(streams, self._image, from_snapshot,
                                  self.resumed_at)
            body = {'snapshot': snapshot}
            if group:
                body['group'] = group
            await self.client.conn.request(m.REPLICATION_COMPLETE, body,
                                           session)
        finally:
            self.close()
        return self.changed, self.wire

    def close(self):
        for handle in (self._image, self._pool):
            if handle is not None:
                handle.close()
        self._image = self._pool = None


class _Stopped(Exception):
    """A source read given up: the comparison failed elsewhere."""


def _until(pieces, stop, spec):
    """``pieces`` until ``stop`` is set (then _Stopped)."""
    for piece in pieces:
        if stop is not None and stop.is_set():
            raise _Stopped('reading %s stopped: the comparison failed' %
                           spec)
        yield piece


class FinalDelta(object):
    """One cutover's final delta.

    ``open()`` before the pause, ``apply()`` once the source QEMU stopped,
    ``close()`` always.
    ``connect``: ``async () -> catchup.TerminalClient`` (connected);
    ``specs``: the source images (``pool/image``) as the catch-up rounds
    named them; ``snapshot``: the name the final state gets at site B.
    """

    def __init__(self, cluster, connect, shipment, specs, snapshot,
                 streams=1, retries=3, retry_delay=0.5, verify='blocks',
                 describe=None):
        self.cluster = cluster
        self.connect = connect
        self.shipment = shipment
        self.specs = list(specs)
        self.snapshot = snapshot
        self.streams = streams
        self.retries = retries
        self.retry_delay = retry_delay
        self.verify = verify
        self.describe = describe or ('terminal', '?')
        self._clients = None
        self._begun = None
        self._loop = None
        self._thread = None
        self.changed = self.wire = 0
        self.seconds = None
        # Seconds of the last attempt's parts (the blocks of every disk up
        # to REPLICATION_COMPLETE; the group commit): in the logs.
        self.timings = {}

    # --- the loop thread ---------------------------------------------------

    def _run(self, coro, timeout):
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout)
        except TimeoutError:
            # Cancelled in the loop: its connections close and its reads
            # finish before the caller goes on (and closes the loop).
            future.cancel()
            concurrent.futures.wait([future], 30)
            raise

    def open(self, timeout=30):
        """Connect the terminal for every disk (``streams`` each)."""
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever,
                                        name='fedex-final-delta',
                                        daemon=True)
        self._thread.start()

        async def connect_all():
            clients, senders = [], []
            try:
                for spec in self.specs:
                    mine = []
                    clients.append(mine)
                    for _ in range(self.streams):
                        mine.append(await self.connect())
                    if self.verify == 'image':
                        continue    # send() reads the whole image anyway
                    # The round begins at B now, not inside the pause.
                    senders.append(await HeadSender(
                        mine[0], self.cluster, spec, self.shipment).begin(
                            self.snapshot, mine[1:], group=self.snapshot))
            except BaseException:
                for sender in senders:
                    sender.close()
                await self._close_clients(clients)
                raise
            return clients, senders

        try:
            self._clients, self._begun = self._run(connect_all(), timeout)
        except Exception as e:
            self.close()
            raise self._failed('cannot connect before the pause: %s' % (
                e or type(e).__name__), e)
        return self

    def _failed(self, reason, cause=None):
        return exception.FinalDeltaFailed(
            server=self.describe[1], migration=self.shipment,
            terminal=self.describe[0], reason=reason, cause=cause)

    @staticmethod
    async def _close_clients(clients):
        for mine in clients or ():
            for client in mine:
                try:
                    await client.close()
                except Exception:  # noqa: S110 - closing what failed anyway
                    pass

    def close(self):
        if self._loop is None:
            return
        for sender in self._begun or ():
            sender.close()
        self._begun = None
        if self._clients is not None:
            try:
                self._run(self._close_clients(self._clients), 10)
            except Exception as e:
                LOG.debug('closing the terminal connections: %s', e)
            self._clients = None
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
        self._loop = None

    # --- the delta ---------------------------------------------------------

    async def _attempt(self, clients, begun=None):
        """One attempt; ``begun``: the HeadSenders open() began."""
        if begun:
            senders = begun
            sending = [sender.finish() for sender in senders]
        else:
            senders = [catchup.DiskSender(mine[0], self.cluster, spec,
                                          self.shipment, dedup=False)
                       for mine, spec in zip(clients, self.specs)]
            sending = [
                sender.send(catchup.AT_DESTINATION, self.snapshot,
                            verify=self.verify == 'image', extra=mine[1:],
                            group=self.snapshot, head=True, record=True)
                for sender, mine in zip(senders, clients)]
        began = time.monotonic()
        results = await asyncio.gather(*sending, return_exceptions=True)
        self.timings['blocks'] = time.monotonic() - began
        self.changed += sum(s.changed for s in senders)
        self.wire += sum(s.wire for s in senders)
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            raise failures[0]
        # Every disk's round ends at once, or none does; B's state at the
        # resume is recorded after the answer (no snapshot in the pause).
        began = time.monotonic()
        await catchup.commit_group(clients[0][0], self.snapshot, self.specs,
                                   self.snapshot, release=True, defer=True)
        self.timings['commit'] = time.monotonic() - began

    async def _apply(self):
        clients, self._clients = self._clients, None
        begun, self._begun = self._begun, None
        for attempt in range(self.retries + 1):
            try:
                if clients is None:
                    clients = []
                    for _ in self.specs:
                        clients.append([await self.connect()
                                        for _ in range(self.streams)])
                await self._attempt(clients, begun)
                return
            except catchup.CONNECTION_LOST as e:
                if attempt == self.retries:
                    raise
                LOG.warning('final delta of %s: connection lost (%s); '
                            'resuming (%d/%d)', self.shipment, e,
                            attempt + 1, self.retries)
                await asyncio.sleep(self.retry_delay)
            finally:
                # A resumed attempt begins its rounds again (send()).
                for sender in begun or ():
                    sender.close()
                begun = None
                await self._close_clients(clients)
                clients = None

    # --- after the resume --------------------------------------------------

    def _digest_at_source(self, spec, stop=None):
        """A's whole image, read in this thread; ends early once ``stop``.

        Stopped at its next chunk when the comparison has failed anyway:
        its caller closes the cluster connection next, and a read still
        running in librbd then crashed nova-compute (SIGSEGV, seen in the
        chaos soak when the WAN was cut during the comparison).
        """
        pool_name, name = spec.split('/', 1)
        with self.cluster.pool(pool_name) as pool:
            with pool.open_image(name, read_only=True) as image:
                pieces = image.iter_content()
                try:
                    return digest_mod.digest_pieces(
                        _until(pieces, stop, spec), DIGEST)[0]
                finally:
                    # Its read-ahead ends before the image closes.
                    pieces.close()

    async def _digest_at_destination(self, spec):
        client = await self.connect()
        try:
            conn = client.conn
            opened = await conn.request(m.READ_OPEN, {
                'disk': spec, 'shipment': self.shipment,
                'snapshot': self.snapshot})
            answer = await conn.request(m.READ_DIGEST,
                                        {'algorithm': DIGEST},
                                        opened['session'])
            return answer['image_digest']
        finally:
            await client.close()

    def compare(self, timeout):
        """Whole images after the resume: [(spec, at A, at B)] digests.

        A's image (its head: the source QEMU has stopped, nothing writes it
        any more) against B's state at the resume (the record of it the
        destination terminal wrote after the commit, or a final snapshot),
        which that terminal digests; both read whole, in parallel, off the
        pause. Raises on a timeout or an error.
        """
        if self._loop is None:
            raise self._failed('not connected (open() was not called)')

        stop = threading.Event()
        reading = [0]
        ended = threading.Condition()

        def source(spec):
            with ended:
                if stop.is_set():
                    raise _Stopped('reading %s not begun: the comparison '
                                   'failed' % spec)
                reading[0] += 1
            try:
                return self._digest_at_source(spec, stop)
            finally:
                with ended:
                    reading[0] -= 1
                    ended.notify_all()

        async def every():
            sources = [asyncio.ensure_future(asyncio.to_thread(source, spec))
                       for spec in self.specs]
            destinations = [asyncio.ensure_future(
                self._digest_at_destination(spec)) for spec in self.specs]
            try:
                digests = await asyncio.gather(*sources, *destinations)
            except BaseException:
                # The reads at A stop at their next chunk (the caller waits
                # for them: a thread cannot be cancelled); B's requests are
                # dropped, and every outcome is collected here.
                stop.set()
                for task in destinations:
                    task.cancel()
                await asyncio.gather(*sources, *destinations,
                                     return_exceptions=True)
                raise
            n = len(self.specs)
            return list(zip(digests[:n], digests[n:]))
        try:
            results = self._run(every(), timeout)
        except BaseException:
            # A failure or the timeout: no read at A outlives this call
            # (the connection it reads through is closed after it).
            stop.set()
            with ended:
                ended.wait_for(lambda: reading[0] == 0, 60)
            raise
        return [(spec, a, b) for spec, (a, b) in zip(self.specs, results)]

    def apply(self, timeout):
        """Send and commit the final delta of every disk; raise if not done.

        Raises FinalDeltaFailed (after the retries, on a digest the terminal
        rejects, on a timeout): the cutover must then roll back.
        """
        if self._loop is None:
            raise self._failed('not connected (open() was not called)')
        begin = time.monotonic()
        try:
            self._run(self._apply(), timeout)
        except TimeoutError as e:
            raise self._failed('not done in %.0f s' % timeout, e)
        except Exception as e:
            raise self._failed('%s: %s' % (type(e).__name__, e), e)
        self.seconds = time.monotonic() - begin
        LOG.info('final delta of %s: %d bytes changed, %d on the wire, '
                 '%.3f s (blocks %.3f s, group commit %.3f s)', self.shipment,
                 self.changed, self.wire, self.seconds,
                 self.timings.get('blocks', 0), self.timings.get('commit', 0))
        return self
