"""Shipments shared by migrations, spanning shipments, returned devices,
seeding over the WAN: the phases in-process, terminals faked at the RPC
client (the real thing: tests/functional/manager/test_shipments.py)."""

import datetime

import fixtures
from oslo_config import cfg
from taskflow import engines

from fedex_manager.actions import devices as device_actions
from fedex_manager.actions import lifecycle
from fedex_manager.actions import migrations as migration_actions
from fedex_manager.actions import shipping
from fedex_manager.actions import sites
from fedex_manager import custody
from fedex_manager.db import api as db
from fedex_manager.flows import phases
from fedex_manager.flows import tasks
from fedex_manager import shipments
from fedex_manager import states
from lsrp import exception
from tests.unit.fedex_manager import test_flows

CONF = cfg.CONF
MiB = 1 << 20


class ShipmentsTestCase(test_flows.FlowTestCase):

    sizes = {}

    def setUp(self):
        super().setUp()
        CONF.set_override('shipment_group_window', 0, group='conductor')
        self.addCleanup(CONF.clear_override, 'shipment_group_window',
                        group='conductor')
        result = self.terminals.result

        def sized(kind, params):
            if kind == 'snapshot':
                return {'bytes_total': 100, 'sizes': {
                    spec: self.sizes.get(spec, MiB)
                    for spec in params['images']}}
            return result(kind, params)
        self.terminals.result = sized

    def run_for(self, m, phase):
        m = db.get(self.ctx, 'migration', m['id'])
        try:
            engines.run(phases.FACTORIES[phase](), store={
                'migration_id': m['id'], 'generation': m['generation']})
        except Exception as e:  # noqa: the conductor logs it; we look
            self.failure = e
        return db.get(self.ctx, 'migration', m['id'])

    def ops(self, kind):
        return [c[2] for c in self.terminals.calls if c[1] == kind]

    def devices(self, n, terminal='term-a', capacity=0):
        for i in range(3, 3 + n):
            device_actions.device_register(self.ctx, 'SN%d' % i, terminal, slot=i,
                                           path='/slots-a/SN%d' % i,
                                           capacity_bytes=capacity)

    def deliver(self, s, seq=1):
        shipping.carrier_event(self.ctx, s['id'], 'hand_over', seq=seq)
        shipping.carrier_event(self.ctx, s['id'], 'deliver', seq=seq + 1)
        for d in db.devices_of(self.ctx, s['id']):
            device_actions.device_register(self.ctx, d['serial'], 'term-b',
                                           slot=d['slot'],
                                           path='/slots-b/%s' % d['serial'])


class TestSharedShipment(ShipmentsTestCase):

    def test_two_migrations_one_shipment(self):
        # The FlowTestCase's migration is not part of it: abort it.
        lifecycle.migration_abort(self.ctx, self.m['id'], 'not this one')
        self.run_phase('abort')
        made = migration_actions.migrations_create(self.ctx, [
            {'servers': [{'server_id': 'vm%d' % i,
                          'volumes': ['vms/clone%d' % i]}],
             'source_site': 'site-a', 'dest_site': 'site-b',
             'options': {'cutover': 'approved'}} for i in (1, 2)],
            one_shipment=True)
        group = made[0]['options']['shipment_group']
        self.assertEqual(group, made[1]['options']['shipment_group'])
        # The second's prepare parks (holding no conductor worker) until
        # the first, the group's leader, has packed and sealed it.
        self.failure = None
        m2 = self.run_for(made[1], 'prepare')
        self.assertEqual(states.REQUESTED, m2['state'])
        self.assertIsInstance(self.failure, tasks.Parked)
        self.assertIn('shipment group %s: migration %s packs the group\'s '
                      'shipments' % (group, made[0]['id']),
                      [e['message'] for e in db.events(
                          self.ctx, {'migration_id': m2['id']})])
        self.assertEqual([], self.ops('snapshot'))
        m1 = self.run_for(made[0], 'prepare')
        m2 = db.get(self.ctx, 'migration', made[1]['id'])
        self.assertEqual(states.SEALED, m1['state'])
        self.assertEqual(states.SEALED, m2['state'])
        self.assertEqual(m1['base_snapshot'], m2['base_snapshot'])
        self.assertEqual(1, len(self.ops('snapshot')))
        self.assertEqual(1, len(self.ops('export')))
        sids = {v['shipment_id'] for m in (m1, m2) for v in m['volumes']}
        self.assertEqual(1, len(sids))
        s = db.get(self.ctx, 'shipment', sids.pop())
        # The follower's phase finds its work done and ends.
        self.run_for(m2, 'prepare')
        self.assertEqual(1, len(self.ops('export')))
        # A third cannot join a group that is packed.
        self.assertRaises(exception.InvalidInput, migration_actions.migration_create,
                          self.ctx, [{'server_id': 'vm3',
                                      'volumes': ['vms/clone3']}],
                          'site-a', 'site-b',
                          options={'shipment_group': group})
        self.deliver(s)
        for m in (m1, m2):
            self.assertEqual(states.DELIVERED, self.state(m))
        for m in (m1, m2):
            self.assertEqual(states.CATCHING_UP,
                             self.run_for(m, 'receive')['state'])
        self.assertEqual(1, len(set(self.ops('verify'))))
        self.assertEqual(1, len(set(self.ops('import'))))
        for m in (m1, m2):
            self.assertEqual(states.READY_FOR_CUTOVER,
                             self.run_for(m, 'catchup')['state'])
        # Erase waits until none needs the devices: m1 cleaned first
        # (m2 imported too, so it does not need them any more).
        self.assertEqual([], shipments.still_needed(self.ctx, s['id']))

    def state(self, m):
        return db.get(self.ctx, 'migration', m['id'])['state']

    def test_one_shipment_needs_one_route(self):
        sites.site_register(self.ctx, 'site-c')
        e = self.assertRaises(exception.InvalidInput,
                              migration_actions.migrations_create, self.ctx, [
                                  {'servers': [{'server_id': 'a',
                                                'volumes': ['vms/a']}],
                                   'source_site': 'site-a',
                                   'dest_site': dest}
                                  for dest in ('site-b', 'site-c')],
                              one_shipment=True)
        self.assertIn('one route', str(e))

    def test_group_label_is_fixed(self):
        self.assertRaises(exception.InvalidInput, migration_actions.migration_update,
                          self.ctx, self.m['id'],
                          options={'shipment_group': 'later'})
        self.assertRaises(exception.InvalidInput, migration_actions.migration_create,
                          self.ctx, [{'server_id': 'x', 'volumes': ['v/x']}],
                          'site-a', 'site-b',
                          options={'shipment_group': 'bad label!'})


class TestSpanning(ShipmentsTestCase):

    sizes = {'vms/d0': 60 * MiB, 'vms/d1': 30 * MiB}

    def test_images_span_two_shipments(self):
        # 3 devices of 40 MiB, parity 1: 80 MiB of data per set.
        for d in device_actions.device_list(self.ctx):
            db.update(self.ctx, 'device', d['id'],
                      {'capacity_bytes': 40 * MiB})
        self.devices(3, capacity=40 * MiB)
        m = self.run_phase('prepare')
        self.assertEqual(states.SEALED, m['state'])
        sids = {v['source_image']: v['shipment_id'] for v in m['volumes']}
        self.assertNotEqual(sids['vms/d0'], sids['vms/d1'])
        self.assertEqual(2, len(self.ops('export')))
        self.assertEqual(2, len(self.ops('seal')))
        s1, s2 = [db.get(self.ctx, 'shipment', sid) for sid in sorted(
            set(sids.values()))]
        self.deliver(s1)
        # One of two delivered: the migration still travels.
        self.assertEqual(states.IN_TRANSIT, m and db.get(
            self.ctx, 'migration', m['id'])['state'])
        self.deliver(s2)
        m = self.run_phase('receive')
        self.assertEqual(states.CATCHING_UP, m['state'])
        self.assertEqual(2, len(self.ops('import')))
        m = self.run_phase('catchup')
        # (cutover automatic: it starts at once)
        self.assertEqual(states.CUTTING_OVER, m['state'])
        # Rounds under a name of its own, authorized at the destination.
        self.assertEqual(1, len(self.ops('authorize')))
        self.assertNotIn('seed_over_wan', [c[1] for c in
                                           self.terminals.calls])

    def test_image_larger_than_a_device_set(self):
        for d in device_actions.device_list(self.ctx):
            db.update(self.ctx, 'device', d['id'],
                      {'capacity_bytes': 20 * MiB})
        m = self.run_phase('prepare')
        self.assertEqual(states.FAILED, m['state'])
        self.assertIn('vms/d0 (62914560 bytes) does not fit one device set',
                      m['last_error'])


class TestReturnedAndWan(ShipmentsTestCase):

    def test_abort_in_transit_devices_come_back_blank(self):
        self.run_phase('prepare')
        s = shipping.shipment_list(self.ctx)[0]
        shipping.carrier_event(self.ctx, s['id'], 'hand_over', seq=1)
        lifecycle.migration_abort(self.ctx, self.m['id'], 'test')
        m = self.run_phase('abort')
        self.assertEqual(states.ABORTED, m['state'])
        self.assertEqual(states.S_HANDED_TO_CARRIER, shipping.shipment_show(
            self.ctx, s['id'])['state'])
        shipping.carrier_event(self.ctx, s['id'], 'deliver', seq=2)
        custody.wipe_returned(self.ctx)     # not plugged in yet: nothing
        self.assertEqual([], self.ops('erase'))
        for d in db.devices_of(self.ctx, s['id']):
            device_actions.device_register(self.ctx, d['serial'], 'term-b',
                                           slot=d['slot'],
                                           path='/slots-b/%s' % d['serial'])
        custody.wipe_returned(self.ctx)
        custody.wipe_returned(self.ctx)
        self.assertEqual(1, len(self.ops('erase')))
        self.assertEqual('ERASED', shipping.shipment_show(
            self.ctx, s['id'])['state'])
        self.assertEqual({'BLANK'}, {d['state'] for d in
                                     device_actions.device_list(self.ctx)})

    def test_erase_whose_finished_cast_was_lost_is_asked_for(self):
        """The terminal wiped them but its word never came: asked."""
        self.run_phase('prepare')
        s = shipping.shipment_list(self.ctx)[0]
        shipping.carrier_event(self.ctx, s['id'], 'hand_over', seq=1)
        lifecycle.migration_abort(self.ctx, self.m['id'], 'test')
        self.run_phase('abort')
        shipping.carrier_event(self.ctx, s['id'], 'deliver', seq=2)
        for d in db.devices_of(self.ctx, s['id']):
            device_actions.device_register(self.ctx, d['serial'], 'term-b',
                                           slot=d['slot'],
                                           path='/slots-b/%s' % d['serial'])
        finished = self.terminals.endpoint.finished
        lost = []

        def lossy(ctxt, topic, op_id, state, result=None, error=None):
            if '.erase.' in op_id:
                lost.append((op_id, state))
                return
            finished(ctxt, topic, op_id, state, result, error)
        self.terminals.endpoint.finished = lossy
        custody.wipe_returned(self.ctx)
        custody.wipe_returned(self.ctx)
        self.assertEqual(1, len(lost))
        self.assertEqual('DELIVERED', shipping.shipment_show(
            self.ctx, s['id'])['state'])
        # After [conductor] op_timeout of quiet the sweeper asks.
        self.useFixture(fixtures.MockPatch(
            'fedex_manager.rpc.TerminalAPI', side_effect=lambda topic: type(
                'API', (), {'status': lambda _, op_id: {
                    'op_id': op_id, 'state': 'DONE',
                    'result': {'erased': []}}})()))
        later = db.now() + datetime.timedelta(
            seconds=CONF.conductor.op_timeout + 1)
        self.useFixture(fixtures.MockPatch(
            'fedex_manager.custody.db.now', return_value=later))
        custody.wipe_returned(self.ctx)
        self.assertEqual('ERASED', shipping.shipment_show(
            self.ctx, s['id'])['state'])

    def test_abort_in_transit_devices_returned_to_the_source(self):
        self.run_phase('prepare')
        s = shipping.shipment_list(self.ctx)[0]
        shipping.carrier_event(self.ctx, s['id'], 'hand_over', seq=1)
        # Not while a migration still needs the devices.
        e = self.assertRaises(exception.InvalidInput, shipping.carrier_event,
                              self.ctx, s['id'], 'return', seq=2)
        self.assertIn('not aborted', str(e))
        lifecycle.migration_abort(self.ctx, self.m['id'], 'test')
        self.run_phase('abort')
        shipping.carrier_event(self.ctx, s['id'], 'return', seq=2)
        # Plugged in again at the source terminal (term-a): wiped there.
        for d in db.devices_of(self.ctx, s['id']):
            device_actions.device_register(self.ctx, d['serial'], 'term-a',
                                           slot=d['slot'],
                                           path='/slots-a/%s' % d['serial'])
        custody.wipe_returned(self.ctx)
        custody.wipe_returned(self.ctx)
        erase, = self.ops('erase')
        self.assertTrue(erase.endswith('.erase.term-a'), erase)
        self.assertEqual('ERASED', shipping.shipment_show(
            self.ctx, s['id'])['state'])
        for d in device_actions.device_list(self.ctx):
            self.assertEqual('BLANK', d['state'])
            self.assertEqual('term-a', db.get(
                self.ctx, 'terminal', d['terminal_id'])['name'])
        said = [x['message'] for x in db.events(self.ctx)]
        self.assertTrue(any('wiped at term-a' in x for x in said), said)

    def test_lost_shipment_seeded_over_the_wan(self):
        self.run_phase('prepare')
        s = shipping.shipment_list(self.ctx)[0]
        shipping.carrier_event(self.ctx, s['id'], 'hand_over', seq=1)
        shipping.carrier_event(self.ctx, s['id'], 'lose', seq=2)
        lifecycle.migration_reship(self.ctx, self.m['id'], seed_over_wan=True)
        m = self.run_phase('catchup')
        # (cutover automatic: it starts at once)
        self.assertEqual(states.CUTTING_OVER, m['state'])
        kinds = [c[1] for c in self.terminals.calls]
        self.assertLess(kinds.index('authorize'), kinds.index('seed_over_wan'))
        self.assertLess(kinds.index('seed_over_wan'),
                        kinds.index('catchup_round'))
        self.assertTrue(m['last_snapshot'].startswith(
            'fedex-%s-wan-r' % self.m['id'].split('-')[0]))
