"""A connection closed during the handshake: refused, or gone?

A TLS 1.3 server that refuses our certificate may simply close the
connection after the TLS handshake, before answering ours; so may a
terminal killed right then. The first is not tried again, the second is
(a catch-up round waits for the terminal to be back): one killed as a
round connected once failed its migration as a refusal (a clean clone's
CI run, 2026-11-29, tests.functional.manager.test_faults).
"""

import asyncio
import os

import fixtures
import testtools

from lsrp import exception
from lsrp.protocol import client as client_mod
from lsrp import tls


class TestClosedDuringHandshake(testtools.TestCase):

    def setUp(self):
        super().setUp()
        d = self.useFixture(fixtures.TempDir()).path
        tls.make_ca(d)
        ca = os.path.join(d, 'ca.pem')

        def context(make, name):
            cert = tls.make_cert(d, name)
            return make(ca, cert, os.path.join(d, name + '.key'))
        self.server_tls = context(tls.server_context, 'terminal-site-b')
        self.client_tls = context(tls.client_context, 'terminal-site-a')

    def connect(self, dies):
        async def scenario():
            server = None

            async def accept(reader, writer):
                if dies:
                    server.close()      # the listener goes with it
                writer.close()

            server = await asyncio.start_server(accept, '127.0.0.1', 0,
                                                ssl=self.server_tls)
            port = server.sockets[0].getsockname()[1]
            client = client_mod.TerminalClient('127.0.0.1', port,
                                               self.client_tls,
                                               'terminal-site-b',
                                               'terminal-site-a')
            try:
                await client.connect(timeout=1)
            finally:
                server.close()
        return asyncio.run(scenario())

    def test_a_terminal_still_listening_refused_us(self):
        e = self.assertRaises(exception.TerminalRefused, self.connect,
                              dies=False)
        self.assertIn('it closed the connection during the handshake', str(e))
        self.assertIn('it may refuse our certificate', str(e))

    def test_a_terminal_gone_with_its_port_is_unreachable(self):
        e = self.assertRaises(exception.TerminalUnreachable, self.connect,
                              dies=True)
        self.assertIn('terminal terminal-site-b at 127.0.0.1:', str(e))
        self.assertIn('no longer accepts connections', str(e))
