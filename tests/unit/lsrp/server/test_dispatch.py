"""The handler's dispatch: each frame type to its method, the rest refused."""

import asyncio
import inspect
from unittest import mock

import testtools

from lsrp import exception
from lsrp.protocol import frames
from lsrp.protocol import messages as m
from lsrp.server import handler as handler_mod

# What a terminal serves once the HANDSHAKE is done.
SERVED = {
    m.GET_SERVER_STATE, m.INIT_SESSION, m.REPLICATION_START,
    m.DELTA_CONSOLIDATION_START, m.READ_OPEN, m.READ_CHANGES, m.READ_NEXT,
    m.READ_DIGEST, m.CTL_GROUP_PREPARE_AND_COMMIT, m.REPLICATION_UPDATE,
    m.DELTA_CONSOLIDATION_UPDATE, m.REPLICATION_ZERO, m.TRANSFER_CONFIG_FILE,
    m.REPLICATION_CHECKSUM, m.REPLICATION_COMPLETE,
    m.DELTA_CONSOLIDATION_COMPLETE}


class FakeConn(object):

    def __init__(self):
        self.answers = []

    async def respond(self, frame, body):
        self.answers.append((frame.type, body))


class TestDispatch(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.conn = FakeConn()
        self.handler = handler_mod.PeerHandler(
            mock.Mock(name='server'), self.conn, 'terminal-site-a')

    def dispatch(self, frame, entry=None):
        return asyncio.run(self.handler._dispatch(frame, entry))

    def refused(self, frame):
        return self.assertRaises(exception.ProtocolError, self.dispatch,
                                 frame)

    def shake(self):
        self.dispatch(frames.Frame(m.HANDSHAKE, {
            'version': frames.VERSION, 'id': 'x', 'peer': 'p'}))

    def test_the_table(self):
        self.assertEqual(SERVED, set(handler_mod.PeerHandler.HANDLERS))
        for name in handler_mod.PeerHandler.HANDLERS.values():
            self.assertTrue(inspect.iscoroutinefunction(
                getattr(self.handler, name)), name)

    def test_handshake_first(self):
        e = self.refused(frames.Frame(m.INIT_SESSION))
        self.assertEqual('BAD_STATE', e.code)
        self.assertIn('INIT_SESSION before HANDSHAKE', str(e))
        e = self.refused(frames.Frame(m.HANDSHAKE, {'version': 99}))
        self.assertEqual('BAD_VERSION', e.code)
        self.shake()
        self.assertTrue(self.handler.shaken)
        self.assertEqual(frames.VERSION, self.conn.answers[0][1]['version'])

    def test_not_served(self):
        self.shake()
        for type_ in (m.HANDSHAKE, m.CTL_REPLICATION_START, m.ERROR, 0x6F):
            e = self.refused(frames.Frame(type_))
            self.assertEqual('NOT_ALLOWED', e.code)
            self.assertIn('is not served by a terminal', str(e))

    def test_responses_refused(self):
        e = self.refused(frames.Frame(m.GET_SERVER_STATE,
                                      flags=frames.FLAG_RESPONSE))
        self.assertEqual('BAD_STATE', e.code)

    def test_each_type_reaches_its_method(self):
        self.shake()
        for type_, name in handler_mod.PeerHandler.HANDLERS.items():
            method = mock.AsyncMock()
            self.handler.__dict__[name] = method
            frame = frames.Frame(type_)
            self.dispatch(frame, 'queued')
            method.assert_awaited_once_with(frame, 'queued')

    def test_a_read_must_be_open(self):
        self.shake()
        for type_ in (m.READ_CHANGES, m.READ_NEXT, m.READ_DIGEST):
            e = self.refused(frames.Frame(type_, {'offset': 0,
                                                  'algorithm': 'blake3'},
                                          session=3))
            self.assertEqual('BAD_STATE', e.code)
            self.assertIn('no read 3 open on this connection', str(e))
