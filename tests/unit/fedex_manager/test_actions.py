import datetime

from fedex_manager.actions import cutover as cutover_actions
from fedex_manager.actions import devices as device_actions
from fedex_manager.actions import events as event_actions
from fedex_manager.actions import lifecycle
from fedex_manager.actions import migrations as migration_actions
from fedex_manager.actions import shipping
from fedex_manager.actions import sites
from fedex_manager.conductor import endpoint
from fedex_manager.db import api as db
from fedex_manager.db import models
from fedex_manager import states
from lsrp import exception
from tests.unit.fedex_manager import base


class ActionsTestCase(base.DBTestCase):

    def setUp(self):
        super().setUp()
        sites.site_register(self.ctx, 'site-a', availability_zone='az-a')
        sites.site_register(self.ctx, 'site-b', aggregate='agg-b')
        sites.terminal_register(self.ctx, 'term-a', 'site-a')
        sites.terminal_register(self.ctx, 'term-b', 'site-b')

    def create(self, n_servers=1, **kw):
        servers = [{'server_id': 'vm%d' % i, 'name': 'vm%d' % i,
                    'volumes': ['vms/vm%d-disk0' % i,
                                {'source_image': 'volumes/vm%d-v1' % i,
                                 'size_bytes': 1 << 20}]}
                   for i in range(n_servers)]
        return migration_actions.migration_create(self.ctx, servers, 'site-a',
                                                  'site-b', **kw)


class TestSitesTerminals(ActionsTestCase):

    def test_register_and_health(self):
        self.assertEqual(['site-a', 'site-b'],
                         [s['name'] for s in sites.site_list(self.ctx)])
        self.assertEqual('UNKNOWN',
                         sites.terminal_show(self.ctx, 'term-a')['health'])
        sites.terminal_heartbeat(self.ctx, 'term-a', {'slots': 3})
        t = sites.terminal_show(self.ctx, 'term-a')
        self.assertEqual('UP', t['health'])
        self.assertEqual({'slots': 3}, t['info'])
        self.assertEqual(['term-b'], [t['name'] for t in sites.terminal_list(
            self.ctx, site='site-b')])
        # Registering again updates, never duplicates.
        sites.terminal_register(self.ctx, 'term-a', 'site-a', slots=4)
        self.assertEqual(2, len(sites.terminal_list(self.ctx)))

    def test_duplicate_site_and_unknown(self):
        e = self.assertRaises(exception.Conflict, sites.site_register,
                              self.ctx, 'site-a')
        self.assertIn('site-a', str(e))
        e = self.assertRaises(exception.NotFound, sites.terminal_register,
                              self.ctx, 'term-x', 'site-x')
        self.assertIn('site site-x does not exist', str(e))


class TestMigrations(ActionsTestCase):

    def test_create_posts_prepare(self):
        m = self.create(2, name='wave-1', options={'rate_cap': 1000})
        self.assertEqual(states.REQUESTED, m['state'])
        self.assertEqual(2, len(m['servers']))
        self.assertEqual(4, len(m['volumes']))
        self.assertEqual('vms/vm0-disk0', m['volumes'][0]['dest_image'])
        self.assertEqual(1000, m['options']['rate_cap'])
        self.assertEqual([(m['id'], 'prepare', 1)], self.posted)
        self.assertEqual('job-1', m['job_id'])
        shown = migration_actions.migration_show(self.ctx, m['id'])
        self.assertEqual(2 << 20, shown['progress']['bytes_total'])
        self.assertEqual(states.REQUESTED, shown['events'][-1]['to_state'])

    def test_bad_input_creates_nothing(self):
        cases = [
            (dict(servers=[]), 'servers'),
            (dict(servers=[{'volumes': ['no-pool']}]), 'POOL/IMAGE'),
            (dict(servers=[{'volumes': []}]), 'at least one RBD image'),
            (dict(servers=[{'volumes': ['a/b', 'a/b']}]), 'listed twice'),
            (dict(servers=[{'volumes': ['a/b']}], options={'x': 1}),
             'unknown option'),
            (dict(servers=[{'volumes': ['a/b']}], options={'max_rounds': 0}),
             'max_rounds'),
        ]
        for kw, text in cases:
            e = self.assertRaises(exception.InvalidInput,
                                  migration_actions.migration_create, self.ctx,
                                  source_site='site-a', dest_site='site-b',
                                  **kw)
            self.assertIn(text, str(e))
        e = self.assertRaises(exception.InvalidInput,
                              migration_actions.migration_create, self.ctx,
                              [{'volumes': ['a/b']}], 'site-a', 'site-a')
        self.assertIn('both site-a', str(e))
        e = self.assertRaises(exception.InvalidInput,
                              migration_actions.migrations_create, self.ctx, [
                                  dict(servers=[{'volumes': ['a/b']}],
                                       source_site='site-a',
                                       dest_site='site-b'),
                                  dict(servers=[{'volumes': ['bad']}],
                                       source_site='site-a',
                                       dest_site='site-b')])
        self.assertIn('migrations[1]', str(e))
        self.assertEqual([], migration_actions.migration_list(self.ctx))

    def test_list_filters_limit_marker_sort(self):
        ids = [self.create(name='m%d' % i)['id'] for i in range(5)]
        page1 = migration_actions.migration_list(self.ctx, limit=2, sort_key='name',
                                                 sort_dir='asc')
        self.assertEqual(['m0', 'm1'], [m['name'] for m in page1])
        page2 = migration_actions.migration_list(self.ctx, limit=2,
                                                 marker=page1[-1]['id'],
                                                 sort_key='name', sort_dir='asc')
        self.assertEqual(['m2', 'm3'], [m['name'] for m in page2])
        lifecycle.migration_abort(self.ctx, ids[0], reason='test')
        self.assertEqual(['m0'], [m['name'] for m in migration_actions.migration_list(
            self.ctx, {'state': 'ABORTING'})])
        self.assertRaises(exception.InvalidInput, migration_actions.migration_list,
                          self.ctx, {'colour': 'red'})
        self.assertRaises(exception.InvalidInput, migration_actions.migration_list,
                          self.ctx, {'state': 'NAPPING'})
        self.assertRaises(exception.InvalidInput, migration_actions.migration_list,
                          self.ctx, limit=0)
        self.assertRaises(exception.InvalidInput, migration_actions.migration_list,
                          self.ctx, marker='nope')

    def test_update_options(self):
        m = self.create()
        m = migration_actions.migration_update(self.ctx, m['id'], options={
            'rate_cap': 5, 'cutover_window': {'start': '01:00',
                                              'end': '03:00'},
            'downtime_budget': 10})
        self.assertEqual(5, m['options']['rate_cap'])
        self.assertEqual(10, m['options']['downtime_budget'])
        self.assertRaises(exception.InvalidInput, migration_actions.migration_update,
                          self.ctx, m['id'], options={'rate_cap': 'fast'})

    def test_abort_refused_in_cutover(self):
        m = self.create()
        for ev in ('snapshot', 'export', 'seal', 'ship', 'deliver',
                   'import', 'catch_up', 'converge', 'cutover'):
            db.transition(self.ctx, 'migration', m['id'], ev)
        e = self.assertRaises(exception.InvalidTransition,
                              lifecycle.migration_abort, self.ctx, m['id'])
        self.assertIn('from CUTTING_OVER to ABORTING', str(e))

    def test_fail_retry_posts_same_phase(self):
        m = self.create()
        db.transition(self.ctx, 'migration', m['id'], 'snapshot')
        db.transition(self.ctx, 'migration', m['id'], 'export')
        db.transition(self.ctx, 'migration', m['id'], 'fail',
                      values={'failed_in': 'EXPORTING',
                              'last_error': 'boom'})
        m = lifecycle.migration_retry(self.ctx, m['id'])
        self.assertEqual(states.EXPORTING, m['state'])
        self.assertEqual('prepare', self.posted[-1][1])
        self.assertEqual(2, self.posted[-1][2])
        self.assertRaises(exception.InvalidTransition,
                          lifecycle.migration_retry, self.ctx, m['id'])

    def test_cutover_needs_approval_and_window(self):
        m = self.create(options={'cutover': 'approved'})
        for ev in ('snapshot', 'export', 'seal', 'ship', 'deliver',
                   'import', 'catch_up', 'converge'):
            db.transition(self.ctx, 'migration', m['id'], ev)
        r = cutover_actions.cutover_ready(self.ctx, m['id'])
        self.assertFalse(r['ready'])
        self.assertIn('not approved', r['reasons'][0])
        self.assertRaises(exception.InvalidTransition,
                          cutover_actions.migration_cutover_start, self.ctx, m['id'])
        cutover_actions.migration_approve_cutover(self.ctx, m['id'])
        m = cutover_actions.migration_cutover_start(self.ctx, m['id'])
        self.assertEqual(states.CUTTING_OVER, m['state'])
        self.assertEqual('cutover', self.posted[-1][1])
        self.assertFalse(cutover_actions.final_delta_status(self.ctx,
                                                            m['id'])['done'])
        db.operation_start(self.ctx, m['id'] + '.final_delta.9', m['id'],
                           'term-a', 'final_delta')
        db.operation_report(self.ctx, m['id'] + '.final_delta.9',
                            state='DONE', result={'snapshot': 's-r9'})
        self.assertEqual('s-r9', cutover_actions.final_delta_status(
            self.ctx, m['id'])['snapshot'])
        m = cutover_actions.migration_cutover_finish(self.ctx, m['id'], False,
                                                     'nova said no')
        self.assertEqual(states.CATCHING_UP, m['state'])
        self.assertEqual('catchup', self.posted[-1][1])

    def test_delete_only_finished(self):
        m = self.create()
        e = self.assertRaises(exception.InvalidTransition,
                              migration_actions.migration_delete, self.ctx, m['id'])
        self.assertIn('abort it first', str(e))
        lifecycle.migration_abort(self.ctx, m['id'])
        db.transition(self.ctx, 'migration', m['id'], 'aborted')
        migration_actions.migration_delete(self.ctx, m['id'])
        self.assertRaises(exception.NotFound, migration_actions.migration_show,
                          self.ctx, m['id'])
        # Its events stay: append-only.
        self.assertTrue(event_actions.events_query(self.ctx,
                                                   resource_id=m['id']))

    def test_transition_is_compare_and_swap(self):
        m = self.create()
        self.assertRaises(exception.InvalidTransition, db.transition,
                          self.ctx, 'migration', m['id'], 'export',
                          expect=states.SNAPSHOTTING)


class TestProgress(ActionsTestCase):

    def test_rate_and_eta_only_while_something_moves(self):
        m = self.create()
        db.update(self.ctx, 'migration', m['id'], {
            'bytes_done': 512, 'bytes_total': 1024, 'rate': 8.0,
            'eta_seconds': 64.0})
        shown = migration_actions.migration_show(self.ctx, m['id'])['progress']
        self.assertEqual((50.0, 8.0, 64.0), (
            shown['percent'], shown['rate'], shown['eta_seconds']))
        lifecycle.migration_abort(self.ctx, m['id'], 'test')
        db.transition(self.ctx, 'migration', m['id'], 'aborted')
        shown = migration_actions.migration_show(self.ctx, m['id'])['progress']
        self.assertEqual((50.0, None, None), (
            shown['percent'], shown['rate'], shown['eta_seconds']))


class TestEvents(ActionsTestCase):

    def test_append_only(self):
        ev = db.add_event(self.ctx, 'site', 'x', 'note', 'hello')

        def change():
            with db.writer(self.ctx) as session:
                row = session.get(models.Event, ev['id'])
                row.message = 'changed'
        self.assertRaises(exception.ManagerError, change)
        self.assertEqual('hello', event_actions.events_query(
            self.ctx, resource_id='x')[0]['message'])

    def test_query_since_and_bad(self):
        self.create()
        self.assertTrue(event_actions.events_query(self.ctx,
                                                   since='2000-01-01T00:00:00'))
        self.assertRaises(exception.InvalidInput, event_actions.events_query,
                          self.ctx, since='yesterday')


class TestCarrier(ActionsTestCase):

    def setUp(self):
        super().setUp()
        self.m = self.create()
        for ev in ('snapshot', 'export', 'seal'):
            db.transition(self.ctx, 'migration', self.m['id'], ev)
        self.s = db.create(self.ctx, 'shipment', dict(
            name='ship-1', state=states.S_SEALED, parity=1))
        db.volumes_update(self.ctx, self.m['id'],
                          {'shipment_id': self.s['id']})
        for i in range(3):
            d = device_actions.device_register(self.ctx, 'SN%d' % i, 'term-a',
                                               slot=i)
            for ev in ('assign', 'write', 'seal'):
                db.transition(self.ctx, 'device', d['id'], ev)
            db.update(self.ctx, 'device', d['id'],
                      {'shipment_id': self.s['id'], 'index_in_set': i})

    def test_journey_and_duplicates(self):
        s = shipping.carrier_event(self.ctx, 'ship-1', 'hand_over', seq=1,
                                   tracking_number='FX1')
        self.assertEqual('HANDED_TO_CARRIER', s['state'])
        self.assertEqual(states.IN_TRANSIT, migration_actions.migration_show(
            self.ctx, self.m['id'])['state'])
        self.assertEqual({'SHIPPED'}, {d['state'] for d in
                                       device_actions.device_list(self.ctx)})
        # The same event again: recorded and ignored.
        s = shipping.carrier_event(self.ctx, 'ship-1', 'hand_over', seq=1)
        self.assertTrue(s['ignored'])
        shipping.carrier_event(self.ctx, 'ship-1', 'depart', seq=2)
        # Out of order: hand_over after departure is refused, recorded.
        e = self.assertRaises(exception.InvalidTransition,
                              shipping.carrier_event, self.ctx, 'ship-1',
                              'hand_over', seq=3)
        self.assertIn('IN_TRANSIT', str(e))
        texts = [ev['message'] for ev in event_actions.events_query(
            self.ctx, resource_id=self.s['id'])]
        self.assertTrue(any('ignored' in t for t in texts))
        self.assertTrue(any('refused' in t for t in texts))
        s = shipping.carrier_event(self.ctx, 'ship-1', 'deliver', seq=4,
                                   devices_missing=['SN2'])
        self.assertEqual('DELIVERED', s['state'])
        self.assertEqual(states.DELIVERED, migration_actions.migration_show(
            self.ctx, self.m['id'])['state'])
        self.assertEqual('receive', self.posted[-1][1])
        self.assertEqual('MISSING', device_actions.device_show(self.ctx,
                                                               'SN2')['state'])

    def test_two_missing_devices_is_lost(self):
        shipping.carrier_event(self.ctx, 'ship-1', 'hand_over', seq=1)
        s = shipping.carrier_event(self.ctx, 'ship-1', 'deliver', seq=2,
                                   devices_missing=['SN0', 'SN1'])
        self.assertEqual('LOST', s['state'])
        m = migration_actions.migration_show(self.ctx, self.m['id'])
        self.assertEqual(states.IN_TRANSIT, m['state'])
        self.assertIn('reship', m['allowed_actions'])
        m = lifecycle.migration_reship(self.ctx, self.m['id'])
        self.assertEqual(states.EXPORTING, m['state'])
        self.assertEqual('prepare', self.posted[-1][1])

    def test_unknown_event(self):
        e = self.assertRaises(exception.InvalidInput, shipping.carrier_event,
                              self.ctx, 'ship-1', 'teleport')
        self.assertIn('teleport', str(e))


class TestHeartbeatDevices(ActionsTestCase):
    """A heartbeat moves a device only if it listed it after its move."""

    def setUp(self):
        super().setUp()
        sites.terminal_register(self.ctx, 'term-b2', 'site-b')
        self.endpoint = endpoint.ManagerEndpoint()

    def beat(self, terminal, site, path, scanned_at):
        info = {'site': site, 'rpc_topic': 'x', 'devices': [
            {'serial': 'dev-1', 'path': path, 'slot': 'usb-1'}]}
        if scanned_at is not None:
            info['scanned_at'] = scanned_at.isoformat() + 'Z'
        self.endpoint.heartbeat(None, terminal, info)
        return db.get(self.ctx, 'device', 'dev-1')

    def test_late_heartbeat_of_the_old_terminal_does_not_move_it_back(self):
        listed = db.now()
        d = self.beat('term-a', 'site-a', '/a/usb-1', listed)
        self.assertEqual('/a/usb-1', d['path'])
        # The source lists its slots, then the courier plugs the device in
        # at the second terminal of site B, then the source's cast arrives.
        stale = db.now()
        device_actions.device_register(self.ctx, 'dev-1', 'term-b2', path='/b2/usb-1')
        d = self.beat('term-a', 'site-a', '/a/usb-1', stale)
        self.assertEqual(
            (sites.terminal_show(self.ctx, 'term-b2')['id'], '/b2/usb-1'),
            (d['terminal_id'], d['path']))
        # Listed later than its move (carried back by hand): believed.
        d = self.beat('term-a', 'site-a', '/a/usb-1',
                      db.now() + datetime.timedelta(seconds=2))
        self.assertEqual(
            (sites.terminal_show(self.ctx, 'term-a')['id'], '/a/usb-1'),
            (d['terminal_id'], d['path']))

    def test_heartbeat_without_scan_time_is_believed(self):
        self.beat('term-a', 'site-a', '/a/usb-1', None)
        device_actions.device_register(self.ctx, 'dev-1', 'term-b2', path='/b2/usb-1')
        d = self.beat('term-a', 'site-a', '/a/usb-1', None)
        self.assertEqual('/a/usb-1', d['path'])
