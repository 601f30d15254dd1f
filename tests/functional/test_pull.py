"""``lsrp pull``: an image copied from another terminal's cluster, verified.

site-a's operator pulls an image of site-b's cluster through site-b's real
``lsrp-server`` (a transfer driven by the destination); the copy is judged
with ``rbd export | sha256sum`` at both sites. Bad input ends in one line
and the documented exit code: 2 for refusals and missing things, 3 when the
bytes are not the ones the terminal vouched for (a lying terminal, played
by a small LSRP server in this test).
"""

import asyncio
import os
import random
import threading

from lsrp import access
from lsrp import digest as digest_mod
from lsrp.protocol import connection as connection_mod
from lsrp.protocol import frames
from lsrp.protocol import messages as m
from lsrp import tls
from tests.functional import test_catchup
from tests.functional import test_peer_errors

MiB = 1 << 20
SIZE = 8 * MiB


class TestPull(test_catchup.CatchUpTestCase):

    lsrp = test_peer_errors.TestPeerErrors.lsrp
    tls_args = test_peer_errors.TestPeerErrors.tls_args
    assert_one_line = test_peer_errors.TestPeerErrors.assert_one_line

    def setUp(self):
        super().setUp()
        self.name_a, self.ca, self.cert, self.key = self.terminal('site-a')

    def source_image(self, peers=None):
        """An image at site-b with snapshot s1, in ship1's access list."""
        pool, self.image = self.new_image(SIZE, site='site-b')
        self.spec = 'vms/' + self.image
        for name in (self.image, self.image + '.importing-ship1'):
            self.addCleanup(self._remove_image, 'site-a', 'vms', name)
        rng = random.Random(self.image)
        with pool.open_image(self.image) as img:
            for _ in range(5):
                img.write(rng.randrange(0, SIZE - MiB),
                          os.urandom(rng.randrange(1, MiB)))
            img.create_snapshot('s1')
        access.authorize(self.state_b, 'ship1', [self.spec], sink='rbd',
                         peers=peers or [self.name_a])

    def serve(self):
        proc, port = self._serve()
        self.addCleanup(_stop, proc)
        return port

    def pull(self, port, image=None, snapshot='s1', *extra):
        return self.lsrp('pull', image or self.spec, '--from',
                         '127.0.0.1:%d' % port, '--shipment-id', 'ship1',
                         '--snapshot', snapshot, *extra, *self.tls_args())

    def test_pull_is_bit_exact(self):
        self.source_image()
        port = self.serve()
        result = self.pull(port)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertIn('pulled %s@s1' % self.spec, result.stdout)
        self.assertEqual(
            self.cli_sha256('site-b', self.spec + '@s1'),
            self.cli_sha256('site-a', self.spec + '@s1'))
        # Pulled again: the copy exists, nothing is overwritten.
        self.assert_one_line(self.pull(port),
                             'image %s already exists' % self.spec)

    def test_bad_input_is_one_line_exit_2(self):
        self.source_image()
        port = self.serve()
        self.assert_one_line(self.pull(port, snapshot='nope'),
                             'has no snapshot nope', 'READ_OPEN')
        self.assert_one_line(self.pull(port, image='vms/unknown'),
                             'vms/unknown is not an image of shipment ship1')
        with self.pool('site-a') as pool:
            self.assertFalse(pool.image_exists(self.image))

    def test_a_refused_peer_is_told_and_logged(self):
        self.source_image(peers=['terminal-elsewhere'])
        port = self.serve()
        self.assert_one_line(self.pull(port), 'may not read shipment ship1',
                             'NOT_ALLOWED')
        with open(self.server_log) as f:
            log = f.read()
        self.assertIn('refused READ_OPEN', log)
        self.assertIn(self.name_a, log)

    def test_bytes_the_terminal_does_not_vouch_for_exit_3(self):
        self.image = self.name('lied')
        self.spec = 'vms/' + self.image
        for name in (self.image, self.image + '.importing-ship1'):
            self.addCleanup(self._remove_image, 'site-a', 'vms', name)
        port = self.lying_terminal()
        result = self.pull(port)
        self.assertEqual(3, result.returncode, result.stderr)
        self.assertEqual(1, len(result.stderr.strip().splitlines()),
                         result.stderr)
        self.assertIn('verification failed', result.stderr)
        self.assertIn('the terminal says', result.stderr)
        with self.pool('site-a') as pool:
            self.assertFalse(pool.image_exists(self.image))

    def test_a_copy_cut_off_midway_leaves_no_staging_image(self):
        self.image = self.name('cut')
        self.spec = 'vms/' + self.image
        for name in (self.image, self.image + '.importing-ship1'):
            self.addCleanup(self._remove_image, 'site-a', 'vms', name)
        port = self.lying_terminal(hang_up=True)
        result = self.pull(port)
        self.assertNotEqual(0, result.returncode, result.stderr)
        self.assertEqual(1, len(result.stderr.strip().splitlines()),
                         result.stderr)
        self.assertIn('at 127.0.0.1:%d closed' % port, result.stderr)
        with self.pool('site-a') as pool:
            # A block was written before the terminal went away.
            self.assertFalse(pool.image_exists(self.image))
            self.assertFalse(pool.image_exists(self.image +
                                               '.importing-ship1'))

    def lying_terminal(self, hang_up=False):
        """site-b's certificate, READ_* answered with a wrong image digest.

        With ``hang_up``, the connection is closed after the first block.
        """
        name, ca, cert, key = self.terminal('site-b')
        ctx = tls.server_context(ca, cert, key)
        data = os.urandom(64 << 10)
        answers = {
            m.READ_OPEN: {'session': 1, 'size': SIZE},
            m.READ_CHANGES: {'offset': 0},
            m.READ_DIGEST: {'image_digest': '0' * 64}}

        async def handle(reader, writer):
            conn = connection_mod.Connection(reader, writer)
            sent = False
            try:
                while True:
                    frame = await conn.recv()
                    if frame.type == m.HANDSHAKE:
                        body = {'version': frames.VERSION, 'server': name,
                                'id': frame.body['id']}
                    elif frame.type == m.READ_NEXT and not sent:
                        sent = True
                        body = {'offset': 0, 'length': len(data),
                                'data': data,
                                'digest': digest_mod.block_digest(data)}
                    elif frame.type == m.READ_NEXT and hang_up:
                        writer.close()
                        return
                    elif frame.type == m.READ_NEXT:
                        body = {'offset': SIZE, 'length': 0, 'last': True,
                                'image_digest': 'ab' * 32}
                    else:
                        body = answers[frame.type]
                    await conn.respond(frame, body)
            except Exception:
                writer.close()

        loop = asyncio.new_event_loop()
        port = test_catchup.free_port()
        server = loop.run_until_complete(asyncio.start_server(
            handle, '127.0.0.1', port, ssl=ctx))
        thread = threading.Thread(target=loop.run_forever, daemon=True)
        thread.start()

        def stop():
            loop.call_soon_threadsafe(server.close)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
        self.addCleanup(stop)
        return port


def _stop(proc):
    proc.terminate()
    proc.wait(60)
