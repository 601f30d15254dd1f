"""The catch-up engine's decisions, on scripted rounds (no cluster)."""

import asyncio
import time

import testtools

from lsrp import catchup
from lsrp import exception

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
