"""nova_fedex's final delta, for real: site-a's heads to site-b's terminal.

What the source compute does inside a cutover's pause, against the two
real Ceph clusters and a real lsrp-server at site-b: connections opened
first, then the blocks written since the last catch-up round read from the
images' heads (no snapshot at site-a), applied and committed as one group
at site-b without a snapshot there either: site-b's state at the resume is
kept by a record written after the commit (``lsrp.server.records``),
judged with ``rbd export | sha256sum``.
"""

import asyncio
import json
import os
import socket
import time
from unittest import mock

from lsrp import catchup
from lsrp import exception
from lsrp.protocol import messages as m
from lsrp.server import records
from nova_fedex import final_delta
from tests.functional import test_catchup

MiB = 1 << 20


class TestFinalDelta(test_catchup.CatchUpTestCase):

    def snapshots(self, spec):
        return [x['name'] for x in json.loads(self.rbd_cli(
            'site-b', 'snap', 'ls', '--format', 'json', spec))]

    def last_round(self, port, specs, shipment):
        """The manager's last catch-up round before the cutover."""
        engine = catchup.CatchUp(self.sites['site-a'], self.connector(port),
                                 shipment, specs, 'seed')
        asyncio.run(engine.round(1))

    def test_heads_arrive_bit_exact_in_one_commit(self):
        self._heads_arrive_bit_exact('image')

    def test_rounds_begun_before_the_pause_arrive_bit_exact(self):
        # The default: sessions and REPLICATION_START before the pause,
        # only the blocks (each with its digest) and the commit inside it.
        self._heads_arrive_bit_exact('blocks')

    def _heads_arrive_bit_exact(self, verify):
        specs, shipment = self.seeded_group(2, 16 * MiB)
        _proc, port = self._serve()
        self.last_round(port, specs, shipment)
        # The guest writes on after the last round, then stops (paused).
        for seed, spec in enumerate(specs):
            self.write(spec, count=4, seed=10 + seed)
        delta = final_delta.FinalDelta(
            self.sites['site-a'], self.connector(port), shipment, specs,
            'fedex-final', streams=2, verify=verify,
            describe=('terminal-site-b', 'server-1'))
        delta.open()
        if verify == 'blocks':
            # Written after open(), as the guest does until it pauses.
            for seed, spec in enumerate(specs):
                self.write(spec, count=2, seed=20 + seed)
        try:
            delta.apply(120)
            # After the resume: whole images, A's head against B's final
            # snapshot (the guest writes B's head now).
            with self.sites['site-b'].pool('vms') as pool:
                with pool.open_image(specs[0].split('/')[1]) as img:
                    img.write(0, b'written at B after the resume')
            compared = delta.compare(120)
            # A mismatch is found: A's head written after the delta.
            self.write(specs[1], count=1, seed=31)
            differs = delta.compare(120)
        finally:
            delta.close()
        self.assertGreater(delta.changed, 0)
        self.assertEqual(specs, [spec for spec, _, _ in compared])
        for spec, a, b in compared:
            self.assertEqual(a, b)
        self.assertEqual([False, True],
                         [a != b for _, a, b in differs])
        self.assertEqual(compared[0], differs[0])
        for spec in specs[:1]:
            # B's state at the resume: its record, read by rbd itself.
            self.assertEqual(
                self.cli_sha256('site-a', spec),
                self.cli_sha256('site-b',
                                records.record_spec(spec, 'fedex-final')))
            # No snapshot was taken inside the "pause", at either site.
            with self.pool().open_image(spec.split('/')[1]) as img:
                self.assertNotIn('fedex-final',
                                 [s.name for s in img.list_snapshots()])
            self.assertNotIn('fedex-final', self.snapshots(spec))

    def _cut_over(self, port, specs, shipment):
        """Last round, writes, the delta applied; returns the FinalDelta."""
        self.last_round(port, specs, shipment)
        for seed, spec in enumerate(specs):
            self.write(spec, count=3, seed=40 + seed)
        delta = final_delta.FinalDelta(
            self.sites['site-a'], self.connector(port), shipment, specs,
            'fedex-final', describe=('terminal-site-b', 'server-1'))
        delta.open()
        self.addCleanup(delta.close)
        delta.apply(120)
        return delta

    def test_a_terminal_killed_before_its_record_loses_only_the_record(self):
        specs, shipment = self.seeded_group(1, 16 * MiB)
        spec = specs[0]
        name = spec.split('/')[1]
        proc, port = self._serve(point='server-record')
        delta = self._cut_over(port, specs, shipment)
        # The commit was answered (the guest would run at B now); killed
        # before the record was written.
        self.wait_for_server_point(proc, 'server-record')
        with self.sites['site-b'].pool('vms') as pool:
            self.assertTrue(pool.image_exists(
                records.record_name(name, 'fedex-final')))
        _proc, port = self._serve(port=port)
        # The head keeps the final state (never rolled back: the guest
        # runs on it); the unfinished record is gone, and reading it says so.
        self.assertEqual(self.cli_sha256('site-a', spec),
                         self.cli_sha256('site-b', spec))
        with self.sites['site-b'].pool('vms') as pool:
            self.assertFalse(pool.image_exists(
                records.record_name(name, 'fedex-final')))
        e = self.assertRaises(exception.RemoteError, delta.compare, 60)
        self.assertIn('nor a complete record', str(e))

    def test_a_failed_comparison_has_stopped_reading_at_a(self):
        """B's terminal gone: A's reads have ended when compare() raises.

        The compute closes the cluster connection right after; a read
        still running in librbd then crashed nova-compute (SIGSEGV), when
        the chaos soak cut the WAN during the comparison.
        """
        specs, shipment = self.seeded_group(1, 16 * MiB)
        proc, port = self._serve()
        delta = self._cut_over(port, specs, shipment)
        # A's image grows (the guest runs at B now; this is only a long
        # read at A): reading it whole takes far longer than the failure.
        with self.pool().open_image(specs[0].split('/')[1]) as img:
            img.resize(144 * MiB)
            for off in range(16 * MiB, 144 * MiB, 4 * MiB):
                img.write(off, os.urandom(4 * MiB))
        proc.kill()
        proc.wait()
        reads = []
        source_digest = delta._digest_at_source

        def recorded(spec, *args):
            reads.append(['reading', spec])
            try:
                return source_digest(spec, *args)
            finally:
                reads[-1][0] = 'ended'
        delta._digest_at_source = recorded
        e = self.assertRaises(exception.FedexException, delta.compare, 120)
        # Begun and ended, or never begun (B failed first): none running,
        # and none begins after the call (a read left behind would have
        # begun or gone on in these seconds).
        at_return = [list(r) for r in reads]
        time.sleep(2)
        self.assertEqual(at_return, reads, e)
        self.assertIn(reads, ([], [['ended', specs[0]]]), e)

    def test_a_delta_beyond_the_journal_is_snapshotted_in_the_pause(self):
        specs, shipment = self.seeded_group(1, 16 * MiB)
        spec = specs[0]

        async def scenario():
            async with self.serving() as server:
                await asyncio.to_thread(self._cut_over, server.port, specs,
                                        shipment)

        with mock.patch.object(records, 'JOURNAL_LIMIT', 4096):
            self.run_async(scenario())
        # The old way: snapshot N at B, no record left behind.
        self.assertIn('fedex-final', self.snapshots(spec))
        self.assertEqual(self.cli_sha256('site-a', spec),
                         self.cli_sha256('site-b', spec + '@fedex-final'))
        with self.sites['site-b'].pool('vms') as pool:
            self.assertFalse(pool.image_exists(
                records.record_name(spec.split('/')[1], 'fedex-final')))

    def test_an_unreachable_terminal_is_named_before_the_pause(self):
        specs, shipment = self.seeded_group(1, 8 * MiB)
        with socket.socket() as s:
            s.bind(('127.0.0.1', 0))
            port = s.getsockname()[1]       # nobody listens there
        delta = final_delta.FinalDelta(
            self.sites['site-a'], self.connector(port), shipment, specs,
            'fedex-final', describe=('terminal-site-b', 'server-1'))
        e = self.assertRaises(exception.FinalDeltaFailed, delta.open)
        self.assertIn('terminal-site-b', str(e))
        self.assertIn('cannot connect before the pause', str(e))

    def test_a_delta_that_cannot_finish_in_time_fails(self):
        specs, shipment = self.seeded_group(1, 8 * MiB)
        closed = []

        silent = []

        class Silent(object):
            """A terminal that begins the round, then never answers."""

            peer = 'terminal-site-b'

            class conn(object):
                @staticmethod
                async def request(type_, body, *args, **kwargs):
                    if not silent and type_ == m.INIT_SESSION:
                        return {'session': 1, 'snapshot': 'seed',
                                'size': 8 * MiB}
                    if not silent and type_ == m.REPLICATION_START:
                        return {'offset': 0}
                    await asyncio.Event().wait()

                @staticmethod
                async def submit(*args, **kwargs):
                    return asyncio.get_running_loop().create_future()

                @staticmethod
                def check(body, type_):
                    return body

            async def close(self):
                closed.append(self)

        async def connect():
            return Silent()

        delta = final_delta.FinalDelta(
            self.sites['site-a'], connect, shipment, specs, 'fedex-final',
            describe=('terminal-site-b', 'server-1'))
        delta.open()
        self.write(specs[0], count=2, seed=3)
        try:
            e = self.assertRaises(exception.FinalDeltaFailed, delta.apply,
                                  0.5)
        finally:
            delta.close()
        self.assertIn('not done in', str(e))
        self.assertEqual(1, len(closed))      # the connection was closed

        # Silent already before the pause: named then, nothing paused.
        silent.append(True)
        closed[:] = []
        delta = final_delta.FinalDelta(
            self.sites['site-a'], connect, shipment, specs, 'fedex-final',
            describe=('terminal-site-b', 'server-1'))
        e = self.assertRaises(exception.FinalDeltaFailed, delta.open, 0.5)
        self.assertIn('cannot connect before the pause', str(e))
        self.assertEqual(1, len(closed))
