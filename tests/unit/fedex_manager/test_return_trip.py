"""The devices' trip home: a whole migration, then the return consignment
with a fake courier, the sweeper's job, losses and the overdue; the phases
in-process, terminals faked at the RPC client (the real thing:
tests/functional/manager/test_device_returns.py)."""

import datetime

import fixtures
from oslo_config import cfg
import sqlalchemy as sa

from fedex_manager.actions import devices as device_actions
from fedex_manager.actions import migrations
from fedex_manager.actions import shipping
from fedex_manager.conductor import periodics
from fedex_manager import custody
from fedex_manager.db import api as db
from fedex_manager.db import migration as db_migration
from fedex_manager import return_trip
from fedex_manager import states
from lsrp import exception
from tests.unit.fedex_manager import base
from tests.unit.fedex_manager import test_conductor_periodics
from tests.unit.fedex_manager import test_flows

CONF = cfg.CONF


class FakeCourier(object):
    """Takes a consignment and gives a tracking number.

    Its events come from the test (shipping.carrier_event, as the sweeper
    records them).
    """

    def __init__(self):
        self.dispatched = []

    def dispatch(self, ctx, shipment):
        self.dispatched.append(shipment['name'])
        return 'FAKE-%d' % len(self.dispatched)

    def poll(self, ctx, shipment):
        return []


class ReturnTripTestCase(test_flows.FlowTestCase):

    def setUp(self):
        super().setUp()
        self.courier = FakeCourier()
        self.useFixture(fixtures.MonkeyPatch(
            'fedex_manager.couriers._cache', {'fake': self.courier}))
        for opt, value in (('courier', 'fake'), ('return_devices', True)):
            CONF.set_override(opt, value, group='conductor')
            self.addCleanup(CONF.clear_override, opt, group='conductor')

    def migrate_and_clean(self):
        """The whole migration: its devices end BLANK at term-b."""
        self.run_phase('prepare')
        s = shipping.shipment_list(self.ctx)[0]
        shipping.carrier_event(self.ctx, s['id'], 'hand_over', seq=1)
        shipping.carrier_event(self.ctx, s['id'], 'deliver', seq=2)
        self.plug_in_at_destination()
        for phase in ('receive', 'catchup', 'cutover', 'cleanup'):
            m = self.run_phase(phase)
        self.assertEqual(states.CLEANED, m['state'])
        return s

    def where(self, serial):
        d = db.get(self.ctx, 'device', serial)
        return d['state'], db.get(self.ctx, 'terminal',
                                  d['terminal_id'])['name']

    def consignment(self):
        s, = shipping.shipment_list(self.ctx, {'kind': 'return'})
        return s

    def deliver_home(self, s, missing=()):
        shipping.carrier_event(self.ctx, s['id'], 'hand_over', seq=1)
        shipping.carrier_event(self.ctx, s['id'], 'deliver', seq=2,
                               devices_missing=list(missing))
        for i in range(3):
            if 'SN%d' % i not in missing:
                # Plugged in at home: its terminal's heartbeat says so.
                device_actions.device_register(
                    self.ctx, 'SN%d' % i, 'term-a', slot=i,
                    path='/slots-a/SN%d' % i)

    def messages(self, serial):
        d = db.get(self.ctx, 'device', serial)
        return [e['message'] for e in db.events(
            self.ctx, {'resource_id': d['id']})]


class TestRoundTrip(ReturnTripTestCase):

    def test_devices_come_home_blank_and_serve_again(self):
        self.migrate_and_clean()
        # As today: wiped, BLANK where they were wiped.
        self.assertEqual(('BLANK', 'term-b'), self.where('SN0'))
        # (The seed went with the same courier: FAKE-1.)
        return_trip.send_home(self.ctx)
        s = self.consignment()
        self.assertEqual(('SEALED', 'FAKE-2'),
                         (s['state'], s['tracking_number']))
        self.assertEqual(['term-b', 'term-a'], [
            db.get(self.ctx, 'terminal', t)['name']
            for t in (s['source_terminal_id'], s['dest_terminal_id'])])
        self.assertEqual(['SN0', 'SN1', 'SN2'],
                         [d['serial'] for d in s['devices']])
        self.assertEqual({'RETURNING'}, {d['state'] for d in s['devices']})
        self.assertEqual(s['name'], self.courier.dispatched[-1])
        # Again (another sweep, or after a crash): nothing twice.
        return_trip.send_home(self.ctx)
        self.assertEqual(2, len(self.courier.dispatched))
        shown = device_actions.device_show(self.ctx, 'SN0')
        self.assertEqual('term-a', shown['home_terminal'])
        self.assertEqual('term-b', shown['terminal'])
        self.assertEqual({'shipment_id': s['id'], 'name': s['name'],
                          'state': 'SEALED', 'carrier': 'fake',
                          'tracking_number': 'FAKE-2', 'from': 'term-b',
                          'to': 'term-a'}, shown['return_trip'])
        self.deliver_home(s)
        self.assertEqual('DELIVERED', shipping.shipment_show(
            self.ctx, s['id'])['state'])
        for i in range(3):
            d = db.get(self.ctx, 'device', 'SN%d' % i)
            self.assertEqual(('BLANK', None), (d['state'], d['shipment_id']))
            self.assertEqual(d['home_terminal_id'], d['terminal_id'])
        said = self.messages('SN0')
        for text in ('going home to term-a from term-b',
                     'packed in return consignment %s' % s['name'],
                     'handed to courier fake (tracking FAKE-2) at term-b',
                     'delivered at term-a',
                     'home again at term-a (return consignment %s): BLANK'
                     % s['name']):
            self.assertTrue(any(text in x for x in said), (text, said))
        # Home: nothing more to do, and a second migration uses them.
        return_trip.send_home(self.ctx)
        self.assertEqual(1, len(shipping.shipment_list(
            self.ctx, {'kind': 'return'})))
        self.m = migrations.migration_create(
            self.ctx, [{'server_id': 'vm1', 'volumes': ['vms/d2']}],
            'site-a', 'site-b', options={'cutover': 'automatic'})
        m = self.run_phase('prepare')
        self.assertEqual(states.SEALED, m['state'])
        self.assertEqual({'SEALED'}, {d['state'] for d in
                                      device_actions.device_list(self.ctx)})

    def test_returns_off_an_operator_sends_them(self):
        CONF.set_override('return_devices', False, group='conductor')
        self.migrate_and_clean()
        return_trip.send_home(self.ctx)
        self.assertEqual([], shipping.shipment_list(self.ctx,
                                                    {'kind': 'return'}))
        d = device_actions.device_return(self.ctx, 'SN1', reason='audit')
        self.assertEqual('RETURNING', d['state'])
        self.assertIsNone(d['return_trip'])     # not packed yet
        return_trip.send_home(self.ctx)
        s = self.consignment()
        self.assertEqual(['SN1'], [d['serial'] for d in s['devices']])
        self.assertIn('going home to term-a from term-b (requested: audit)',
                      self.messages('SN1'))
        self.assertEqual(('BLANK', 'term-b'), self.where('SN0'))

    def test_refusals_name_the_state(self):
        e = self.assertRaises(exception.Conflict,
                              device_actions.device_return, self.ctx, 'SN0')
        self.assertIn('at its home terminal term-a already', str(e))
        self.run_phase('prepare')
        e = self.assertRaises(exception.InvalidTransition,
                              device_actions.device_return, self.ctx, 'SN0')
        self.assertIn('SEALED', str(e))
        self.assertIn('RETURNING', str(e))

    def test_a_return_consignment_is_not_returned_nor_wiped(self):
        self.migrate_and_clean()
        return_trip.send_home(self.ctx)
        s = self.consignment()
        shipping.carrier_event(self.ctx, s['id'], 'hand_over', seq=1)
        e = self.assertRaises(exception.InvalidInput, shipping.carrier_event,
                              self.ctx, s['id'], 'return', seq=2)
        self.assertIn('return consignment', str(e))
        shipping.carrier_event(self.ctx, s['id'], 'deliver', seq=2)
        erased = len([c for c in self.terminals.calls if c[1] == 'erase'])
        custody.wipe_returned(self.ctx)
        self.assertEqual(erased, len([c for c in self.terminals.calls
                                      if c[1] == 'erase']))
        self.assertEqual('DELIVERED', shipping.shipment_show(
            self.ctx, s['id'])['state'])

    def test_no_consignment_when_its_devices_went_elsewhere(self):
        self.migrate_and_clean()
        d = return_trip.request_return(self.ctx, 'SN0')
        device_actions.device_register(self.ctx, 'SN0', 'term-a', slot=0,
                                       path='/slots-a/SN0')
        # Listed RETURNING, home before the consignment was made.
        self.assertIsNone(return_trip._consignment(
            self.ctx, d['terminal_id'], d['home_terminal_id'], [d]))
        self.assertEqual([], shipping.shipment_list(self.ctx,
                                                    {'kind': 'return'}))
        self.assertEqual(('BLANK', 'term-a'), self.where('SN0'))

    def test_plugged_in_at_the_sender_it_is_still_on_its_way(self):
        self.migrate_and_clean()
        return_trip.send_home(self.ctx)
        device_actions.device_register(self.ctx, 'SN0', 'term-b', slot=7,
                                       path='/slots-b/SN0')
        self.assertEqual(('RETURNING', 'term-b'), self.where('SN0'))


class TestLost(ReturnTripTestCase):

    def setUp(self):
        super().setUp()
        self.migrate_and_clean()
        return_trip.send_home(self.ctx)
        self.s = self.consignment()

    def test_lost_by_the_courier_then_found(self):
        shipping.carrier_event(self.ctx, self.s['id'], 'hand_over', seq=1)
        shipping.carrier_event(self.ctx, self.s['id'], 'lose', seq=2)
        self.assertEqual('LOST', shipping.shipment_show(
            self.ctx, self.s['id'])['state'])
        self.assertEqual({'LOST'}, {d['state'] for d in
                                    device_actions.device_list(self.ctx)})
        self.assertIn('LOST: the courier lost return consignment %s'
                      % self.s['name'], self.messages('SN0'))
        # Turned up later, plugged in anywhere: BLANK there.
        device_actions.device_register(self.ctx, 'SN0', 'term-a', slot=0,
                                       path='/slots-a/SN0')
        self.assertEqual(('BLANK', 'term-a'), self.where('SN0'))
        self.assertIn('turned up at term-a after it was LOST: BLANK',
                      self.messages('SN0'))

    def test_missing_at_delivery(self):
        self.deliver_home(self.s, missing=('SN2',))
        self.assertEqual('DELIVERED', shipping.shipment_show(
            self.ctx, self.s['id'])['state'])
        self.assertEqual(('BLANK', 'term-a'), self.where('SN0'))
        self.assertEqual(('LOST', 'term-b'), self.where('SN2'))
        self.assertTrue(any('missing from return consignment' in x
                            for x in self.messages('SN2')))

    def test_overdue(self):
        shipping.carrier_event(self.ctx, self.s['id'], 'hand_over', seq=1)
        return_trip.send_home(self.ctx)
        self.assertEqual({'RETURNING'}, {d['state'] for d in
                                         device_actions.device_list(
                                             self.ctx)})
        later = db.now() + datetime.timedelta(
            seconds=CONF.conductor.return_timeout + 1)
        self.useFixture(fixtures.MockPatch(
            'fedex_manager.return_trip.db.now', return_value=later))
        return_trip.send_home(self.ctx)
        self.assertEqual({'LOST'}, {d['state'] for d in
                                    device_actions.device_list(self.ctx)})
        self.assertTrue(any(x.startswith('LOST: overdue: not back at '
                                         'term-a') for x in
                            self.messages('SN1')), self.messages('SN1'))
        self.assertEqual('LOST', shipping.shipment_show(
            self.ctx, self.s['id'])['state'])

    def test_never_taken_by_the_courier_is_not_overdue(self):
        later = db.now() + datetime.timedelta(
            seconds=CONF.conductor.return_timeout + 1)
        self.useFixture(fixtures.MockPatch(
            'fedex_manager.return_trip.db.now', return_value=later))
        return_trip.send_home(self.ctx)
        self.assertEqual({'RETURNING'}, {d['state'] for d in
                                         device_actions.device_list(
                                             self.ctx)})


class TestRetire(ReturnTripTestCase):

    def test_only_what_holds_no_data_and_is_unplugged(self):
        self.run_phase('prepare')
        e = self.assertRaises(exception.Conflict,
                              device_actions.device_retire, self.ctx, 'SN0')
        self.assertIn('is SEALED: only a BLANK, ERASED, LOST device', str(e))
        device_actions.device_register(self.ctx, 'SN9', 'term-a', slot=9,
                                       path='/slots-a/SN9')
        from fedex_manager.actions import sites
        sites.terminal_heartbeat(self.ctx, 'term-a', {'devices': [
            {'serial': 'SN9', 'path': '/slots-a/SN9'}]})
        e = self.assertRaises(exception.Conflict,
                              device_actions.device_retire, self.ctx, 'SN9')
        self.assertIn('still plugged in at terminal term-a', str(e))
        sites.terminal_heartbeat(self.ctx, 'term-a', {'devices': []})
        d = db.get(self.ctx, 'device', 'SN9')
        device_actions.device_retire(self.ctx, 'SN9')
        self.assertRaises(exception.NotFound, db.get, self.ctx, 'device',
                          'SN9')
        # Its events stay: the audit trail.
        self.assertIn('retired (was BLANK at term-a)', [
            e['message'] for e in db.events(self.ctx,
                                            {'resource_id': d['id']})])


class TestSweeperJob(ReturnTripTestCase):

    def test_the_job_sends_them_home(self):
        self.migrate_and_clean()
        sweeper = periodics.Sweeper(test_conductor_periodics.FakeBoard(),
                                    test_conductor_periodics.FakeZK(), 't')
        sweeper.run(periodics.return_devices_home)
        s = self.consignment()
        self.assertEqual(3, len(s['devices']))
        # After the courier's events and the wipe of returned devices: a
        # device wiped or delivered in this turn goes home in it.
        names = [fn.__name__ for fn, _, _ in periodics.JOBS]
        self.assertLess(names.index('courier_events'),
                        names.index('return_devices_home'))
        self.assertLess(names.index('wipe_returned_devices'),
                        names.index('return_devices_home'))

    def test_courier_events_move_a_consignment(self):
        """The sweeper's courier_events records a return's events too."""
        self.migrate_and_clean()
        return_trip.send_home(self.ctx)
        s = self.consignment()
        self.courier.poll = lambda ctx, shipment: [
            {'event': 'hand_over', 'seq': 1}, {'event': 'lose', 'seq': 2}]
        sweeper = periodics.Sweeper(test_conductor_periodics.FakeBoard(),
                                    test_conductor_periodics.FakeZK(), 't')
        sweeper.run(periodics.courier_events)
        self.assertEqual('LOST', shipping.shipment_show(
            self.ctx, s['id'])['state'])
        self.assertEqual({'LOST'}, {d['state'] for d in
                                    device_actions.device_list(self.ctx)})


class TestHomesOfEarlierDevices(base.DBTestCase):
    """Migration 0005: homes from the registration events."""

    def test_home_is_where_it_was_registered(self):
        db.configure('sqlite:///%s/old.sqlite' % self.tmp)
        db_migration.upgrade('0004')
        engine = db.get_engine()
        with engine.begin() as conn:
            for i, (ident, name) in enumerate((('ta', 'term-a'),
                                               ('tb', 'term-b'))):
                conn.execute(sa.text(
                    "INSERT INTO sites (id, name, created_at, updated_at) "
                    "VALUES (:i, :n, '2026-01-01', '2026-01-01')"),
                    {'i': 's%d' % i, 'n': 'site-%d' % i})
                conn.execute(sa.text(
                    "INSERT INTO terminals (id, name, site_id, rpc_topic, "
                    "state, created_at, updated_at) VALUES (:i, :n, :s, "
                    "'t', 'UP', '2026-01-01', '2026-01-01')"),
                    {'i': ident, 'n': name, 's': 's%d' % i})
            for serial, at, said in (('D1', 'tb', 'registered at term-a'),
                                     ('D2', 'tb', None)):
                conn.execute(sa.text(
                    "INSERT INTO devices (id, serial, state, capacity_bytes,"
                    " terminal_id, created_at, updated_at) VALUES (:i, :i, "
                    "'BLANK', 0, :t, '2026-01-01', '2026-01-01')"),
                    {'i': serial, 't': at})
                if said:
                    conn.execute(sa.text(
                        "INSERT INTO events (created_at, resource_type, "
                        "resource_id, kind, to_state, message) VALUES "
                        "('2026-01-01', 'device', :i, 'state', 'BLANK', "
                        ":m)"), {'i': serial, 'm': said})
        db_migration.upgrade()
        self.assertEqual('ta', db.get(self.ctx, 'device',
                                      'D1')['home_terminal_id'])
        self.assertEqual('tb', db.get(self.ctx, 'device',
                                      'D2')['home_terminal_id'])
        s = db.create(self.ctx, 'shipment', {'name': 'x', 'state': 'SEALED'})
        self.assertEqual('seed', s['kind'])
