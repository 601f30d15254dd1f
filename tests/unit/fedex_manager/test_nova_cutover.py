"""The manager's side of a Nova cutover: refusals, read-back, bounded retries.

Nova is replaced by canned answers at the HTTP adapter (what its API
returns); the manager's database and state machine are real.
"""

from unittest import mock

import fixtures
from oslo_config import cfg
from oslo_db import exception as db_exc

from fedex_manager.actions import cutover as cutover_actions
from fedex_manager.actions import migrations as migration_actions
from fedex_manager.actions import sites
from fedex_manager.db import api as db
from fedex_manager.flows.tasks import abort as abort_tasks
from fedex_manager.flows.tasks import cutover as cutover_tasks
from fedex_manager import nova
from fedex_manager import states
from lsrp import exception
from tests.unit.fedex_manager import base


class FakeResponse(object):

    def __init__(self, status, body=None, headers=None):
        self.status_code = status
        self._body = body
        self.text = str(body)
        self.headers = headers or {}

    def json(self):
        if self._body is None:
            raise ValueError('no JSON')
        return self._body


class FakeNova(object):
    """Nova's compute API as the manager's adapter sees it."""

    def __init__(self):
        self.migrate = FakeResponse(
            202, headers={'x-openstack-request-id': 'req-1'})
        self.server = {'status': 'MIGRATING', 'OS-EXT-SRV-ATTR:host': 'a1',
                       'OS-EXT-STS:task_state': 'migrating'}
        # Nova's record of the live migration, once it took the request
        # (a 202, or no clear answer); none after a refusal.
        self.record = {'id': 7, 'status': 'running',
                       'created_at': '2999-01-01T00:00:00.000000'}
        self.migrations = []
        self.events = []
        self.posted = []

    def post(self, url, **kw):
        self.posted.append((url, kw['json']))
        taken = 'os-migrateLive' in kw['json'] and (
            isinstance(self.migrate, Exception) or
            not 400 <= self.migrate.status_code < 500)
        if taken and self.record not in self.migrations:
            self.migrations.append(self.record)
        if isinstance(self.migrate, Exception):
            raise self.migrate
        return self.migrate

    def get(self, url, **kw):
        if url.startswith('/os-migrations'):
            return FakeResponse(200, {'migrations': self.migrations})
        if url.endswith('/os-instance-actions'):
            return FakeResponse(200, {'instanceActions': [
                {'action': 'live-migration', 'request_id': 'req-1'}]})
        if '/os-instance-actions/' in url:
            return FakeResponse(200, {'instanceAction': {
                'message': 'Error', 'events': self.events}})
        if self.server is None:
            return FakeResponse(404, {'itemNotFound': {
                'message': 'Instance could not be found.'}})
        return FakeResponse(200, {'server': self.server})

    def fail(self, status, reason):
        self.server = {'status': 'ACTIVE', 'OS-EXT-SRV-ATTR:host': 'a1',
                       'OS-EXT-STS:task_state': None}
        self.migrations[0]['status'] = status
        self.events = [{'event': 'compute_check_can_live_migrate_source',
                        'result': 'Error', 'details': reason}]


class NovaCutoverTestCase(base.DBTestCase):

    def setUp(self):
        super().setUp()
        cfg.CONF.set_override('compute_driver', 'nova', group='conductor')
        self.addCleanup(cfg.CONF.clear_override, 'compute_driver',
                        group='conductor')
        sites.site_register(self.ctx, 'site-a')
        sites.site_register(self.ctx, 'site-b')
        sites.terminal_register(self.ctx, 'term-a', 'site-a')
        sites.terminal_register(self.ctx, 'term-b', 'site-b')
        self.nova = FakeNova()
        self.useFixture_adapter()

    def useFixture_adapter(self):
        patcher = mock.patch.object(nova, '_adapter',
                                    lambda conf=None: self.nova)
        patcher.start()
        self.addCleanup(patcher.stop)

    def ready_migration(self, cutover='automatic', dest_host='b1'):
        m = migration_actions.migration_create(
            self.ctx, [{'server_id': 'vm0', 'volumes': ['vms/vm0_disk']}],
            'site-a', 'site-b', dest_host=dest_host,
            options={'cutover': cutover})
        for ev in ('snapshot', 'export', 'seal', 'ship', 'deliver',
                   'import', 'catch_up', 'converge'):
            db.transition(self.ctx, 'migration', m['id'], ev)
        return db.get(self.ctx, 'migration', m['id'])

    def cutting_over(self, m):
        cutover_actions.migration_cutover_start(self.ctx, m['id'])
        m = db.get(self.ctx, 'migration', m['id'])
        cutover_tasks.start_nova_cutover(self.ctx, m)
        return db.get(self.ctx, 'migration', m['id'])

    def messages(self, m):
        return [e['message'] for e in db.events(self.ctx,
                                                {'migration_id': m['id']})]


class TestRefusal(NovaCutoverTestCase):

    def test_refusal_in_pre_checks_rolls_back_with_novas_reason(self):
        self.nova.migrate = FakeResponse(400, {'badRequest': {
            'message': 'Migration pre-check error: server x: FedEx cutover '
                       'refused: this version cannot cut over a server '
                       'with a vTPM'}})
        m = self.cutting_over(self.ready_migration())
        # ROLLED_BACK, then catch-up goes on at once.
        self.assertEqual(states.CATCHING_UP, m['state'])
        self.assertIn('vTPM', m['last_error'])
        self.assertIn('Nova refused the live migration of server vm0 to b1',
                      m['last_error'])
        self.assertIn(states.ROLLED_BACK,
                      [e['to_state'] for e in db.events(
                          self.ctx, {'migration_id': m['id']})])
        self.assertEqual([('/servers/vm0/action',
                           {'os-migrateLive': {'host': 'b1',
                                               'block_migration': False,
                                               'force': True}})],
                         self.nova.posted)

    def test_unclear_answer_is_read_back_not_rolled_back(self):
        self.nova.migrate = FakeResponse(504, 'Gateway Timeout')
        m = self.cutting_over(self.ready_migration())
        self.assertEqual(states.CUTTING_OVER, m['state'])
        self.assertTrue(any('no clear answer' in t and '504' in t
                            for t in self.messages(m)))
        # Nova did run it: still running, nothing decided.
        self.assertEqual('running',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        self.assertEqual(states.CUTTING_OVER,
                         db.get(self.ctx, 'migration', m['id'])['state'])


class TestRequestNotRecorded(NovaCutoverTestCase):
    """Nova took the request, its record in our database was lost."""

    def lost_record(self):
        # Seen in the soak: MariaDB restarted as the cutover asked Nova;
        # the request's event could not be written, the phase parked.
        m = self.ready_migration()
        cutover_actions.migration_cutover_start(self.ctx, m['id'])
        m = db.get(self.ctx, 'migration', m['id'])
        add_event = db.add_event

        def database_gone(ctx, kind, rid, ekind, message, **kw):
            if message.startswith(cutover_tasks.NOVA_REQUESTED):
                raise db_exc.DBConnectionError('Lost connection to MySQL')
            return add_event(ctx, kind, rid, ekind, message, **kw)
        with mock.patch.object(db, 'add_event', database_gone):
            self.assertRaises(db_exc.DBConnectionError,
                              cutover_tasks.start_nova_cutover, self.ctx, m)
        self.assertEqual(1, len(self.nova.posted))
        self.assertEqual([], cutover_tasks._nova_requests(self.ctx, m))
        self.nova.posted = []
        return m

    def test_nova_is_not_asked_twice(self):
        m = self.lost_record()
        # The sweeper reposts the cutover; the phase runs again.
        cutover_tasks.start_nova_cutover(self.ctx, m)
        self.assertEqual([], self.nova.posted)
        found = [t for t in self.messages(m)
                 if t.startswith(cutover_tasks.NOVA_FOUND)]
        self.assertEqual(['nova live migration found: server vm0 has '
                          "Nova's live migration 7 (running) since this "
                          'cutover began, whose request was not recorded '
                          '(the database or the conductor failed after '
                          'Nova took it): not asked for again, its '
                          'outcome read back'], found)
        # Its outcome is read back as that of a recorded request.
        self.assertEqual('running',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        self.nova.migrations[0]['status'] = 'completed'
        self.nova.server = {'status': 'ACTIVE', 'OS-EXT-SRV-ATTR:host': 'b1',
                            'OS-EXT-STS:task_state': None}
        self.assertEqual('completed',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))

    def test_a_record_from_before_the_cutover_is_not_ours(self):
        m = self.lost_record()
        self.nova.record['created_at'] = '2000-01-01T00:00:00.000000'
        cutover_tasks.start_nova_cutover(self.ctx, m)
        self.assertEqual(1, len(self.nova.posted))

    def test_nova_unreadable_asks_as_before(self):
        m = self.lost_record()
        real_get = self.nova.get
        self.nova.get = lambda url, **kw: (
            FakeResponse(503, 'down') if url.startswith('/os-migrations')
            else real_get(url, **kw))
        cutover_tasks.start_nova_cutover(self.ctx, m)
        self.assertEqual(1, len(self.nova.posted))


class TestNoHostNamed(NovaCutoverTestCase):
    """A migration created without a host (Horizon's form, the API)."""

    def test_host_of_the_sites_aggregate_chosen_and_kept(self):
        b = db.get(self.ctx, 'site', 'site-b')
        db.update(self.ctx, 'site', b['id'], {'aggregate': 'site-b'})
        chosen = []

        def choose(cloud, servers, aggregate):
            chosen.append((servers, aggregate))
            return 'b2'
        self.useFixture(fixtures.MockPatch(
            'fedex_manager.cloud_preflight.Cloud.from_conf',
            return_value=object()))
        self.useFixture(fixtures.MockPatch(
            'fedex_manager.cloud_preflight.choose_host', side_effect=choose))
        m = self.cutting_over(self.ready_migration(dest_host=None))
        self.assertEqual(states.CUTTING_OVER, m['state'])
        self.assertEqual([(['vm0'], 'site-b')], chosen)
        self.assertEqual('b2', m['dest_host'])
        # Forced to that host (Nova's scheduler would keep site A's zone).
        self.assertEqual([('/servers/vm0/action',
                           {'os-migrateLive': {'host': 'b2',
                                               'block_migration': False,
                                               'force': True}})],
                         self.nova.posted)
        self.assertTrue(any('destination host b2 chosen in aggregate '
                            'site-b' in t for t in self.messages(m)))

    def test_site_without_aggregate_rolls_back_saying_what_to_do(self):
        m = self.cutting_over(self.ready_migration(dest_host=None))
        self.assertEqual(states.CATCHING_UP, m['state'])
        self.assertIn('site site-b names no aggregate', m['last_error'])
        self.assertIn('--host HOST', m['last_error'])
        self.assertEqual([], self.nova.posted)


class TestReadBack(NovaCutoverTestCase):

    def test_failed_in_nova_rolls_back_naming_the_reason(self):
        m = self.cutting_over(self.ready_migration())
        self.assertEqual(states.CUTTING_OVER, m['state'])
        self.nova.fail('error', 'Migration pre-check error: the destination '
                                'does not say which site it belongs to')
        self.assertEqual('rolled_back',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        m = db.get(self.ctx, 'migration', m['id'])
        self.assertEqual(states.CATCHING_UP, m['state'])
        self.assertIn('Nova failed the live migration of server vm0 '
                      '(status error, server ACTIVE on a1)', m['last_error'])
        self.assertIn('does not say which site', m['last_error'])

    def test_a_server_nova_left_in_error_is_active_again(self):
        m = self.cutting_over(self.ready_migration())
        self.nova.fail('error', 'ConsumerAllocationRetrievalFailed')
        self.nova.server.update({'status': 'ERROR',
                                 'OS-EXT-STS:power_state': 1})
        self.nova.posted = []
        self.assertEqual('rolled_back',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        self.assertEqual([('/servers/vm0/action',
                           {'os-resetState': {'state': 'active'}})],
                         self.nova.posted)
        self.assertIn('server vm0 reset to ACTIVE: Nova set it to ERROR for '
                      'the failed live migration, its guest running on a1',
                      self.messages(m))

    def test_an_error_without_a_running_guest_is_left_alone(self):
        m = self.cutting_over(self.ready_migration())
        self.nova.fail('error', 'the guest crashed')
        self.nova.server.update({'status': 'ERROR',
                                 'OS-EXT-STS:power_state': 4})
        self.nova.posted = []
        self.assertEqual('rolled_back',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        self.assertEqual([], self.nova.posted)

    def test_a_refused_reset_is_said(self):
        m = self.cutting_over(self.ready_migration())
        self.nova.fail('error', 'ConsumerAllocationRetrievalFailed')
        self.nova.server.update({'status': 'ERROR',
                                 'OS-EXT-STS:power_state': 1})
        self.nova.migrate = FakeResponse(403, {'forbidden': {
            'message': 'Policy does not allow os-resetState'}})
        self.assertEqual('rolled_back',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        self.assertTrue(any('not reset to ACTIVE' in t and 'Policy' in t
                            for t in self.messages(m)), self.messages(m))

    def test_completed_in_nova_completes(self):
        m = self.cutting_over(self.ready_migration())
        self.nova.server = {'status': 'ACTIVE', 'OS-EXT-SRV-ATTR:host': 'b1',
                            'OS-EXT-STS:task_state': None}
        self.nova.migrations[0]['status'] = 'completed'
        self.assertEqual('completed',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        m = db.get(self.ctx, 'migration', m['id'])
        self.assertEqual(states.COMPLETED, m['state'])
        self.assertTrue(any('no report from nova_fedex' in t
                            for t in self.messages(m)))

    def test_stranded_guest_is_left_to_the_operator(self):
        m = self.cutting_over(self.ready_migration())
        db.add_event(self.ctx, 'migration', m['id'], 'cutover',
                     'nova: stranded on a1: final delta failed',
                     migration_id=m['id'])
        self.nova.fail('error', 'boom')
        self.assertEqual('stranded',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        self.assertEqual(states.CUTTING_OVER,
                         db.get(self.ctx, 'migration', m['id'])['state'])

    def stall(self):
        # Nova's compute failed under its monitor (MariaDB restarting) and
        # never rolled back: record "running", saved long ago, the server
        # in task "migrating" at the source (seen in the soak).
        self.nova.migrations[0]['updated_at'] = '2000-01-01T00:00:00.000000'

    def test_a_migration_nova_lost_is_said_once_with_what_to_reset(self):
        m = self.cutting_over(self.ready_migration())
        self.stall()
        for _ in range(2):
            self.assertEqual('stalled',
                             cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        said = [t for t in self.messages(m)
                if t.startswith(cutover_tasks.STALLED)]
        self.assertEqual(1, len(said), said)
        self.assertIn('7 of server vm0: its record says running, not '
                      'updated since 2000-01-01T00:00:00.000000', said[0])
        self.assertIn('in task migrating on a1', said[0])
        self.assertIn('openstack server set --state active vm0', said[0])
        self.assertEqual(states.CUTTING_OVER,
                         db.get(self.ctx, 'migration', m['id'])['state'])

    def test_once_the_operator_reset_the_server_it_rolls_back(self):
        m = self.cutting_over(self.ready_migration())
        self.stall()
        self.nova.server = {'status': 'ACTIVE', 'OS-EXT-SRV-ATTR:host': 'a1',
                            'OS-EXT-STS:task_state': None}
        self.assertEqual('rolled_back',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        m = db.get(self.ctx, 'migration', m['id'])
        self.assertEqual(states.CATCHING_UP, m['state'])
        self.assertIn("Nova's record 7 stalled at running, the server reset",
                      m['last_error'])

    def test_a_record_saved_lately_is_running(self):
        m = self.cutting_over(self.ready_migration())
        self.nova.migrations[0]['updated_at'] = '2999-01-01T00:00:00.000000'
        self.assertEqual('running',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))

    def test_rollback_in_progress_waits(self):
        m = self.cutting_over(self.ready_migration())
        self.nova.fail('error', 'boom')
        self.nova.server['OS-EXT-STS:task_state'] = 'migrating'
        self.assertEqual('running',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))


class TestMovedThenFailed(NovaCutoverTestCase):
    """Nova fails its post-migration after the destination took the server.

    Seen in the soak: RabbitMQ restarted under the source's call to the
    destination's post_live_migration_at_destination. Nova marks its
    record and the server ERROR, the server's host being the destination
    already. Taken for a rollback, catch-up went on from A's stale images
    and the operator's abort then removed B's disks under the guest.
    """

    def moved_then_failed(self, m):
        self.nova.migrations[0]['status'] = 'error'
        self.nova.events = [{'event': 'compute_live_migration',
                             'result': 'Error',
                             'details': 'MessagingTimeout'}]
        self.nova.server = {'status': 'ERROR', 'OS-EXT-SRV-ATTR:host': 'b1',
                            'OS-EXT-STS:task_state': None,
                            'OS-EXT-STS:power_state': 1}
        self.nova.posted = []

    def delta_applied(self, m, **details):
        # What fedex-api records of nova_fedex's report.
        db.add_event(self.ctx, 'migration', m['id'], 'cutover',
                     'nova: delta_applied (reported by a1)',
                     migration_id=m['id'],
                     details=dict(details, event='delta_applied'))

    def test_with_the_final_delta_applied_it_completed(self):
        m = self.cutting_over(self.ready_migration())
        self.delta_applied(m, server_id='vm0')
        self.moved_then_failed(m)
        self.assertEqual('completed',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        m = db.get(self.ctx, 'migration', m['id'])
        self.assertEqual(states.COMPLETED, m['state'])
        self.assertTrue(any('run at b1 on their final state' in t and
                            'MessagingTimeout' in t
                            for t in self.messages(m)), self.messages(m))
        # Running at B: Nova's ERROR is reset, as the operator would.
        self.assertEqual([('/servers/vm0/action',
                           {'os-resetState': {'state': 'active'}})],
                         self.nova.posted)

    def test_a_report_naming_no_server_counts_for_the_only_one(self):
        m = self.cutting_over(self.ready_migration())
        self.delta_applied(m)
        self.moved_then_failed(m)
        self.assertEqual('completed',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))

    def test_without_that_report_the_host_says_it(self):
        # The report lost (another server's does not count): Nova made the
        # destination its host, which nova_fedex lets it do only once the
        # final delta is applied.
        m = self.cutting_over(self.ready_migration())
        self.delta_applied(m, server_id='another-server')
        self.moved_then_failed(m)
        self.assertEqual('completed',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        m = db.get(self.ctx, 'migration', m['id'])
        self.assertEqual(states.COMPLETED, m['state'])
        said = [t for t in self.messages(m) if 'final state' in t]
        self.assertEqual(1, len(said), self.messages(m))
        self.assertIn('the final delta of vm0 was lost, but Nova made b1 '
                      'their host', said[0])
        self.assertFalse(any('waits for the operator' in t
                             for t in self.messages(m)), self.messages(m))
        self.assertEqual([('/servers/vm0/action',
                           {'os-resetState': {'state': 'active'}})],
                         self.nova.posted)

    def test_it_waits_for_the_error_nova_sets_after_its_record(self):
        # Nova saves its record "error", then the server ERROR: completed
        # between the two, the server stayed in ERROR at B (CI's soak).
        m = self.cutting_over(self.ready_migration())
        self.delta_applied(m, server_id='vm0')
        self.moved_then_failed(m)
        self.nova.migrations[0]['updated_at'] = db.now().isoformat()
        self.nova.server['status'] = 'ACTIVE'
        self.assertEqual('running',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        self.assertEqual(states.CUTTING_OVER,
                         db.get(self.ctx, 'migration', m['id'])['state'])
        self.nova.server['status'] = 'ERROR'
        self.assertEqual('completed',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        self.assertEqual([('/servers/vm0/action',
                           {'os-resetState': {'state': 'active'}})],
                         self.nova.posted)

    def test_an_error_nova_never_sets_is_waited_for_a_while(self):
        # The compute died between the two saves: completed after the
        # grace, the server ACTIVE as it is.
        m = self.cutting_over(self.ready_migration())
        self.delta_applied(m, server_id='vm0')
        self.moved_then_failed(m)
        self.nova.migrations[0]['updated_at'] = '2000-01-01T00:00:00.000000'
        self.nova.server['status'] = 'ACTIVE'
        self.assertEqual('completed',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        self.assertEqual([], self.nova.posted)

    def test_a_record_stalled_after_the_destination_took_it(self):
        # The source's compute died after the destination's part of the
        # post-migration: the record says "running" for ever.
        m = self.cutting_over(self.ready_migration())
        self.delta_applied(m, server_id='vm0')
        self.nova.migrations[0]['updated_at'] = '2000-01-01T00:00:00.000000'
        self.nova.server = {'status': 'ACTIVE', 'OS-EXT-SRV-ATTR:host': 'b1',
                            'OS-EXT-STS:task_state': None,
                            'OS-EXT-STS:power_state': 1}
        self.nova.posted = []
        self.assertEqual('completed',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        self.assertIn('stalled at running after b1 took the server',
                      ' '.join(self.messages(m)))
        self.assertEqual([], self.nova.posted)      # ACTIVE: no reset


class TestAbortAfterCutover(NovaCutoverTestCase):
    """An abort never removes the disks of a guest its cutover moved."""

    def rolled_back_then_aborting(self):
        m = self.cutting_over(self.ready_migration())
        self.nova.fail('error', 'boom')
        cutover_tasks.reconcile_nova_cutover(self.ctx, m)
        m = db.transition(self.ctx, 'migration', m['id'], 'abort')
        self.assertEqual(states.ABORTING, m['state'])
        return m

    def check(self, m):
        abort_tasks.refuse_if_moved(abort_tasks.CleanUpAbort(), self.ctx, m,
                                    0)

    def test_a_server_nova_has_at_the_destination_stops_it(self):
        m = self.rolled_back_then_aborting()
        self.nova.server['OS-EXT-SRV-ATTR:host'] = 'b1'
        e = self.assertRaises(exception.Conflict, self.check, m)
        self.assertIn('Nova has server vm0 on the destination host b1, where '
                      'the abort would remove the disks it runs on', str(e))

    def test_at_the_source_or_deleted_it_goes_on(self):
        m = self.rolled_back_then_aborting()
        self.check(m)
        self.nova.server = None
        self.check(m)

    def test_nova_not_answering_stops_it_saying_so(self):
        m = self.rolled_back_then_aborting()
        self.useFixture(fixtures.MockPatchObject(abort_tasks,
                                                 'NOVA_PATIENCE', -1))
        self.nova.get = lambda url, **kw: FakeResponse(503, 'down')
        e = self.assertRaises(exception.Conflict, self.check, m)
        self.assertIn('cannot ask Nova where server vm0 runs', str(e))

    def test_before_any_cutover_nova_is_not_asked(self):
        m = self.ready_migration()
        m = db.transition(self.ctx, 'migration', m['id'], 'abort')
        self.nova.get = None        # would fail if called
        self.check(m)


class TestErrorAfterTheRollback(NovaCutoverTestCase):
    """Nova set the server ERROR after the cutover was rolled back."""

    def rolled_back_then_error(self):
        m = self.cutting_over(self.ready_migration())
        self.nova.fail('error', 'MessagingTimeout')
        self.assertEqual('rolled_back',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        # The record is this first cutover's; Nova's compute sets the
        # server ERROR only now, the rollback done.
        self.nova.record['created_at'] = cutover_tasks.cutover_began(
            self.ctx, m)
        self.nova.server.update({'status': 'ERROR',
                                 'OS-EXT-STS:power_state': 1})
        self.nova.posted = []
        return db.get(self.ctx, 'migration', m['id'])

    def test_the_next_cutover_makes_it_active_before_asking_nova(self):
        m = self.rolled_back_then_error()
        db.transition(self.ctx, 'migration', m['id'], 'converge')
        m = self.cutting_over(db.get(self.ctx, 'migration', m['id']))
        self.assertEqual(
            ['os-resetState', 'os-migrateLive'],
            [list(body)[0] for url, body in self.nova.posted])
        self.assertIn('server vm0 reset to ACTIVE: Nova set it to ERROR for '
                      'the failed live migration, its guest running on a1',
                      self.messages(m))

    def test_an_abort_leaves_it_active(self):
        m = self.rolled_back_then_error()
        m = db.transition(self.ctx, 'migration', m['id'], 'abort')
        for name in ('_erase_shipments', '_remove_snapshots'):
            self.useFixture(fixtures.MockPatchObject(
                abort_tasks.erase, name))
        abort_tasks.CleanUpAbort().run(self.ctx, m, m['generation'])
        self.assertEqual([('/servers/vm0/action',
                           {'os-resetState': {'state': 'active'}})],
                         self.nova.posted)
        self.assertEqual(states.ABORTED,
                         db.get(self.ctx, 'migration', m['id'])['state'])

    def test_a_guest_not_running_stays_in_error(self):
        m = self.rolled_back_then_error()
        self.nova.server['OS-EXT-STS:power_state'] = 4
        cutover_tasks.restore_errored_servers(self.ctx, m)
        self.assertEqual([], self.nova.posted)

    def test_nova_not_answering_leaves_it(self):
        m = self.rolled_back_then_error()
        self.nova.get = lambda url, **kw: FakeResponse(503, 'down')
        cutover_tasks.restore_errored_servers(self.ctx, m)
        self.assertEqual([], self.nova.posted)


class TestBoundedRetries(NovaCutoverTestCase):

    def roll_back(self, m):
        cutover_actions.migration_cutover_start(self.ctx, m['id'])
        cutover_actions.migration_cutover_finish(self.ctx, m['id'], False,
                                                 'final delta failed')
        db.transition(self.ctx, 'migration', m['id'], 'converge')
        return db.get(self.ctx, 'migration', m['id'])

    def test_automatic_cutover_stops_after_max_attempts(self):
        cfg.CONF.set_override('cutover_max_attempts', 2, group='conductor')
        self.addCleanup(cfg.CONF.clear_override, 'cutover_max_attempts',
                        group='conductor')
        m = self.ready_migration()
        m = self.roll_back(m)
        self.assertTrue(cutover_actions.cutover_ready(self.ctx, m['id'])['ready'])
        m = self.roll_back(m)
        ready = cutover_actions.cutover_ready(self.ctx, m['id'])
        self.assertFalse(ready['ready'])
        self.assertIn('rolled back 2 times since it was last approved',
                      ready['reasons'][0])
        self.assertTrue(any(t.startswith('no more automatic cutovers: 2 '
                                         'rollbacks')
                            for t in self.messages(m)))
        self.assertRaises(exception.InvalidTransition,
                          cutover_actions.migration_cutover_start, self.ctx, m['id'])
        # The operator's approval allows it again.
        cutover_actions.migration_approve_cutover(self.ctx, m['id'])
        self.assertTrue(cutover_actions.cutover_ready(self.ctx, m['id'])['ready'])
        self.assertEqual(states.CUTTING_OVER, cutover_actions.migration_cutover_start(
            self.ctx, m['id'])['state'])

    def test_default_is_three(self):
        m = self.ready_migration()
        for _ in range(3):
            self.assertTrue(cutover_actions.cutover_ready(self.ctx, m['id'])['ready'])
            m = self.roll_back(m)
        self.assertFalse(cutover_actions.cutover_ready(self.ctx, m['id'])['ready'])


class TestOutcome(NovaCutoverTestCase):

    def test_older_records_are_ignored(self):
        self.nova.server = {'status': 'ACTIVE', 'OS-EXT-SRV-ATTR:host': 'a1',
                            'OS-EXT-STS:task_state': None}
        self.nova.migrations = [{'id': 1, 'status': 'completed',
                                 'created_at': '2020-01-01T00:00:00Z'}]
        out = nova.live_migration_outcome('vm0', 'req-1',
                                          since='2026-01-01T00:00:00Z')
        # No record since the request and nothing in progress: not started.
        self.assertIsNone(out['status'])
        self.assertEqual('failed', out['ended'])


class TestLateRequest(NovaCutoverTestCase):

    def test_no_record_yet_is_not_a_failure_within_the_grace(self):
        self.nova.migrate = FakeResponse(503, 'Service Unavailable')
        m = self.cutting_over(self.ready_migration())
        # Nova has no record and no task yet: the request may still start.
        self.nova.migrations = []
        self.nova.server = {'status': 'ACTIVE', 'OS-EXT-SRV-ATTR:host': 'a1',
                            'OS-EXT-STS:task_state': None}
        self.assertEqual('running',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        # Past the grace: it never started; rolled back, saying so.
        self.useFixture(fixtures.MockPatch(
            'fedex_manager.flows.tasks.cutover.NOVA_START_GRACE', -1))
        self.assertEqual('rolled_back',
                         cutover_tasks.reconcile_nova_cutover(self.ctx, m))
        m = db.get(self.ctx, 'migration', m['id'])
        self.assertIn('Nova did not start the live migration of server vm0',
                      m['last_error'])
