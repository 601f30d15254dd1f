"""WAN catch-up: rounds of changed blocks until the remainder is small.

With the seed imported at the destination (same snapshot name, digest
verified), each round takes snapshot N of every disk at the source, sends
the extents changed since N-1 to the destination terminal, which applies
them and takes snapshot N. Rounds stop when the next round is estimated to
fit the threshold, or when they cannot converge (the disks are written as
fast as the link carries): that is said with the figures, never looped on.
"""

import asyncio
import collections
import hashlib
import time

from oslo_log import log as logging
import tenacity

from lsrp import digest as digest_mod  # noqa: F401 (tests use it)
from lsrp import exception
from lsrp.protocol import client as client_mod
from lsrp.protocol import messages as m
from lsrp.protocol import sender as sender_mod

LOG = logging.getLogger(__name__)

# Moved to lsrp.protocol; the names stay here for the callers of old.
BLOCK, WINDOW, DEDUP_BLOCK = (sender_mod.BLOCK, sender_mod.WINDOW,
                              sender_mod.DEDUP_BLOCK)
RateLimiter = sender_mod.RateLimiter
TerminalClient = client_mod.TerminalClient
AT_DESTINATION = sender_mod.AT_DESTINATION
CONNECTION_LOST = sender_mod.CONNECTION_LOST
identity = sender_mod.identity
DiskSender = sender_mod.DiskSender
_Stream = sender_mod._Stream


class _RoundLost(Exception):
    """Every failure of a round's attempt lost its connection: resumed."""

    def __init__(self, error):
        super().__init__(error)
        self.error = error


RoundReport = collections.namedtuple(
    'RoundReport', 'round snapshot changed_bytes wire_bytes seconds '
                   'dirty_rate wire_rate estimate resumes')


def group_name(snapshot, disks):
    """The group a round's disks commit ``snapshot`` in at the destination.

    Named after its disks too: the migrations of a wave travel in one
    shipment and name their rounds after it, so two of them take the same
    snapshot names on their own disks at the same terminals, at the same
    time. A group named after the snapshot alone mixed their commits (and
    the group log a terminal keeps of each: a wave's catch-up failed with
    BAD_STATE).
    """
    digest = hashlib.sha256('\n'.join(sorted(disks)).encode())
    return '%s.%s' % (snapshot, digest.hexdigest()[:12])


async def commit_group(client, group, disks, snapshot, phases=('commit',),
                       release=False, defer=False):
    """C4: ``snapshot`` on all ``disks`` or none.

    ``release``: the terminal closes the images at the commit, before it
    answers (a cutover's final delta: the guest resumes on them next).
    ``defer``: the disks whose rounds started with ``record`` take no
    snapshot; their records are written after the answer.

    One terminal holds all the disks here, so it is its own coordinator:
    commit checks that every disk is prepared, as prepare would. A group
    spread over several terminals would send ``prepare`` to each first.
    """
    for phase in phases:
        body = {'group': group, 'phase': phase, 'disks': list(disks),
                'snapshot': snapshot}
        if release and phase == 'commit':
            body['release'] = True
        if defer and phase == 'commit':
            body['defer'] = True
        await client.conn.request(m.CTL_GROUP_PREPARE_AND_COMMIT, body)


class CatchUp(object):
    """Rounds for a set of disks, ``streams`` connections per disk."""

    def __init__(self, cluster, connect, shipment, disks, base_snapshot,
                 threshold_bytes=8 << 20, max_rounds=10, prefix=None,
                 limiter=None, compress=True, report=None, dedup=True,
                 streams=1, threshold_seconds=None, retries=3,
                 retry_delay=1.0):
        self.cluster = cluster
        self.connect = connect          # async () -> TerminalClient
        self.shipment = shipment
        self.disks = list(disks)
        self.previous = base_snapshot
        self.threshold = threshold_bytes
        # Or: the next round would take no longer than this at the rate the
        # last one reached.
        self.threshold_seconds = threshold_seconds
        self.max_rounds = max_rounds
        self.prefix = prefix or '%s-r' % shipment
        self.limiter = limiter or RateLimiter()
        self.compress = compress
        self.report = report or (lambda r: None)
        self.dedup = dedup
        self.streams = streams
        self.retries = retries
        self.retry_delay = retry_delay
        self.rounds = []
        self._last_snapshot_time = None
        self._next = None      # the number of the next new round snapshot
        self._pending = None   # a round snapshot a killed run did not send
        self.peer = 'the destination terminal'   # named once connected

    def _number(self, name):
        """N of a round snapshot ``<prefix>N`` of this shipment, or None."""
        rest = name[len(self.prefix):]
        if name.startswith(self.prefix) and rest.isdigit():
            return int(rest)
        return None

    def _source_snapshots(self):
        """Per disk, the user snapshots at the source, oldest first."""
        out = []
        for spec in self.disks:
            pool_name, name = spec.split('/', 1)
            with self.cluster.pool(pool_name) as pool:
                with pool.open_image(name) as image:
                    out.append([s.name for s in image.list_snapshots()
                                if s.namespace == 'user'])
        return out

    async def plan(self):
        """Where this run starts: after a kill -9, where the last one was.

        Starts from the newest snapshot that every disk has at both sites
        and that is the base or a round of this shipment taken after it; a
        round snapshot the source has beyond that and the destination not
        (a run killed mid-round) is sent first, under its name (the
        destination may resume it). New rounds are numbered past every
        round snapshot either site holds: names never collide. Whether the
        destination's N-1 really is the source's is proved at each START.
        """
        source = await asyncio.to_thread(self._source_snapshots)
        client = await self.connect()
        # The destination terminal, as messages name it.
        self.peer = client.peer
        try:
            state = await client.conn.request(m.GET_SERVER_STATE, {
                'shipment': self.shipment, 'disks': self.disks})
        finally:
            await client.close()
        there = state.get('snapshots') or [[] for _ in self.disks]
        both = [n for n in source[0] if all(n in s for s in source)]
        if self.previous not in both:
            raise exception.ShipmentError(
                shipment=self.shipment, reason='the source site %s has no '
                'snapshot %s of every disk (%s) to start from' % (
                    self.cluster.site, self.previous, ', '.join(self.disks)))
        at_destination = set.intersection(*[set(t) for t in there])
        later = [n for n in both[both.index(self.previous) + 1:]
                 if self._number(n) is not None]
        for name in later:
            if name in at_destination:
                self.previous = name
        unsent = later[later.index(self.previous) + 1:] \
            if self.previous in later else later
        self._pending = unsent[-1] if unsent else None
        numbers = [self._number(n) for names in source + there
                   for n in names]
        self._next = max([n for n in numbers if n is not None],
                         default=0) + 1
        if self._pending or self.previous in later:
            LOG.info('%s: %s to %s: going on from %s%s', self.shipment,
                     self.cluster.site, self.peer, self.previous,
                     ', with %s first' % self._pending
                     if self._pending else '')

    async def round(self, number=None, verify=False):
        """One round: snapshot, send every disk in parallel, report.

        ``number`` counts the rounds of this run (reports); the snapshot
        is named after ``plan``'s numbering.
        """
        if self._next is None:
            await self.plan()
        if number is None:
            number = len(self.rounds) + 1
        begin = time.monotonic()
        if self._pending:
            snapshot, self._pending = self._pending, None
        else:
            snapshot = '%s%d' % (self.prefix, self._next)
            self._next += 1
            await asyncio.to_thread(self.cluster.snapshot_images,
                                    self.disks, snapshot)
        since = begin - (self._last_snapshot_time or begin)
        self._last_snapshot_time = begin
        counts = {'changed': 0, 'wire': 0, 'resumes': 0}

        async def attempt():
            senders, failures = await self._send_all(snapshot, verify)
            # Pieces sent again after a resume count twice: the estimate
            # of the next round errs high, never low.
            counts['wire'] += sum(s.wire for s in senders)
            counts['changed'] += sum(s.changed for s in senders)
            if failures and all(isinstance(f, CONNECTION_LOST)
                                for f in failures):
                raise _RoundLost(failures[0])
            if failures:
                raise failures[0]

        def resuming(state):
            counts['resumes'] += 1
            LOG.warning('%s: round %d to %s: connection lost (%s); resuming '
                        'under new sessions in %.0f s', self.shipment, number,
                        self.peer, state.outcome.exception().error,
                        self.retry_delay)
        try:
            await tenacity.AsyncRetrying(
                stop=tenacity.stop_after_attempt(self.retries + 1),
                wait=tenacity.wait_fixed(self.retry_delay),
                retry=tenacity.retry_if_exception_type(_RoundLost),
                before_sleep=resuming, reraise=True)(attempt)
        except _RoundLost as e:
            raise e.error
        changed, wire, resumes = (counts['changed'], counts['wire'],
                                  counts['resumes'])
        seconds = time.monotonic() - begin
        dirty_rate = changed / since if since else None
        wire_rate = wire / seconds if seconds else None
        # What the next round will put on the wire: what is written during
        # this one, shrunk as this round's changes were (compression, dedup,
        # and extents that report whole new objects of which little is new).
        ratio = wire / changed if changed else 1.0
        estimate = (dirty_rate * seconds * ratio if dirty_rate is not None
                    else wire)
        report = RoundReport(number, snapshot, changed, wire, seconds,
                             dirty_rate, wire_rate, estimate, resumes)
        self.rounds.append(report)
        self.previous = snapshot
        self.report(report)
        return report

    async def _send_all(self, snapshot, verify):
        """Every disk's share of a round; returns (senders, exceptions)."""
        clients, senders, failures = [], [], []
        try:
            for _ in self.disks:
                mine = []
                clients.append(mine)
                for _ in range(self.streams):
                    mine.append(await self.connect())
            senders = [DiskSender(mine[0], self.cluster, spec, self.shipment,
                                  self.limiter, self.compress,
                                  dedup=self.dedup)
                       for mine, spec in zip(clients, self.disks)]
            group = group_name(snapshot, self.disks)
            results = await asyncio.gather(*[
                sender.send(self.previous, snapshot, verify, mine[1:],
                            group=group)
                for sender, mine in zip(senders, clients)],
                return_exceptions=True)
            failures = [r for r in results if isinstance(r, BaseException)]
            if not failures:
                # Snapshot N appears on every disk at once, or on none.
                await commit_group(clients[0][0], group, self.disks,
                                   snapshot)
        except CONNECTION_LOST as e:
            failures.append(e)
        finally:
            for mine in clients:
                for client in mine:
                    await client.close()
        return senders, failures

    async def run(self):
        """Rounds until the estimate fits; returns the list of reports.

        Raises ShipmentError when the rounds cannot converge.
        """
        first = len(self.rounds) + 1
        for number in range(first, first + self.max_rounds):
            report = await self.round(number)
            if report.estimate <= self.threshold:
                return self.rounds
            if (self.threshold_seconds and report.wire_rate and
                    report.estimate / report.wire_rate
                    <= self.threshold_seconds):
                return self.rounds
            # The wire traffic the writers make per second: the estimate
            # is that much over one round's time.
            needed = report.estimate / report.seconds if report.seconds else 0
            if (number >= first + 2 and report.dirty_rate
                    and report.wire_rate and needed >= report.wire_rate
                    and report.wire_bytes >= self.rounds[-2].wire_bytes):
                raise exception.ShipmentError(
                    shipment=self.shipment, reason='catch-up cannot converge:'
                    ' the disks change %.1f MB/s worth of wire traffic and the'
                    ' rounds carry %.1f MB/s; round %d sent %.1f MB, no less '
                    'than the one before. Raise the rate cap or slow the '
                    'writers.' % (needed / 1e6, report.wire_rate / 1e6,
                                  number, report.wire_bytes / 1e6))
        raise exception.ShipmentError(
            shipment=self.shipment, reason='no convergence in %d rounds: the '
            'next one would still send about %.1f MB (threshold %.1f MB)' % (
                self.max_rounds, self.rounds[-1].estimate / 1e6,
                self.threshold / 1e6))
