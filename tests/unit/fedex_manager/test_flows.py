"""The phases run in-process, terminals faked at the RPC client.

SQLite, taskflow's in-memory persistence; the fake terminals answer as
the agent does. The real thing runs in tests/functional/manager.
"""

from unittest import mock

import fixtures
from oslo_config import cfg
from oslo_db import exception as db_exception
import pymysql
from sqlalchemy import exc as sa_exc
from taskflow import engines

from fedex_manager.actions import devices as device_actions
from fedex_manager.actions import events as event_actions
from fedex_manager.actions import lifecycle
from fedex_manager.actions import migrations
from fedex_manager.actions import shipping
from fedex_manager.actions import sites
from fedex_manager.conductor import endpoint
from fedex_manager.db import api as db
from fedex_manager.flows import phases
from fedex_manager.flows import tasks
from fedex_manager.flows.tasks import cutover as cutover_tasks
from fedex_manager.flows.tasks import prepare as prepare_tasks
from fedex_manager.flows.tasks import seal as seal_tasks
from fedex_manager import states
from lsrp import exception
from tests.unit.fedex_manager import base

CONF = cfg.CONF


class FakeTerminals(object):
    """Stands in for rpc.TerminalAPI: runs operations at once.

    It reports them the way the agent's casts do (ManagerEndpoint).
    """

    def __init__(self):
        self.calls = []
        self.fail = {}
        self.fail_times = {}    # kind -> how many starts fail (default all)
        self.endpoint = endpoint.ManagerEndpoint()

    def api(self, topic):
        outer = self

        class API(object):
            def start(self, op_id, kind, params):
                outer.calls.append((topic, kind, op_id))
                if kind in outer.fail and outer.fail_times.get(kind, 1) > 0:
                    if kind in outer.fail_times:
                        outer.fail_times[kind] -= 1
                    outer.endpoint.finished({}, topic, op_id, 'ERROR',
                                            error=outer.fail[kind])
                    return {'state': 'ERROR', 'error': outer.fail[kind]}
                result = outer.result(kind, params)
                outer.endpoint.progress({}, topic, op_id, 100, 100, 50.0)
                outer.endpoint.finished({}, topic, op_id, 'DONE', result)
                return {'state': 'DONE', 'result': result}

            def status(self, op_id):
                return {'state': 'UNKNOWN'}

            def cancel(self, op_id):
                pass
        return API()

    def result(self, kind, params):
        if kind == 'snapshot':
            return {'bytes_total': 100}
        if kind == 'seal':
            labels = {p.split('/')[-1]: 'id-' + p for p in params['devices']}
            return {'manifest_digest': 'md', 'labels': labels,
                    'seal_digest': 'sd'}
        if kind in ('catchup_round', 'final_delta'):
            return {'snapshot': '%s-r%d' % (params['shipment_id'],
                                            params['number']),
                    'changed_bytes': 10, 'wire_bytes': 5, 'seconds': 0.1,
                    'wire_rate': 50.0, 'estimate': 1}
        return {}


def pymysql_err(code, text):
    return pymysql.err.OperationalError(code, text)


class FlowTestCase(base.DBTestCase):

    def setUp(self):
        super().setUp()
        self.terminals = FakeTerminals()
        self.useFixture(fixtures.MonkeyPatch(
            'fedex_manager.rpc.TerminalAPI', self.terminals.api))
        self.notified = []
        db.on_transition(lambda *a: self.notified.append(a))
        self.addCleanup(db._transition_hooks.clear)
        CONF.set_override('op_poll_interval', 1, group='conductor')
        CONF.set_override('compute_driver', 'none', group='conductor')
        CONF.set_override('name', 'test-conductor', group='conductor')
        for opt in ('op_poll_interval', 'compute_driver', 'name'):
            self.addCleanup(CONF.clear_override, opt, group='conductor')
        sites.site_register(self.ctx, 'site-a')
        sites.site_register(self.ctx, 'site-b')
        sites.terminal_register(self.ctx, 'term-a', 'site-a')
        sites.terminal_register(self.ctx, 'term-b', 'site-b',
                                lsrp_address='127.0.0.1:1')
        for i in range(3):
            device_actions.device_register(self.ctx, 'SN%d' % i, 'term-a', slot=i,
                                           path='/slots-a/SN%d' % i)
        self.m = migrations.migration_create(
            self.ctx, [{'server_id': 'vm0', 'volumes': ['vms/d0', 'vms/d1']}],
            'site-a', 'site-b', options={'cutover': 'automatic',
                                         'retention_days': 0})

    def run_phase(self, phase):
        m = db.get(self.ctx, 'migration', self.m['id'])
        try:
            engines.run(phases.FACTORIES[phase](), store={
                'migration_id': m['id'], 'generation': m['generation']})
        except Exception as e:  # noqa: the conductor logs it; we look
            self.failure = e
        return db.get(self.ctx, 'migration', self.m['id'])

    def kinds(self):
        return [c[1] for c in self.terminals.calls]

    def plug_in_at_destination(self):
        for i in range(3):
            device_actions.device_register(self.ctx, 'SN%d' % i, 'term-b', slot=i,
                                           path='/slots-b/SN%d' % i)


class TestPhases(FlowTestCase):

    def test_whole_migration(self):
        m = self.run_phase('prepare')
        self.assertEqual(states.SEALED, m['state'])
        self.assertEqual(['snapshot', 'export', 'seal'], self.kinds())
        s = shipping.shipment_list(self.ctx)[0]
        self.assertEqual('SEALED', s['state'])
        self.assertTrue(s['key_ref'])
        self.assertEqual('md', s['manifest_digest'])
        self.assertEqual({'SEALED'}, {d['state'] for d in
                                      device_actions.device_list(self.ctx)})
        # Parked: the courier's events move it on.
        shipping.carrier_event(self.ctx, s['id'], 'hand_over', seq=1)
        shipping.carrier_event(self.ctx, s['id'], 'deliver', seq=2)
        self.assertEqual('receive', self.posted[-1][1])
        self.plug_in_at_destination()
        m = self.run_phase('receive')
        self.assertEqual(states.CATCHING_UP, m['state'])
        self.assertEqual('IMPORTED', shipping.shipment_show(
            self.ctx, s['id'])['state'])
        m = self.run_phase('catchup')
        # Automatic cutover in no window: straight on.
        self.assertEqual(states.CUTTING_OVER, m['state'])
        self.assertEqual(1, m['rounds'])
        m = self.run_phase('cutover')
        self.assertEqual(states.COMPLETED, m['state'])
        self.assertEqual('cleanup', self.posted[-1][1])
        m = self.run_phase('cleanup')
        self.assertEqual(states.CLEANED, m['state'])
        self.assertEqual('ERASED', shipping.shipment_show(
            self.ctx, s['id'])['state'])
        self.assertEqual({'BLANK'}, {d['state'] for d in
                                     device_actions.device_list(self.ctx)})
        self.assertIn('erase', self.kinds())
        self.assertIn('remove_snapshots', self.kinds())
        # Every state change was handed to the notification hook.
        self.assertIn(('migration', m['id'], states.COMPLETED,
                       states.CLEANED), [n[:4] for n in self.notified])

    def test_prepare_twice_runs_nothing_twice(self):
        self.run_phase('prepare')
        n = len(self.terminals.calls)
        # A resumed or duplicated job of the same generation.
        m = self.run_phase('prepare')
        self.assertEqual(states.SEALED, m['state'])
        self.assertEqual(n, len(self.terminals.calls))
        self.assertEqual(1, len(shipping.shipment_list(self.ctx)))

    def test_task_rerun_after_crash_is_idempotent(self):
        # The conductor died while Export ran: taskflow runs it again.
        m = db.get(self.ctx, 'migration', self.m['id'])
        for t in (prepare_tasks.Snapshot(), prepare_tasks.Pack(),
                  seal_tasks.Export(), seal_tasks.Export()):
            t.execute(m['id'], m['generation'])
        self.assertEqual(['snapshot', 'export', 'export'], self.kinds())
        # Same operation id both times: the agent runs it once.
        self.assertEqual(1, len({c[2] for c in self.terminals.calls
                                 if c[1] == 'export'}))
        self.assertEqual(1, len(shipping.shipment_list(self.ctx)))

    def test_pack_skips_devices_another_shipment_took(self):
        # Another migration's Pack took SN0 after this one listed the
        # blank devices: SN0 is skipped, not a failure.
        device_actions.device_register(self.ctx, 'SN3', 'term-a', slot=3,
                                       path='/slots-a/SN3')
        m = db.get(self.ctx, 'migration', self.m['id'])
        prepare_tasks.Snapshot().execute(m['id'], m['generation'])
        stale = db.list_(self.ctx, 'device', {'state': 'BLANK'},
                         sort_key='slot', sort_dir='asc')
        sn0 = db.get(self.ctx, 'device', 'SN0')
        db.transition(self.ctx, 'device', sn0['id'], 'assign')
        real = db.list_

        def list_(ctx, kind, filters=None, *a, **kw):
            if kind == 'device' and (filters or {}).get('state') == 'BLANK':
                return stale
            return real(ctx, kind, filters, *a, **kw)
        self.useFixture(fixtures.MonkeyPatch(
            'fedex_manager.flows.tasks.prepare.db.list_', list_))
        sid, = prepare_tasks.Pack().execute(m['id'], m['generation'])
        self.assertEqual(['SN1', 'SN2', 'SN3'], [
            d['serial'] for d in db.devices_of(self.ctx, sid)])
        self.assertEqual([0, 1, 2], [
            d['index_in_set'] for d in db.devices_of(self.ctx, sid)])

    def test_failure_is_recorded_and_retried(self):
        self.terminals.fail['export'] = 'DeviceFull: usb1 is full'
        m = self.run_phase('prepare')
        self.assertEqual(states.FAILED, m['state'])
        self.assertEqual(states.EXPORTING, m['failed_in'])
        self.assertIn('usb1 is full', m['last_error'])
        del self.terminals.fail['export']
        lifecycle.migration_retry(self.ctx, m['id'])
        m = self.run_phase('prepare')
        self.assertEqual(states.SEALED, m['state'])

    def test_database_gone_mid_phase_parks_it_for_the_next_sweep(self):
        # MariaDB restarting: the phase does not fail the migration (an
        # operator's retry for a restart); it parks, and a sweep posts it
        # again (here: run again), as after a conductor's death.
        real = db.operation_start
        lost = db_exception.DBConnectionError(
            "(pymysql.err.OperationalError) (2013, 'Lost connection to "
            "MySQL server during query')")
        with mock.patch.object(db, 'operation_start', side_effect=lost):
            m = self.run_phase('prepare')
        self.assertIsInstance(self.failure, tasks.Parked)
        self.assertNotEqual(states.FAILED, m['state'])
        self.assertIsNone(m['last_error'])
        self.assertTrue(any(
            'the database was unreachable' in e['message'] and
            'Lost connection to MySQL server' in e['message']
            for e in db.events(self.ctx, {'migration_id': m['id']})))
        self.assertEqual(real, db.operation_start)
        m = self.run_phase('prepare')
        self.assertEqual(states.SEALED, m['state'])

    def test_only_a_database_gone_parks(self):
        for error, parks in (
                (db_exception.DBConnectionError('gone'), True),
                (sa_exc.OperationalError('SELECT 1', {}, pymysql_err(
                    2003, "Can't connect to MySQL server")), True),
                (sa_exc.OperationalError('SELECT 1', {}, pymysql_err(
                    1205, 'Lock wait timeout exceeded')), False),
                (ValueError('a bug'), False)):
            self.assertEqual(parks, db.unreachable(error), error)

    def test_abort_in_exporting_cleans_up(self):
        m = db.get(self.ctx, 'migration', self.m['id'])
        for t in (prepare_tasks.Snapshot(), prepare_tasks.Pack()):
            t.execute(m['id'], m['generation'])
        old_generation = m['generation']
        lifecycle.migration_abort(self.ctx, m['id'], 'changed my mind')
        # The prepare job still running finds itself superseded.
        self.assertRaises(tasks.Superseded, seal_tasks.Export().execute,
                          m['id'], old_generation)
        m = self.run_phase('abort')
        self.assertEqual(states.ABORTED, m['state'])
        s = shipping.shipment_list(self.ctx)[0]
        self.assertEqual('ERASED', s['state'])
        self.assertIn('remove_snapshots', self.kinds())
        # Nothing was imported: nothing to remove at the destination.
        self.assertNotIn('remove_images', self.kinds())
        self.assertEqual({'BLANK'}, {d['state'] for d in
                                     device_actions.device_list(self.ctx)})
        from fedex_manager import keys
        self.assertRaises(exception.KeyManagerError,
                          keys.get_store().get, s['key_ref'])

    def test_abort_after_import_removes_destination_copies(self):
        self.m = migrations.migration_create(
            self.ctx, [{'server_id': 'vm1', 'volumes': ['vms/d2']}],
            'site-a', 'site-b', options={'cutover': 'approved'})
        self.run_phase('prepare')
        s = shipping.shipment_list(self.ctx)[0]
        shipping.carrier_event(self.ctx, s['id'], 'hand_over', seq=1)
        shipping.carrier_event(self.ctx, s['id'], 'deliver', seq=2)
        self.plug_in_at_destination()
        self.run_phase('receive')
        m = self.run_phase('catchup')
        self.assertEqual(states.READY_FOR_CUTOVER, m['state'])
        lifecycle.migration_abort(self.ctx, m['id'], 'changed my mind')
        m = self.run_phase('abort')
        self.assertEqual(states.ABORTED, m['state'])
        removed = [c for c in self.terminals.calls
                   if c[1] == 'remove_images']
        self.assertEqual(1, len(removed))
        self.assertIn('term-b', removed[0][0])

    def test_tampered_seal(self):
        self.run_phase('prepare')
        s = shipping.shipment_list(self.ctx)[0]
        shipping.carrier_event(self.ctx, s['id'], 'hand_over', seq=1)
        shipping.carrier_event(self.ctx, s['id'], 'deliver', seq=2)
        self.plug_in_at_destination()
        self.terminals.fail['verify'] = (
            'CustodyMismatch: devices SN1 do not match the seal record')
        m = self.run_phase('receive')
        self.assertEqual(states.FAILED, m['state'])
        self.assertIn('TAMPERED', shipping.shipment_show(
            self.ctx, s['id'])['state'])
        self.assertNotIn('import', self.kinds())
        from fedex_manager import keys
        self.assertRaises(exception.KeyManagerError,
                          keys.get_store().get, s['key_ref'])


class TestUnreachableDestination(FlowTestCase):
    """A catch-up round whose destination terminal does not answer."""

    UNREACHABLE = ('TerminalUnreachable: terminal term-b (127.0.0.1:1): '
                   'unreachable: ConnectionRefusedError')

    def setUp(self):
        super().setUp()
        self.run_phase('prepare')
        s = shipping.shipment_list(self.ctx)[0]
        shipping.carrier_event(self.ctx, s['id'], 'hand_over', seq=1)
        shipping.carrier_event(self.ctx, s['id'], 'deliver', seq=2)
        self.plug_in_at_destination()
        self.run_phase('receive')
        CONF.set_override('peer_retry_interval', 1, group='conductor')
        self.addCleanup(CONF.clear_override, 'peer_retry_interval',
                        group='conductor')
        self.terminals.fail['catchup_round'] = self.UNREACHABLE

    def events(self):
        return [e['message'] for e in event_actions.events_query(
            self.ctx, migration=self.m['id'], limit=1000)]

    def test_waits_and_goes_on_when_it_is_back(self):
        self.terminals.fail_times['catchup_round'] = 2
        m = self.run_phase('catchup')
        self.assertEqual(states.CUTTING_OVER, m['state'])
        self.assertEqual(1, m['rounds'])
        base_id = '%s.catchup_round.1' % m['id']
        self.assertEqual([base_id, base_id + '.try2', base_id + '.try3'],
                         [c[2] for c in self.terminals.calls
                          if c[1] == 'catchup_round'])
        texts = self.events()
        self.assertEqual(2, len([t for t in texts if 'destination terminal '
                                 'term-b unreachable' in t]))
        self.assertTrue(any('answers again after 3 tries' in t
                            for t in texts))

    def test_fails_naming_the_terminal_after_patience(self):
        CONF.set_override('peer_patience', 2, group='conductor')
        self.addCleanup(CONF.clear_override, 'peer_patience',
                        group='conductor')
        m = self.run_phase('catchup')
        self.assertEqual(states.FAILED, m['state'])
        self.assertEqual(states.CATCHING_UP, m['failed_in'])
        self.assertIn('destination terminal term-b unreachable',
                      m['last_error'])
        self.assertIn('peer_patience', m['last_error'])

    def test_other_failures_fail_at_once(self):
        self.terminals.fail['catchup_round'] = 'RbdError: pool vms is gone'
        m = self.run_phase('catchup')
        self.assertEqual(states.FAILED, m['state'])
        self.assertEqual(1, len([c for c in self.terminals.calls
                                 if c[1] == 'catchup_round']))


class TestDetachedVolume(FlowTestCase):
    """A detached Cinder volume moved on its own: no Nova at the cutover."""

    def test_completes_without_nova_after_cinders_move(self):
        from unittest import mock

        from fedex_manager import cinder
        CONF.set_override('compute_driver', 'nova', group='conductor')
        calls = []
        for name in ('mark', 'cutover', 'unmark'):
            self.useFixture(fixtures.MockPatchObject(
                cinder, name, mock.Mock(side_effect=lambda m, *a, n=name:
                                        calls.append(n))))
        nova = self.useFixture(fixtures.MockPatchObject(
            cutover_tasks, 'start_nova_cutover')).mock
        self.m = migrations.migration_create(
            self.ctx, None, 'site-a', 'site-b',
            volumes=[{'volume_id': 'v1'}],
            options={'cutover': 'automatic', 'retention_days': 0})
        self.assertEqual([], self.m['servers'])
        self.assertEqual([('v1', 'volume', 'volumes/volume-v1', None)],
                         [(v['volume_id'], v['kind'], v['source_image'],
                           v['server_id']) for v in self.m['volumes']])
        self.run_phase('prepare')
        s = shipping.shipment_list(self.ctx)[0]
        shipping.carrier_event(self.ctx, s['id'], 'hand_over', seq=1)
        shipping.carrier_event(self.ctx, s['id'], 'deliver', seq=2)
        self.plug_in_at_destination()
        self.run_phase('receive')
        m = self.run_phase('catchup')
        self.assertEqual(states.CUTTING_OVER, m['state'])
        m = self.run_phase('cutover')
        self.assertEqual(states.COMPLETED, m['state'])
        nova.assert_not_called()
        self.assertEqual(['mark', 'cutover'], calls)

    def test_needs_a_server_or_a_volume(self):
        e = self.assertRaises(exception.InvalidInput, migrations.migration_create,
                              self.ctx, [], 'site-a', 'site-b')
        self.assertIn('at least one server or volume', str(e))


class TestGroupAbortWhilePacked(FlowTestCase):
    """One migration of a shipment group aborted before the group seals."""

    def setUp(self):
        super().setUp()
        CONF.set_override('shipment_group_window', 0, group='conductor')
        self.addCleanup(CONF.clear_override, 'shipment_group_window',
                        group='conductor')
        self.group = migrations.migrations_create(self.ctx, [
            {'servers': [{'server_id': 'g%d' % i,
                          'volumes': ['vms/g%d' % i]}],
             'source_site': 'site-a', 'dest_site': 'site-b'}
            for i in range(3)], one_shipment=True)
        self.lead, self.gone, self.other = self.group

    def leader(self, *task_types):
        m = db.get(self.ctx, 'migration', self.lead['id'])
        for t in task_types:
            t().execute(m['id'], m['generation'])

    def shipment_of(self, m):
        return {v['shipment_id'] for v in db.get(
            self.ctx, 'migration', m['id'])['volumes']}

    def run_as(self, m, *task_types):
        m = db.get(self.ctx, 'migration', m['id'])
        for t in task_types:
            t().execute(m['id'], m['generation'])

    def abort_leader(self):
        lifecycle.migration_abort(self.ctx, self.lead['id'], 'test')
        m = db.get(self.ctx, 'migration', self.lead['id'])
        engines.run(phases.FACTORIES['abort'](), store={
            'migration_id': m['id'], 'generation': m['generation']})
        self.assertEqual(states.ABORTED, db.get(
            self.ctx, 'migration', m['id'])['state'])

    def test_leader_aborted_before_the_export_the_next_takes_over(self):
        self.leader(prepare_tasks.Snapshot, prepare_tasks.Pack)
        first, = self.shipment_of(self.lead)
        self.abort_leader()
        # Its shipment is kept for the others (they still need it).
        self.assertEqual('LOADING', db.get(self.ctx, 'shipment',
                                           first)['state'])
        # The next member's prepare does the group's work.
        self.run_as(self.gone, prepare_tasks.Snapshot, prepare_tasks.Pack,
                    seal_tasks.Export, seal_tasks.Seal)
        self.assertEqual({None}, self.shipment_of(self.lead))
        for m in (self.gone, self.other):
            self.assertEqual({first}, self.shipment_of(m))
            self.assertEqual(states.SEALED, db.get(
                self.ctx, 'migration', m['id'])['state'])
        self.assertEqual('SEALED', db.get(self.ctx, 'shipment',
                                          first)['state'])
        exports = [c[2] for c in self.terminals.calls if c[1] == 'export']
        self.assertEqual(1, len(exports))
        self.assertEqual(['snapshot', 'remove_snapshots', 'export', 'seal'],
                         self.kinds())

    def test_leader_aborted_mid_export_the_next_packs_again(self):
        self.leader(prepare_tasks.Snapshot, prepare_tasks.Pack,
                    seal_tasks.Export)
        first, = self.shipment_of(self.lead)
        # The abort cancelled the leader's export of the group.
        db.operation_report(self.ctx, '%s.export' % db.get(
            self.ctx, 'shipment', first)['name'], state='ERROR',
            error='cancelled by abort')
        self.abort_leader()
        self.run_as(self.gone, prepare_tasks.Snapshot, prepare_tasks.Pack,
                    seal_tasks.Export, seal_tasks.Seal)
        self.assertEqual('ERASED', db.get(self.ctx, 'shipment',
                                          first)['state'])
        sid, = self.shipment_of(self.gone)
        self.assertNotEqual(first, sid)
        self.assertEqual({sid}, self.shipment_of(self.other))
        self.assertEqual({None}, self.shipment_of(self.lead))
        self.assertEqual('SEALED', db.get(self.ctx, 'shipment', sid)['state'])
        self.assertEqual(['snapshot', 'export', 'remove_snapshots', 'erase',
                          'export', 'seal'], self.kinds())
        for m in (self.gone, self.other):
            self.assertEqual(states.SEALED, db.get(
                self.ctx, 'migration', m['id'])['state'])

    def test_aborted_before_the_export_is_left_out(self):
        self.leader(prepare_tasks.Snapshot, prepare_tasks.Pack)
        lifecycle.migration_abort(self.ctx, self.gone['id'], 'test')
        self.leader(seal_tasks.Export, seal_tasks.Seal)
        self.assertEqual({None}, self.shipment_of(self.gone))
        sid, = self.shipment_of(self.lead)
        self.assertEqual({sid}, self.shipment_of(self.other))
        self.assertEqual('SEALED', db.get(self.ctx, 'shipment', sid)['state'])
        self.assertEqual(1, self.kinds().count('export'))
        said = [e['message'] for e in db.events(
            self.ctx, {'migration_id': self.gone['id']})]
        self.assertTrue(any('vms/g1 left out of shipment' in x
                            for x in said), said)
        for m in (self.lead, self.other):
            self.assertEqual(states.SEALED, db.get(
                self.ctx, 'migration', m['id'])['state'])

    def test_aborted_after_the_export_the_shipment_is_packed_again(self):
        self.leader(prepare_tasks.Snapshot, prepare_tasks.Pack,
                    seal_tasks.Export)
        first, = self.shipment_of(self.lead)
        lifecycle.migration_abort(self.ctx, self.gone['id'], 'test')
        self.leader(seal_tasks.Seal)
        old = db.get(self.ctx, 'shipment', first)
        self.assertEqual('ERASED', old['state'])
        self.assertRaises(exception.KeyManagerError,
                          __import__('fedex_manager.keys', fromlist=['x'])
                          .get_store().get, old['key_ref'])
        sid, = self.shipment_of(self.lead)
        self.assertNotEqual(first, sid)
        self.assertEqual({sid}, self.shipment_of(self.other))
        self.assertEqual({None}, self.shipment_of(self.gone))
        self.assertEqual('SEALED', db.get(self.ctx, 'shipment', sid)['state'])
        # The first set wiped at the source, a second export and one seal.
        self.assertEqual(['snapshot', 'export', 'erase', 'export', 'seal'],
                         self.kinds())
        # The three devices, wiped and blank again, carry the new one.
        self.assertEqual([('SEALED', sid)] * 3, [
            (d['state'], d['shipment_id'])
            for d in device_actions.device_list(self.ctx)])
        # The aborted one's own abort: its snapshots go, nothing else.
        m = db.get(self.ctx, 'migration', self.gone['id'])
        engines.run(phases.FACTORIES['abort'](), store={
            'migration_id': m['id'], 'generation': m['generation']})
        self.assertEqual(states.ABORTED, db.get(
            self.ctx, 'migration', m['id'])['state'])
        self.assertEqual('SEALED', db.get(self.ctx, 'shipment', sid)['state'])
        self.assertEqual('remove_snapshots', self.kinds()[-1])
