"""Shipments on the sandbox: several migrations in one, one migration in
several, devices back from an aborted trip, a lost shipment seeded over
the WAN. Real Ceph, MariaDB, RabbitMQ, ZooKeeper, conductor and agents;
every migration ends bit-exact (``rbd export | sha256sum`` on both
sites)."""

import os

from fedex_manager.actions import devices as device_actions

from fedex_manager.actions import lifecycle

from fedex_manager.actions import migrations as migration_actions

from fedex_manager.actions import shipping
from fedex_manager.db import api as db
from fedex_manager import states
from fedex_sandbox import demo
from tests.functional.manager import base

MiB = base.MiB


class TestShipments(base.ManagerTestCase):

    def clone(self, spec):
        """A copy of image ``spec`` at site-a (a clone of a golden image)."""
        pool, name = self.new_image(32 * MiB)
        self.addCleanup(self._remove_image, 'site-b', 'vms', name)
        with self.sites['site-a'].pool('vms') as src, \
                src.open_image(spec.split('/')[1]) as img, \
                pool.open_image(name) as copy:
            for off in range(0, img.size(), 4 * MiB):
                copy.write(off, img.read(off, 4 * MiB))
        return 'vms/%s' % name

    def group_of_three(self, vms):
        """Migrate ``vms`` as one shipment; wait for the group's export.

        Returns the migrations leader first (the member whose export op it
        is: the first one prepared, not necessarily the first one asked
        for), and ``vms`` in the same order.
        """
        made = migration_actions.migrations_create(self.ctx, [
            self.request(specs, 'vm%d-%s' % (i, self.id_))
            for i, (specs, _) in enumerate(vms)], one_shipment=True)
        index = {m['id']: i for i, m in enumerate(made)}

        def group_export():
            return [op for op in db.list_(self.ctx, 'operation',
                                          {'kind': 'export'})
                    if op['migration_id'] in index]
        ops = self.dep.wait(group_export, 180, 'the group\'s export',
                            interval=0.1)
        lead = index[ops[0]['migration_id']]
        order = [lead] + [i for i in range(len(made)) if i != lead]
        return [made[i] for i in order], [vms[i] for i in order]

    def test_two_migrations_in_one_shipment(self):
        """A flock of two clones: one shipment, one export, both exact.

        The clones' common chunks are on the devices once.
        """
        self.dep.conductor_options = {'shipment_group_window': 0}
        self.dep.start_conductor('conductor-1')
        self.start_terminals(devices=3)
        specs1, writer1 = self.vm((32 * MiB,))
        writer1.pause()
        specs2 = [self.clone(specs1[0])]
        writer2 = demo.Writer(self.sites['site-a'], specs2, 256 << 10)

        def stop():
            writer2.stopped.set()
            writer2.resume()
            writer2.join()
        m1, m2 = migration_actions.migrations_create(self.ctx, [
            self.request(specs1, 'vm1-%s' % self.id_),
            self.request(specs2, 'vm2-%s' % self.id_)], one_shipment=True)
        for m in (m1, m2):
            self.wait_state(m, (states.IN_TRANSIT, states.DELIVERED,
                                states.IMPORTING, states.CATCHING_UP,
                                states.READY_FOR_CUTOVER), timeout=300)
        writer1.resume()
        writer2.start()
        self.addCleanup(stop)
        for m in (m1, m2):
            self.wait_state(m, states.READY_FOR_CUTOVER, timeout=300)
        # vm() wrote 4 MiB of random data: once on the devices (+ parity
        # for one of three devices: x1.5), not twice (12 MiB).
        on_devices = sum(
            os.path.getsize(os.path.join(d, f))
            for slot in os.listdir(self.dep.slots_dir('site-b'))
            for d, _, files in os.walk(os.path.join(
                self.dep.slots_dir('site-b'), slot)) for f in files)
        self.assertLess(on_devices, 9 * MiB)
        sids = {v['shipment_id'] for m in (m1, m2)
                for v in db.get(self.ctx, 'migration', m['id'])['volumes']}
        self.assertEqual(1, len(sids))
        s = shipping.shipment_show(self.ctx, sids.pop())
        self.assertEqual(sorted([m1['id'], m2['id']]), s['migrations'])
        self.assertEqual('IMPORTED', s['state'])
        # One export and one import for both.
        ops = db.list_(self.ctx, 'operation')
        for kind in ('snapshot', 'export', 'seal', 'verify', 'import'):
            self.assertEqual(1, len([o for o in ops if o['kind'] == kind]),
                             kind)
        for m, writer in ((m1, writer1), (m2, writer2)):
            self.cut_over(m, writer)
            self.assert_converged(m)
        lifecycle.migration_cleanup(self.ctx, m1['id'])
        self.wait_state(m1, states.CLEANED)
        lifecycle.migration_cleanup(self.ctx, m2['id'])
        self.wait_state(m2, states.CLEANED)
        self.assertEqual('ERASED', shipping.shipment_show(
            self.ctx, s['id'])['state'])
        self.key_destroyed(s)
        self.assert_no_snapshots_of_ours(specs1 + specs2)

    def test_abort_one_of_a_group_while_packed(self):
        """One of three aborted during the group's export: the others go on.

        Its images do not travel (left out, or the shipment that had them
        is dropped and the others packed again), its snapshots are gone,
        nothing of it reaches site-b; the others end bit-exact.
        """
        self.dep.conductor_options = {'shipment_group_window': 0}
        self.dep.start_conductor('conductor-1')
        self.start_terminals(devices=6)
        vms = [self.vm((32 * MiB,)) for _ in range(3)]
        # The group's export has begun (running, or even done): abort one
        # that does not lead it (a leader aborted is another test).
        (lead, gone, other), vms = self.group_of_three(vms)
        lifecycle.migration_abort(self.ctx, gone['id'], 'test')
        self.assertNotEqual(states.SEALED, self.state(lead))
        self.wait_state(gone, states.ABORTED, timeout=180)
        for m in (lead, other):
            self.wait_state(m, states.READY_FOR_CUTOVER, timeout=400)
        gone_images = set(vms[1][0])
        for sid in {v['shipment_id'] for m in (lead, other) for v in
                    db.get(self.ctx, 'migration', m['id'])['volumes']}:
            s = shipping.shipment_show(self.ctx, sid)
            self.assertEqual('IMPORTED', s['state'])
            self.assertEqual(sorted([lead['id'], other['id']]),
                             s['migrations'])
        said = [e['message'] for e in db.events(self.ctx)]
        self.assertTrue(any(
            ('left out of shipment' in x or 'dropped' in x) and
            vms[1][0][0] in x for x in said), said)
        # Nothing of the aborted one at site-b, no snapshot at site-a.
        with self.sites['site-b'].pool('vms') as pool:
            for spec in gone_images:
                self.assertFalse(pool.image_exists(spec.split('/')[1]))
        self.assert_no_snapshots_of_ours(vms[1][0])
        for m, (specs, writer) in ((lead, vms[0]), (other, vms[2])):
            self.cut_over(m, writer)
            self.assert_converged(m)

    def test_abort_the_leader_of_a_group_while_packed(self):
        """The group's leader aborted during its export: the others go on.

        The next member takes over the group's work (the shipment the
        leader began is dropped and the others packed again, or left
        without the leader's images); nothing of the leader reaches
        site-b, its snapshots are gone; the others end bit-exact.
        """
        self.dep.conductor_options = {'shipment_group_window': 0}
        self.dep.start_conductor('conductor-1')
        self.start_terminals(devices=6)
        vms = [self.vm((32 * MiB,)) for _ in range(3)]
        (lead, second, third), vms = self.group_of_three(vms)
        lifecycle.migration_abort(self.ctx, lead['id'], 'test')
        self.wait_state(lead, states.ABORTED, timeout=180)
        for m in (second, third):
            self.wait_state(m, states.READY_FOR_CUTOVER, timeout=400)
        for sid in {v['shipment_id'] for m in (second, third) for v in
                    db.get(self.ctx, 'migration', m['id'])['volumes']}:
            s = shipping.shipment_show(self.ctx, sid)
            self.assertEqual('IMPORTED', s['state'])
            self.assertEqual(sorted([second['id'], third['id']]),
                             s['migrations'])
        with self.sites['site-b'].pool('vms') as pool:
            for spec in vms[0][0]:
                self.assertFalse(pool.image_exists(spec.split('/')[1]))
        self.assert_no_snapshots_of_ours(vms[0][0])
        for m, (specs, writer) in ((second, vms[1]), (third, vms[2])):
            self.cut_over(m, writer)
            self.assert_converged(m)

    def test_images_span_two_shipments(self):
        """Devices of 40 MiB: 64 + 32 MiB of images need two sets."""
        self.dep.agent_options = {'device_capacity_mib': 40}
        self.dep.start_conductor('conductor-1')
        self.start_terminals(devices=6)
        specs, writer = self.vm((64 * MiB, 32 * MiB))
        m = self.migrate(specs)
        self.wait_state(m, states.READY_FOR_CUTOVER, timeout=300)
        m = db.get(self.ctx, 'migration', m['id'])
        sids = {v['source_image']: v['shipment_id'] for v in m['volumes']}
        self.assertEqual(2, len(set(sids.values())), sids)
        for sid in set(sids.values()):
            self.assertEqual('IMPORTED', shipping.shipment_show(
                self.ctx, sid)['state'])
        self.cut_over(m, writer)
        self.assert_converged(m)

    def test_abort_in_transit_devices_come_back_blank(self):
        """Aborted while travelling: back, the devices are wiped, BLANK."""
        self.dep.start_conductor('conductor-1')
        self.start_terminals(devices=3)
        specs, writer = self.vm((32 * MiB,))
        m = self.migrate(specs)
        s = self.wait_shipment(m)
        self.courier_plan(s, {'timetable': {'hand_over': 0, 'depart': 1,
                                            'deliver': 25}})
        self.wait_state(m, states.IN_TRANSIT)
        lifecycle.migration_abort(self.ctx, m['id'], 'test')
        self.wait_state(m, states.ABORTED, timeout=120)
        self.key_destroyed(s)
        self.assertIn(shipping.shipment_show(self.ctx, s['id'])['state'],
                      ('HANDED_TO_CARRIER', 'IN_TRANSIT'))
        # Delivered later; the destination terminal wipes them.
        self.dep.wait(lambda: shipping.shipment_show(
            self.ctx, s['id'])['state'] == 'ERASED', 300,
            'the shipment ERASED after its return')
        devices = device_actions.device_list(self.ctx)
        self.assertEqual(3, len(devices))
        b = db.get(self.ctx, 'terminal', m['dest_terminal_id'])
        for d in devices:
            self.assertEqual('BLANK', d['state'])
            self.assertEqual(b['id'], d['terminal_id'])
            self.assertEqual([], os.listdir(d['path']))
        self.assert_no_snapshots_of_ours(specs)

    def test_abort_in_transit_devices_returned_to_the_source(self):
        """Aborted on the road and sent back: wiped at the source, BLANK."""
        self.dep.start_conductor('conductor-1')
        self.start_terminals(devices=3)
        specs, writer = self.vm((32 * MiB,))
        m = self.migrate(specs)
        s = self.wait_shipment(m)
        self.courier_plan(s, {'fate': 'return', 'timetable': {
            'hand_over': 0, 'depart': 1, 'deliver': 25}})
        self.wait_state(m, states.IN_TRANSIT)
        lifecycle.migration_abort(self.ctx, m['id'], 'test')
        self.wait_state(m, states.ABORTED, timeout=120)
        self.key_destroyed(s)
        self.dep.wait(lambda: shipping.shipment_show(
            self.ctx, s['id'])['state'] == 'ERASED', 120,
            'the shipment ERASED after its return to the sender')
        a = db.get(self.ctx, 'terminal', m['source_terminal_id'])
        devices = device_actions.device_list(self.ctx)
        self.assertEqual(3, len(devices))
        for d in devices:
            self.assertEqual('BLANK', d['state'])
            self.assertEqual(a['id'], d['terminal_id'])
            self.assertEqual([], os.listdir(d['path']))
        said = [e['message'] for e in db.events(self.ctx)]
        self.assertIn('carrier: return', ' '.join(said))
        self.assertTrue(any('wiped at %s' % a['name'] in x for x in said),
                        said)
        self.assert_no_snapshots_of_ours(specs)

    def test_lost_shipment_seeded_over_the_wan(self):
        """LOST (two devices): seed over the WAN, catch up, exact."""
        self.dep.start_conductor('conductor-1')
        self.start_terminals(devices=3)
        specs, writer = self.vm((48 * MiB, 16 * MiB))
        m = self.migrate(specs)
        s = self.wait_shipment(m)
        self.courier_plan(s, {'lose_devices': self.serials[:2]})
        self.wait_shipment(m, 'LOST')
        self.dep.wait(lambda: any('re-ship' in t for t in self.events(m)),
                      30, 'the event telling to re-ship')
        lifecycle.migration_reship(self.ctx, m['id'], seed_over_wan=True)
        self.wait_state(m, states.READY_FOR_CUTOVER, timeout=300)
        seeded = db.list_(self.ctx, 'operation', {
            'migration_id': m['id'], 'kind': 'seed_over_wan'})
        self.assertEqual(1, len(seeded))
        self.assertEqual('DONE', seeded[0]['state'])
        self.assertGreater(seeded[0]['result']['wire_bytes'], 0)
        self.cut_over(m, writer)
        self.assert_converged(m)
