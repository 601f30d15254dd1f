"""A cutover's end, seen twice (nova_fedex's report, Nova's records), is
recorded once and truly.

nova_fedex sends its reports after Nova's post-migration, which marks
Nova's record completed first: the conductor's read-back of Nova's
records must not end the cutover in that gap ("no report from
nova_fedex" right after its reports), and an ownership move of the
Cinder volumes tried twice must not say it failed (the second found the
volumes unmarked: HTTP 409 "not in a FedEx migration").
"""

from unittest import mock

import fixtures

from fedex_manager.actions import cutover as cutover_actions
from fedex_manager.actions import migrations as migration_actions
from fedex_manager import cinder
from fedex_manager.db import api as db
from fedex_manager.flows.tasks import cutover as cutover_tasks
from fedex_manager import states
from tests.unit.fedex_manager import test_nova_cutover as base

STEPS = ('migrating', 'paused_at_destination', 'delta_applied', 'resumed')


class FakeCinder(object):
    """cinder_fedex's actions: a volume unmarked after its move is 409."""

    def __init__(self):
        self.host = 'cinder@site-a#ceph'
        self.marked = True
        self.posted = []

    def post(self, url, json=None, **kw):
        action = next(iter(json))
        self.posted.append(action)
        if action == 'os-fedex-cutover':
            if not self.marked:
                return base.FakeResponse(409, {'conflictingRequest': {
                    'message': 'Invalid volume: volume v1: not in a FedEx '
                               'migration (os-fedex-mark)'}})
            self.host = 'cinder@site-b#ceph'
        elif action == 'os-fedex-unmark':
            self.marked = False
        return base.FakeResponse(202)

    def get(self, url, **kw):
        if url.startswith('/scheduler-stats'):
            return base.FakeResponse(200, {'pools': [
                {'name': 'cinder@site-%s#ceph' % s,
                 'capabilities': {'fedex_site': 'site-%s' % s}}
                for s in 'ab']})
        return base.FakeResponse(200, {'volume': {
            'id': 'v1', 'os-vol-host-attr:host': self.host}})


class TestEndOnce(base.NovaCutoverTestCase):

    def setUp(self):
        super().setUp()
        self.cinder = FakeCinder()
        self.useFixture(fixtures.MockPatchObject(
            cinder, '_adapter', mock.Mock(return_value=self.cinder)))

    def report(self, m, event):
        """What fedex-api records of a nova_fedex report."""
        db.add_event(self.ctx, 'migration', m['id'], 'cutover',
                     'nova: %s (reported by a1)' % event,
                     migration_id=m['id'], details={'event': event})

    def nova_completed(self):
        self.nova.server = {'status': 'ACTIVE', 'OS-EXT-SRV-ATTR:host': 'b1',
                            'OS-EXT-STS:task_state': None}
        self.nova.migrations[0]['status'] = 'completed'

    def test_nova_record_before_nova_fedex_report_waits_for_it(self):
        m = self.cutting_over(self.ready_migration())
        self.nova_completed()
        for step in STEPS:
            self.report(m, step)
        # Nova's record says completed; nova_fedex has not said so yet.
        self.assertEqual('running',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        self.assertEqual(states.CUTTING_OVER,
                         db.get(self.ctx, 'migration', m['id'])['state'])
        # Its report comes; fedex-api ends the cutover while the
        # conductor looks again.
        self.report(m, 'completed')
        self.assertEqual('ended',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        cutover_actions.migration_cutover_finish(self.ctx, m['id'])
        self.assertEqual('ended',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        said = ' | '.join(self.messages(m))
        self.assertNotIn('read back', said)
        self.assertNotIn('no report from nova_fedex', said)

    def test_report_that_never_comes_is_read_back_saying_so(self):
        m = self.cutting_over(self.ready_migration())
        self.nova_completed()
        for step in STEPS:
            self.report(m, step)
        self.useFixture(fixtures.MockPatch(
            'fedex_manager.flows.tasks.cutover.NOVA_REPORT_GRACE', -1))
        self.assertEqual('completed',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        done = [e for e in db.events(self.ctx, {'migration_id': m['id']})
                if e['to_state'] == states.COMPLETED]
        self.assertEqual(1, len(done))
        self.assertIn('read back from Nova\'s records; nova_fedex reported '
                      'delta_applied, migrating, paused_at_destination, '
                      'resumed, not the end', done[0]['message'])

    def test_volumes_moved_twice_are_moved_once_without_error(self):
        m = migration_actions.migration_create(
            self.ctx, None, 'site-a', 'site-b',
            volumes=[{'volume_id': 'v1'}])
        cutover_actions.volumes_to_destination(self.ctx, m['id'])
        # The second caller (the other end of the race) finds it done.
        cutover_actions.volumes_to_destination(self.ctx, m['id'])
        self.assertEqual(['os-fedex-cutover', 'os-fedex-unmark',
                          'os-fedex-cutover'], self.cinder.posted)
        said = self.messages(m)
        self.assertEqual(['Cinder volumes v1 belong to site site-b'],
                         [t for t in said if 'Cinder' in t])

    def test_volume_refused_elsewhere_is_still_an_error(self):
        m = migration_actions.migration_create(
            self.ctx, None, 'site-a', 'site-b',
            volumes=[{'volume_id': 'v1'}])
        self.cinder.marked = False      # never marked: still at site-a
        cutover_actions.volumes_to_destination(self.ctx, m['id'])
        failed = [t for t in self.messages(m) if 'move failed' in t]
        self.assertEqual(1, len(failed))
        self.assertIn('HTTP 409', failed[0])
