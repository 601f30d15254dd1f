"""Versioned notifications of a migration's state changes."""

import json
import os
from unittest import mock

import fixtures
from oslo_config import cfg
from oslo_messaging.notify import _impl_test
from oslo_versionedobjects import fixture as ovo_fixture
import testtools

from fedex_manager.actions import lifecycle
from fedex_manager.db import api as db
from fedex_manager.db import engine
from fedex_manager.notifications import base as notification_base
from fedex_manager.notifications import migration as payloads
from fedex_manager.notifications import notifier
from fedex_manager.notifications import samples
from fedex_manager import states
from tests.unit.fedex_manager import test_actions

SAMPLES = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'doc',
                       'source', 'notification_samples')

# Any change of a class's fields changes its hash: bump its VERSION (and
# say why in its version history), then update the hash here.
OBJECT_HASHES = {
    'EventType': '1.0-0764b29fbbacc43eceb487628d4a1cef',
    'MigrationServerPayload': '1.0-3226a65eb736a19f6f717fd27954107b',
    'MigrationStateNotification': '1.0-4599a105ce4e246bc535b7447556a455',
    'MigrationStatePayload': '1.0-da5b86aa0fcc18a251134686c972e006',
    'NotificationPublisher': '1.0-578ee5fea2922ff32e8917621f140857',
    'SitePayload': '1.0-c63cc75966e146663a940ce8d3d9b0ff',
}


class TestObjectVersions(testtools.TestCase):

    def test_hashes_pinned(self):
        checker = ovo_fixture.ObjectVersionChecker(notification_base.CLASSES)
        expected, actual = checker.test_hashes(OBJECT_HASHES)
        self.assertEqual(expected, actual,
                         'A notification class changed: bump its version, '
                         'then update its hash here.')

    def test_a_new_state_changes_the_payload_hash(self):
        checker = ovo_fixture.ObjectVersionChecker(notification_base.CLASSES)
        before = checker.get_hashes()['MigrationStatePayload']
        self.useFixture(fixtures.MonkeyPatch(
            'fedex_manager.notifications.migration.MigrationStatePayload.'
            'fields', dict(payloads.MigrationStatePayload.fields, state=(
                payloads.fields.EnumField(
                    valid_values=payloads.MIGRATION_STATES + ('NEW',))))))
        self.assertNotEqual(before,
                            checker.get_hashes()['MigrationStatePayload'])

    def test_every_migration_state_is_valid(self):
        for s in (states.REQUESTED, states.READY_FOR_CUTOVER,
                  states.CLEANED, states.ROLLED_BACK, states.ABORTED):
            self.assertIn(s, payloads.MIGRATION_STATES)

    def test_documented_samples_are_what_the_code_sends(self):
        for event_type, make in samples.SAMPLES.items():
            with open(samples.path(SAMPLES, event_type)) as f:
                self.assertEqual(
                    make(), json.load(f),
                    'doc/source/notification_samples is stale: python -m '
                    'fedex_manager.notifications.samples '
                    'doc/source/notification_samples')


class NotificationsTestCase(test_actions.ActionsTestCase):

    def setUp(self):
        super().setUp()
        notifier.register_opts(cfg.CONF)
        cfg.CONF.set_override('driver', ['test'],
                              group='oslo_messaging_notifications')
        cfg.CONF.set_override('transport_url', 'fake:/',
                              group='oslo_messaging_notifications')
        self.addCleanup(cfg.CONF.clear_override, 'driver',
                        group='oslo_messaging_notifications')
        self.addCleanup(cfg.CONF.clear_override, 'transport_url',
                        group='oslo_messaging_notifications')
        _impl_test.reset()
        self.addCleanup(_impl_test.reset)

    def sent(self):
        return [m for _ctx, m, _prio, _retry in _impl_test.NOTIFICATIONS]

    def payload(self, message):
        return message['payload']['fedex_object.data']


class TestMigrationStateChange(NotificationsTestCase):

    def test_create_then_transition_each_sent_once(self):
        m = self.create(n_servers=2, name='two')
        created = self.sent()
        self.assertEqual(1, len(created))
        self.assertEqual('fedex.migration.state_change',
                         created[0]['event_type'])
        p = self.payload(created[0])
        self.assertIsNone(p['previous_state'])
        self.assertEqual(('create', 'REQUESTED'), (p['event'], p['state']))

        _impl_test.reset()
        db.transition(self.ctx, 'migration', m['id'], 'snapshot')
        sent = self.sent()
        self.assertEqual(1, len(sent))
        message = sent[0]
        self.assertEqual('INFO', message['priority'])
        self.assertEqual('fedex.migration.state_change',
                         message['event_type'])
        self.assertTrue(message['publisher_id'].endswith(
            ':' + notifier.socket.gethostname()))
        self.assertEqual('MigrationStatePayload',
                         message['payload']['fedex_object.name'])
        self.assertEqual('1.0', message['payload']['fedex_object.version'])
        p = self.payload(message)
        self.assertEqual(m['id'], p['id'])
        self.assertEqual('two', p['name'])
        self.assertEqual('p1', p['project_id'])
        self.assertEqual('alice', p['user_id'])
        self.assertEqual(('REQUESTED', 'SNAPSHOTTING', 'snapshot'),
                         (p['previous_state'], p['state'], p['event']))
        self.assertEqual(
            [('vm0', 'vm0'), ('vm1', 'vm1')],
            [(s['fedex_object.data']['server_id'],
              s['fedex_object.data']['name']) for s in p['servers']])
        self.assertEqual(
            ('site-a', 'site-b'),
            (p['source_site']['fedex_object.data']['name'],
             p['destination_site']['fedex_object.data']['name']))
        self.assertEqual(m['source_site_id'],
                         p['source_site']['fedex_object.data']['id'])
        # Times to the second (oslo.versionedobjects' DateTimeField).
        row = db.get(self.ctx, 'migration', m['id'])
        self.assertEqual(row['updated_at'][:19] + 'Z', p['updated_at'])
        self.assertEqual(row['created_at'][:19] + 'Z', p['created_at'])
        self.assertIsNone(p['finished_at'])

    def test_reason_of_an_abort(self):
        m = self.create()
        _impl_test.reset()
        lifecycle.migration_abort(self.ctx, m['id'], reason='wrong site')
        p = self.payload(self.sent()[0])
        self.assertEqual(('ABORTING', 'abort'), (p['state'], p['event']))
        self.assertEqual('abort requested: wrong site', p['reason'])

    def test_failure_is_an_error(self):
        m = self.create()
        db.transition(self.ctx, 'migration', m['id'], 'snapshot')
        _impl_test.reset()
        db.transition(self.ctx, 'migration', m['id'], 'fail',
                      values={'last_error': 'rbd: no space'},
                      message='snapshot failed: rbd: no space')
        message = self.sent()[0]
        self.assertEqual('ERROR', message['priority'])
        self.assertEqual('snapshot failed: rbd: no space',
                         self.payload(message)['reason'])

    def test_sent_after_commit_never_for_a_rollback(self):
        m = self.create()
        _impl_test.reset()
        with engine.writer(self.ctx):
            db.transition(self.ctx, 'migration', m['id'], 'snapshot')
            # Inside the caller's transaction: not committed, not sent.
            self.assertEqual([], self.sent())
        self.assertEqual(['SNAPSHOTTING'],
                         [self.payload(x)['state'] for x in self.sent()])

        _impl_test.reset()

        class Boom(Exception):
            pass

        def rolled_back():
            with engine.writer(self.ctx):
                db.transition(self.ctx, 'migration', m['id'], 'export')
                raise Boom()
        self.assertRaises(Boom, rolled_back)
        self.assertEqual('SNAPSHOTTING',
                         db.get(self.ctx, 'migration', m['id'])['state'])
        self.assertEqual([], self.sent())

    def test_other_kinds_send_nothing(self):
        self.create()
        _impl_test.reset()
        d = db.create(self.ctx, 'device', {
            'serial': 'SN1', 'state': states.D_BLANK,
            'terminal_id': db.get(self.ctx, 'terminal', 'term-a')['id']})
        db.transition(self.ctx, 'device', d['id'], target=states.D_ASSIGNED)
        self.assertEqual([], self.sent())

    def test_no_driver_sends_nothing(self):
        cfg.CONF.clear_override('driver', group='oslo_messaging_notifications')
        m = self.create()
        db.transition(self.ctx, 'migration', m['id'], 'snapshot')
        self.assertEqual([], self.sent())

    def test_broken_bus_never_fails_the_transition(self):
        m = self.create()
        log = self.useFixture(fixtures.FakeLogger(
            name='fedex_manager.notifications.notifier'))
        broken = mock.Mock()
        broken.prepare.return_value.info.side_effect = RuntimeError(
            'bus down')
        with mock.patch.object(notifier, 'get_notifier',
                               return_value=broken):
            out = db.transition(self.ctx, 'migration', m['id'], 'snapshot')
        self.assertEqual('SNAPSHOTTING', out['state'])
        self.assertEqual('SNAPSHOTTING',
                         db.get(self.ctx, 'migration', m['id'])['state'])
        self.assertIn('notification of REQUESTED -> SNAPSHOTTING lost',
                      log.output)
        self.assertIn('bus down', log.output)

    def test_unbuildable_payload_never_fails_the_transition(self):
        m = self.create()
        _impl_test.reset()
        log = self.useFixture(fixtures.FakeLogger(
            name='fedex_manager.notifications.notifier'))
        with mock.patch.object(payloads.MigrationStatePayload,
                               'from_migration',
                               side_effect=ValueError('odd row')):
            out = db.transition(self.ctx, 'migration', m['id'], 'snapshot')
        self.assertEqual('SNAPSHOTTING', out['state'])
        self.assertIn('no notification of REQUESTED -> SNAPSHOTTING',
                      log.output)
        self.assertEqual([], self.sent())
