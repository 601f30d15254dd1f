"""The manager's RPC clients when the message bus is down (no RabbitMQ)."""

import threading
from unittest import mock

import kombu.exceptions
from oslo_config import cfg
from oslo_config import fixture as config_fixture
import oslo_messaging as messaging
import testtools

from fedex_manager import rpc

REFUSED = kombu.exceptions.OperationalError('[Errno 111] Connection refused')


class TestBusDown(testtools.TestCase):

    def api(self, error):
        with mock.patch.object(rpc, 'transport'), \
                mock.patch.object(messaging, 'get_rpc_client') as client:
            client.return_value.call.side_effect = error
            client.return_value.cast.side_effect = error
            return rpc.TerminalAPI('fedex-terminal.t1')

    def test_a_refused_connection_is_a_messaging_failure_naming_the_bus(self):
        # What callers wait on (flows.tasks.common.run_op): a terminal that
        # does not answer, instead of a migration FAILED on "[Errno 111]".
        api = self.api(REFUSED)
        for call in (lambda: api.start('op', 'export', {}),
                     lambda: api.status('op'), lambda: api.cancel('op'),
                     api.ping):
            e = self.assertRaises(messaging.MessageDeliveryFailure, call)
            self.assertIsInstance(e, messaging.MessagingException)
            self.assertIn('the message bus (transport_url) cannot be '
                          'reached: [Errno 111] Connection refused', str(e))

    def test_other_errors_pass_through(self):
        api = self.api(ValueError('a bug'))
        self.assertRaises(ValueError, api.ping)

    def test_a_terminal_casting_to_a_bus_that_is_down_goes_on(self):
        with mock.patch.object(rpc, 'transport'), \
                mock.patch.object(messaging, 'get_rpc_client') as client:
            client.return_value.cast.side_effect = REFUSED
            manager = rpc.ManagerAPI('t1')
        manager.heartbeat({'free': 1})      # logged, never raised
        client.return_value.cast.assert_called_once()


class TestServerThreads(testtools.TestCase):
    """An RPC server of ours keeps a few threads, not oslo.messaging's 64."""

    def setUp(self):
        super().setUp()
        # The global CONF: oslo.messaging's client registers its tracing
        # options there alone.
        self.conf = self.useFixture(config_fixture.Config(cfg.CONF)).conf
        rpc.register_opts(self.conf)

    def serve(self, messages=40):
        seen, done = set(), threading.Semaphore(0)

        class Endpoint(object):
            target = messaging.Target(version=rpc.VERSION)

            def hello(self, ctxt):
                seen.add(threading.get_ident())
                done.release()

        bus = messaging.get_rpc_transport(self.conf, url='fake:/')
        self.addCleanup(bus.cleanup)
        with mock.patch.object(rpc, 'transport', return_value=bus):
            server = rpc.server([Endpoint()], 'threads', 'host', self.conf)
        server.start()
        self.addCleanup(server.wait)
        self.addCleanup(server.stop)
        client = messaging.get_rpc_client(
            bus, messaging.Target(topic='threads', version=rpc.VERSION))
        for _ in range(messages):
            client.cast({}, 'hello')
        for _ in range(messages):
            self.assertTrue(done.acquire(timeout=30))
        return seen

    def test_eight_threads_by_default(self):
        # futurist starts a thread for each message until the pool's size.
        self.assertEqual(8, self.conf.executor_thread_pool_size)
        self.assertLessEqual(len(self.serve()), rpc.EXECUTOR_THREADS)

    def test_the_operator_sets_the_size(self):
        self.conf.set_override('executor_thread_pool_size', 2)
        self.assertLessEqual(len(self.serve()), 2)
