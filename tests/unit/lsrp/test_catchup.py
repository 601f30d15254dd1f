"""The catch-up engine's decisions, on scripted rounds (no cluster)."""

import asyncio
import time

import testtools

from lsrp import catchup
from lsrp import exception
from lsrp.server import names

MB = 1000000


class ScriptedCatchUp(catchup.CatchUp):
    """Rounds whose figures come from a script instead of a cluster."""

    def __init__(self, script, **kw):
        super().__init__(None, None, 'ship', ['vms/d'], 'seed', **kw)
        self.script = list(script)

    async def round(self, number, verify=False):
        changed, wire, seconds, dirty = self.script.pop(0)
        report = catchup.RoundReport(
            number, 'r%d' % number, changed, wire, seconds, dirty,
            wire / seconds, dirty * seconds * (wire / changed), 0)
        self.rounds.append(report)
        return report


class TestConvergence(testtools.TestCase):

    def run_engine(self, script, **kw):
        engine = ScriptedCatchUp(script, **kw)
        return engine, asyncio.run(engine.run())

    def test_stops_when_the_next_round_fits(self):
        engine, rounds = self.run_engine([
            (400 * MB, 400 * MB, 40, 2 * MB),    # next: 80 MB
            (80 * MB, 80 * MB, 8, 1 * MB),       # next: 8 MB
            (8 * MB, 8 * MB, 1, 1 * MB)],        # next: 1 MB
            threshold_bytes=2 * MB)
        self.assertEqual(3, len(rounds))

    def test_estimate_is_in_wire_bytes(self):
        # 100 MB of changed extents of which 10 MB travel: the next round
        # is judged by what would travel.
        engine, rounds = self.run_engine([(100 * MB, 10 * MB, 1, 5 * MB)],
                                         threshold_bytes=1 * MB)
        self.assertEqual(1, len(rounds))
        self.assertEqual(0.5 * MB, rounds[0].estimate)

    def test_threshold_in_seconds(self):
        engine, rounds = self.run_engine([
            (50 * MB, 50 * MB, 5, 10 * MB),      # next 50 MB at 10 MB/s: 5 s
        ], threshold_bytes=0, threshold_seconds=6)
        self.assertEqual(1, len(rounds))

    def test_writers_faster_than_the_link_are_reported(self):
        script = [(100 * MB, 100 * MB, 10, 20 * MB)] * 5
        e = self.assertRaises(exception.ShipmentError, self.run_engine,
                              script, threshold_bytes=MB)
        self.assertIn('cannot converge', str(e))
        self.assertIn('20.0 MB/s', str(e))
        self.assertIn('10.0 MB/s', str(e))

    def test_round_limit(self):
        script = [(100 * MB, 100 * MB, 10, 5 * MB),
                  (50 * MB, 50 * MB, 5, 5 * MB),
                  (30 * MB, 30 * MB, 3, 5 * MB)]
        e = self.assertRaises(exception.ShipmentError, self.run_engine,
                              script, threshold_bytes=MB, max_rounds=3)
        self.assertIn('no convergence in 3 rounds', str(e))


class TestRateLimiter(testtools.TestCase):

    def test_rate_changes_take_effect(self):
        async def go():
            limiter = catchup.RateLimiter(rate=4 << 20)
            begin = time.monotonic()
            for _ in range(4):
                await limiter.acquire(1 << 20)
            slow = time.monotonic() - begin
            limiter.rate = 0   # no limit
            begin = time.monotonic()
            for _ in range(100):
                await limiter.acquire(1 << 20)
            return slow, time.monotonic() - begin
        slow, unlimited = asyncio.run(go())
        # 4 MiB at 4 MiB/s (with a 2 MiB burst) takes most of a second;
        # without a limit, 100 MiB take no time at all.
        self.assertGreater(slow, 0.3)
        self.assertLess(unlimited, 0.1)


class FakeClient(object):
    """A terminal that answers every request with the same body."""

    peer = 'terminal-b at 192.0.2.7:28301'

    def __init__(self, answer):
        self.conn = self
        self.answer = answer

    async def request(self, type_, body, session=0):
        return self.answer

    async def close(self):
        pass


class FakeCluster(object):
    site = 'site-a'


class TestMessagesNameTheSite(testtools.TestCase):
    """Errors say which site's snapshot and which terminal are at fault."""

    def test_missing_base_names_the_source_site(self):
        async def connect():
            return FakeClient({'state': 'ready', 'disks': ['vms/d'],
                               'snapshots': [['seed']]})
        engine = catchup.CatchUp(FakeCluster(), connect, 'ship', ['vms/d'],
                                 'seed')
        engine._source_snapshots = lambda: [['other']]
        e = self.assertRaises(exception.ShipmentError, asyncio.run,
                              engine.plan())
        self.assertIn('the source site site-a has no snapshot seed', str(e))
        self.assertIn('vms/d', str(e))

    def test_no_snapshot_at_destination_names_the_terminal(self):
        client = FakeClient({'session': 1, 'size': 0})
        sender = catchup.DiskSender(client, FakeCluster(), 'vms/d', 'ship')
        e = self.assertRaises(exception.ShipmentError, asyncio.run,
                              sender.send(catchup.AT_DESTINATION, 'r1'))
        self.assertIn('destination terminal terminal-b at 192.0.2.7:28301 '
                      'holds no snapshot of vms/d', str(e))


class TestGroupName(testtools.TestCase):
    """Two migrations of one shipment commit their rounds in two groups."""

    def test_same_snapshot_other_disks_other_group(self):
        one = catchup.group_name('fedex-3955a740-2-r1', ['vms/img-a'])
        two = catchup.group_name('fedex-3955a740-2-r1',
                                 ['vms/img-b', 'volumes/vol-b'])
        self.assertNotEqual(one, two)
        self.assertTrue(one.startswith('fedex-3955a740-2-r1.'))

    def test_the_order_of_the_disks_does_not_matter(self):
        self.assertEqual(catchup.group_name('s-r2', ['p/a', 'p/b']),
                         catchup.group_name('s-r2', ['p/b', 'p/a']))

    def test_a_terminal_takes_it_as_a_file_name(self):
        group = catchup.group_name('fedex-%s-seed-r10' % ('9' * 8),
                                   ['vms/%s_disk' % ('f' * 36)] * 3)
        self.assertEqual(group, names.check('group', group))
