"""The manager's RPC clients when the message bus is down (no RabbitMQ)."""

from unittest import mock

import kombu.exceptions
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
