"""The final delta of a cutover, sent from the source compute itself.

While the guest is paused at site B and its source QEMU has stopped, the
blocks written since the last catch-up round go straight from this compute
to the destination terminal with the catch-up engine (``lsrp.catchup``):
read from the images' heads (no snapshot inside the pause: nothing writes
them any more), every block with its digest, and one group commit that puts
the final snapshot on all disks at once or on none. The connections are
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
from lsrp import exception

LOG = logging.getLogger(__name__)


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
        self._loop = None
        self._thread = None
        self.changed = self.wire = 0
        self.seconds = None

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
            clients = []
            try:
                for _ in self.specs:
                    mine = []
                    clients.append(mine)
                    for _ in range(self.streams):
                        mine.append(await self.connect())
            except BaseException:
                await self._close_clients(clients)
                raise
            return clients

        try:
            self._clients = self._run(connect_all(), timeout)
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

    async def _attempt(self, clients):
        senders = [catchup.DiskSender(mine[0], self.cluster, spec,
                                      self.shipment)
                   for mine, spec in zip(clients, self.specs)]
        results = await asyncio.gather(*[
            sender.send(catchup.AT_DESTINATION, self.snapshot,
                        verify=self.verify == 'image', extra=mine[1:],
                        group=self.snapshot, head=True)
            for sender, mine in zip(senders, clients)],
            return_exceptions=True)
        self.changed += sum(s.changed for s in senders)
        self.wire += sum(s.wire for s in senders)
        failures = [r for r in results if isinstance(r, BaseException)]
        if failures:
            raise failures[0]
        # The final snapshot appears on every disk at once, or on none.
        await catchup.commit_group(clients[0][0], self.snapshot, self.specs,
                                   self.snapshot)

    async def _apply(self):
        clients, self._clients = self._clients, None
        for attempt in range(self.retries + 1):
            try:
                if clients is None:
                    clients = []
                    for _ in self.specs:
                        clients.append([await self.connect()
                                        for _ in range(self.streams)])
                await self._attempt(clients)
                return
            except catchup.CONNECTION_LOST as e:
                if attempt == self.retries:
                    raise
                LOG.warning('final delta of %s: connection lost (%s); '
                            'resuming (%d/%d)', self.shipment, e,
                            attempt + 1, self.retries)
                await asyncio.sleep(self.retry_delay)
            finally:
                await self._close_clients(clients)
                clients = None

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
                 '%.3f s', self.shipment, self.changed, self.wire,
                 self.seconds)
        return self
