"""A source that leaves while its request is answered fails nothing.

Its round must stay resumable (``lsrp catchup`` run again after ``kill -9``
goes on from the acknowledged offset): only a request that failed on its
own (Ceph, a full pool) marks the session failed, which rolls the round
back.
"""

import asyncio

import fixtures
import testtools

from lsrp import exception
from lsrp.protocol import frames
from lsrp.protocol import messages as m
from lsrp.server import handler as handler_mod
from lsrp.server import service


class FakeConn(object):
    """Records the errors answered; ``gone`` as a Connection keeps it."""

    peer = 'terminal-site-a'

    def __init__(self):
        self.gone = None
        self.errors = []

    async def send_error(self, code, message, seq=0, session=0):
        self.errors.append((code, message))


class FakeServer(object):

    def __init__(self, shared):
        self.shared = {7: shared}


class TestPeerGone(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.logs = self.useFixture(fixtures.FakeLogger())

    def handle(self, error, gone):
        shared = service.SharedSession('vms/d', sink=object(), shipment='s')
        shared.attach('stream')
        shared.started(0)
        shared.acked['stream'] = 4 << 20
        conn = FakeConn()
        handler = handler_mod.PeerHandler(FakeServer(shared), conn,
                                          'terminal-site-a')
        handler.sessions.add(7)

        async def dispatch(frame, entry=None):
            if gone:
                conn.gone = error
            raise error
        handler._dispatch = dispatch
        frame = frames.Frame(m.REPLICATION_CHECKSUM, {}, session=7, seq=3)
        return shared, conn, handler, frame

    def test_the_own_peer_gone_keeps_the_round_resumable(self):
        error = exception.ConnectionClosed(peer='terminal-site-a',
                                           detail=' (reset)')
        shared, conn, handler, frame = self.handle(error, gone=True)
        self.assertRaises(exception.ConnectionClosed, asyncio.run,
                          handler._handle(frame, None))
        self.assertFalse(shared.failed)
        self.assertEqual(4 << 20, shared.frontier())

    def test_a_failed_request_fails_the_round(self):
        error = exception.ImageBusy(site='site-b', target='vms/d',
                                    reason='locked')
        shared, conn, handler, frame = self.handle(error, gone=False)
        self.assertTrue(asyncio.run(handler._handle(frame, None)))
        self.assertTrue(shared.failed)
        self.assertIsNone(shared.frontier())
        self.assertEqual('INTERNAL', conn.errors[0][0])
        self.assertIn('REPLICATION_CHECKSUM failed: site-b: image vms/d is '
                      'busy', self.logs.output)

    def test_another_terminals_connection_closing_fails_the_request(self):
        # A ConnectionClosed of some other connection while this one is
        # alive is the request's failure, answered to this peer.
        error = exception.ConnectionClosed(peer='terminal-site-c',
                                           detail='')
        shared, conn, handler, frame = self.handle(error, gone=False)
        self.assertTrue(asyncio.run(handler._handle(frame, None)))
        self.assertTrue(shared.failed)
        self.assertEqual('INTERNAL', conn.errors[0][0])
