"""Devices' round trip on the sandbox: out full with a migration's seed,
wiped at site B, home with the simulated courier, BLANK at site A again
and used by the next migration; one lost on the way home is LOST. Real
Ceph, MariaDB, RabbitMQ, ZooKeeper, conductor and agents."""

import os
import shutil

from fedex_manager.actions import devices as device_actions
from fedex_manager.actions import lifecycle
from fedex_manager.actions import shipping
from fedex_manager.db import api as db
from fedex_manager import states
from tests.functional.manager import base

MiB = base.MiB


class TestDeviceReturns(base.ManagerTestCase):

    def setUp(self):
        super().setUp()
        # [conductor] return_devices (the sandbox's setting; the other
        # tests' deployments leave wiped devices where they are).
        self.dep.return_devices = True

    def device_messages(self, serial):
        d = db.get(self.ctx, 'device', serial)
        return [e['message'] for e in db.events(
            self.ctx, {'resource_id': d['id']})]

    def test_devices_come_home_and_serve_again(self):
        self.dep.start_conductor('conductor-1')
        self.start_terminals(devices=3)
        specs, writer = self.vm((32 * MiB,))
        m = self.migrate(specs)
        self.wait_state(m, states.READY_FOR_CUTOVER, timeout=300)
        s = self.wait_shipment(m)
        serials = sorted(d['serial'] for d in db.devices_of(self.ctx,
                                                            s['id']))
        self.assertEqual(sorted(self.serials), serials)
        self.cut_over(m, writer)
        self.assert_converged(m)
        lifecycle.migration_cleanup(self.ctx, m['id'])
        self.wait_state(m, states.CLEANED)
        self.key_destroyed(s)
        a = db.get(self.ctx, 'terminal', m['source_terminal_id'])

        def home():
            ds = device_actions.device_list(self.ctx)
            return len(ds) == 3 and all(
                d['state'] == states.D_BLANK and d['terminal_id'] == a['id']
                for d in ds) and ds
        for d in self.dep.wait(home, 120, 'the devices BLANK at %s'
                               % a['name']):
            self.assertEqual(a['id'], d['home_terminal_id'])
            self.assertEqual(self.dep.slots_dir('site-a'),
                             os.path.dirname(d['path']))
            self.assertEqual([], os.listdir(d['path']))

        def delivered():
            backs = shipping.shipment_list(self.ctx, {'kind': 'return'})
            return all(b['state'] == 'DELIVERED' for b in backs) and backs
        # One consignment a sweep: on a loaded machine a device erased
        # after a sweep had packed the others goes in the next one. Each
        # is recorded DELIVERED after its devices are home (CI's loaded
        # machine once read one IN_TRANSIT in between).
        backs = self.dep.wait(delivered, 120,
                              'the return consignments DELIVERED')
        self.assertTrue(backs)
        for back in backs:
            self.assertEqual(
                ('DELIVERED', m['dest_terminal_id'], a['id']),
                (back['state'], back['source_terminal_id'],
                 back['dest_terminal_id']))
        said = ' | '.join(self.device_messages(serials[0]))
        for text in ('erased (migration completed)', 'going home to %s'
                     % a['name'], 'handed to courier simulated',
                     'home again at %s' % a['name']):
            self.assertIn(text, said)
        self.assertTrue(any('packed in return consignment %s' % b['name']
                            in said for b in backs), said)
        # The next migration's seed goes on the same devices.
        specs2, writer2 = self.vm((32 * MiB,))
        m2 = self.migrate(specs2, server='vm2-%s' % self.id_)
        self.wait_state(m2, states.READY_FOR_CUTOVER, timeout=300)
        s2 = self.wait_shipment(m2)
        self.assertEqual(serials, sorted(
            d['serial'] for d in db.devices_of(self.ctx, s2['id'])))

    def test_device_lost_on_the_way_home(self):
        # Delivery late enough to tell the courier to lose it first.
        self.dep.timetable = {'hand_over': 0, 'depart': 1, 'scan': 2,
                              'deliver': 40}
        self.dep.start_conductor('conductor-1')
        self.start_terminals(devices=1)
        d, = device_actions.device_list(self.ctx)
        # Carried to site B by hand: BLANK there, away from home.
        slots_b = self.dep.slots_dir('site-b')
        os.makedirs(slots_b, exist_ok=True)
        shutil.move(d['path'], os.path.join(slots_b,
                                            os.path.basename(d['path'])))

        def packed():
            x = db.get(self.ctx, 'device', d['id'])
            return x['state'] == states.D_RETURNING and x['shipment_id'] \
                and shipping.shipment_show(self.ctx, x['shipment_id'])
        consignment = self.dep.wait(packed, 60, 'its return consignment')
        self.assertEqual('return', consignment['kind'])
        self.courier_plan(consignment, {'fate': 'lose'})
        self.dep.wait(lambda: db.get(self.ctx, 'device', d['id'])[
            'state'] == states.D_LOST, 90, 'the device LOST')
        self.assertEqual('LOST', shipping.shipment_show(
            self.ctx, consignment['id'])['state'])
        self.assertIn('LOST: the courier lost return consignment %s'
                      % consignment['name'],
                      self.device_messages(d['serial']))
