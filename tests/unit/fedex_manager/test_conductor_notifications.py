"""Nova's notifications of deleted servers abort their migrations at once."""

import time
import uuid

import fixtures
from oslo_config import cfg
import oslo_messaging as messaging

from fedex_manager.actions import cutover as cutover_actions
from fedex_manager.conductor import notifications
from fedex_manager.db import api as db
from fedex_manager import opts
from fedex_manager import states
from tests.unit.fedex_manager import test_actions

CONF = cfg.CONF
# The shape of Nova's versioned InstanceActionPayload (trimmed).
PAYLOAD = {'nova_object.name': 'InstanceActionPayload',
           'nova_object.namespace': 'nova',
           'nova_object.version': '1.8',
           'nova_object.data': {'uuid': 'vm0', 'host': 'site-a-h1',
                                'state': 'active', 'task_state': 'deleting'}}


def payload(server_id):
    data = dict(PAYLOAD['nova_object.data'], uuid=server_id)
    return dict(PAYLOAD, **{'nova_object.data': data})


class NotificationsTestCase(test_actions.ActionsTestCase):

    def states_of(self, *ms):
        return [db.get(self.ctx, 'migration', m['id'])['state'] for m in ms]

    def in_transit(self, **kw):
        """A migration whose seed is on the road."""
        m = self.create(**kw)
        for ev in ('snapshot', 'export', 'seal', 'ship'):
            db.transition(self.ctx, 'migration', m['id'], ev)
        return db.get(self.ctx, 'migration', m['id'])


class TestEndpoint(NotificationsTestCase):

    def setUp(self):
        super().setUp()
        self.endpoint = notifications.DeletedServerEndpoint()

    def notify(self, event_type, body):
        return self.endpoint.info({}, 'nova-compute:site-a-h1', event_type,
                                  body, {'message_id': uuid.uuid4().hex})

    def test_deleted_server_aborts_its_migration_once(self):
        m = self.in_transit()
        # Another migration of vm0 (with vm1), still REQUESTED.
        other = self.create(n_servers=2, name='other')
        before = len(self.posted)
        self.assertEqual(messaging.NotificationResult.HANDLED,
                         self.notify('instance.delete.start',
                                     payload('vm0')))
        # Both migrations of vm0 are aborted, nothing else.
        self.assertEqual([states.ABORTING, states.ABORTING],
                         self.states_of(m, other))
        aborts = [p for p in self.posted[before:] if p[1] == 'abort']
        self.assertEqual(2, len(aborts))
        said = [e['message'] for e in db.events(
            self.ctx, {'migration_id': m['id']})]
        self.assertIn('abort requested: server vm0 deleted in Nova '
                      '(instance.delete.start)', said)
        # The end of the deletion (or the same notification again) finds
        # nothing left to abort: no second abort, no error.
        self.notify('instance.delete.end', payload('vm0'))
        self.assertEqual(aborts, [p for p in self.posted[before:]
                                  if p[1] == 'abort'])

    def test_other_servers_and_unabortable_states_are_left(self):
        m = self.in_transit()
        self.notify('instance.delete.end', payload('vm-unknown'))
        self.assertEqual([states.IN_TRANSIT], self.states_of(m))
        for ev in ('deliver', 'import', 'catch_up', 'converge', 'cutover'):
            db.transition(self.ctx, 'migration', m['id'], ev)
        self.notify('instance.delete.end', payload('vm0'))
        self.assertEqual([states.CUTTING_OVER], self.states_of(m))

    def cutting_over(self):
        m = self.in_transit()
        for ev in ('deliver', 'import', 'catch_up', 'converge', 'cutover'):
            db.transition(self.ctx, 'migration', m['id'], ev)
        return m

    def test_deleted_during_the_cutover_aborts_once_it_rolls_back(self):
        m = self.cutting_over()
        self.notify('instance.delete.start', payload('vm0'))
        self.assertEqual([states.CUTTING_OVER], self.states_of(m))
        cutover_actions.migration_cutover_finish(
            self.ctx, m['id'], success=False, reason='Nova: instance gone')
        self.assertEqual([states.ABORTING], self.states_of(m))
        said = [e['message'] for e in db.events(
            self.ctx, {'migration_id': m['id']})]
        self.assertTrue(any(
            t.startswith('abort requested: server deleted in Nova during '
                         'the cutover: server vm0 (instance.delete.start)')
            for t in said), said)

    def test_a_payload_without_server_is_ignored(self):
        m = self.in_transit()
        # An unversioned (legacy) payload: no nova_object.data.
        self.assertEqual(messaging.NotificationResult.HANDLED,
                         self.notify('instance.delete.end',
                                     {'instance_id': 'vm0'}))
        self.assertEqual([states.IN_TRANSIT], self.states_of(m))

    def test_only_deletions_are_listened_to(self):
        rule = notifications.DeletedServerEndpoint.filter_rule
        for event_type, wanted in (
                ('instance.delete.start', True),
                ('instance.delete.end', True),
                ('instance.soft_delete.end', False),
                ('instance.delete_metadata.end', False),
                ('instance.live_migration_post.end', False)):
            self.assertEqual(wanted, rule.match(
                {}, 'nova-compute:h', event_type, {}, {}), event_type)


class TestOverTheBus(NotificationsTestCase):
    """Nova's message as it travels: exchange nova, versioned_notifications.

    oslo.messaging's fake driver stands for RabbitMQ; Nova's side is the
    message its messagingv2 notifier sends.
    """

    def setUp(self):
        super().setUp()
        self.conf = cfg.ConfigOpts()
        opts.register_opts(self.conf)
        self.conf([], project='fedex')
        self.conf.set_override('compute_driver', 'nova', group='conductor')
        # The fake driver's exchanges live as long as the process: one of
        # this test's own.
        self.exchange = 'nova-%s' % uuid.uuid4().hex[:8]
        self.conf.set_override('nova_notifications_exchange',
                               self.exchange, group='conductor')
        self.transport = messaging.get_notification_transport(
            self.conf, url='fake:/')
        self.addCleanup(self.transport.cleanup)

    def listen(self):
        listener = notifications.listener(self.conf, self.transport)
        listener.start()
        self.addCleanup(listener.wait)
        self.addCleanup(listener.stop)
        return listener

    def nova_sends(self, event_type, server_id):
        # What nova's notifier publishes (priority INFO).
        self.transport._send_notification(
            messaging.Target(topic='versioned_notifications.info',
                             exchange=self.exchange), {}, {
                'message_id': uuid.uuid4().hex,
                'publisher_id': 'nova-api:controller',
                'event_type': event_type, 'priority': 'INFO',
                'payload': payload(server_id),
                'timestamp': '2026-12-01 10:00:00.000000'}, version=2.0)

    def wait_state(self, m, state, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.states_of(m) == [state]:
                return time.monotonic()
            time.sleep(0.05)
        self.fail('migration %s not %s within %d s: %s' % (
            m['id'], state, timeout, self.states_of(m)))

    def test_aborted_within_seconds_of_the_deletion(self):
        m = self.in_transit()
        self.listen()
        sent = time.monotonic()
        self.nova_sends('instance.delete.start', 'vm0')
        self.assertLess(self.wait_state(m, states.ABORTING, 10) - sent, 10)

    def test_one_conductor_handles_each_and_others_still_get_theirs(self):
        self.assertEqual('fedex-conductor', notifications.pool(self.conf))
        m = self.in_transit()
        handled, theirs = [], []
        real = notifications.abort_migrations_of

        def counting(ctx, server_id, why):
            handled.append(server_id)
            return real(ctx, server_id, why)
        self.useFixture(fixtures.MonkeyPatch(
            'fedex_manager.conductor.notifications.abort_migrations_of',
            counting))

        class Other(object):
            """Another consumer of Nova's notifications (no pool)."""

            def info(self, ctxt, publisher_id, event_type, payload, meta):
                theirs.append(event_type)
        other = messaging.get_notification_listener(
            self.transport, [messaging.Target(
                topic='versioned_notifications', exchange=self.exchange)],
            [Other()], executor='threading')
        other.start()
        self.addCleanup(other.wait)
        self.addCleanup(other.stop)
        self.listen()
        self.listen()       # a second conductor, in the same pool
        self.nova_sends('instance.delete.end', 'vm0')
        self.wait_state(m, states.ABORTING, 10)
        time.sleep(0.5)     # what the other conductor would have done
        self.assertEqual(['vm0'], handled)
        self.assertEqual(['instance.delete.end'], theirs)

    def test_off_without_nova_or_without_topic(self):
        self.assertTrue(notifications.enabled(self.conf))
        self.conf.set_override('nova_notifications_topic', '',
                               group='conductor')
        self.assertFalse(notifications.enabled(self.conf))
        self.conf.clear_override('nova_notifications_topic',
                                 group='conductor')
        self.conf.set_override('compute_driver', 'none', group='conductor')
        self.assertFalse(notifications.enabled(self.conf))
        listening = notifications.Listening(self.conf)
        listening.start()
        self.assertIsNone(listening.listener)
        listening.stop()

    def test_started_and_stopped_with_the_conductor(self):
        self.conf.set_override('nova_notifications_transport_url', 'fake:/',
                               group='conductor')
        listening = notifications.Listening(self.conf)
        listening.start()
        self.assertIsNotNone(listening.listener)
        listening.stop()
        self.assertIsNone(listening.listener)
        self.assertIsNone(listening.transport)
