"""Migrations run end to end through fedex-conductor and lsrp-agent on the
sandbox (MariaDB, RabbitMQ, ZooKeeper, two Ceph clusters), with a writer
changing the images, and survive kill -9 of what runs them."""

from fedex_manager.actions import events

from fedex_manager.actions import lifecycle

from fedex_manager.actions import migrations

from fedex_manager.actions import shipping
from fedex_manager.db import api as db
from fedex_manager import states
from tests.functional.manager import base


class TestEndToEnd(base.ManagerTestCase):

    def test_kill_conductor_in_export_and_in_transit(self):
        """kill -9 of conductors in the export and in transit.

        The conductor holding the job dies mid-export: another claims the
        job and finishes the export without starting it again; one dies
        while the shipment travels (parked: it holds nothing); the
        survivors carry the migration through, bit-exact.
        """
        specs, writer, m = self.running(('conductor-1', 'conductor-2'))
        self.wait_op(m, 'export', 'RUNNING')
        owner = self.owner_of_job(m)
        self.assertIn(owner, ('conductor-1', 'conductor-2'))
        self.dep.processes[owner].kill9()
        self.wait_state(m, states.IN_TRANSIT)
        # Parked: whoever is left may die too; a fresh one takes over.
        survivor = ({'conductor-1', 'conductor-2'} - {owner}).pop()
        self.dep.start_conductor('conductor-3')
        self.dep.processes[survivor].kill9()
        self.wait_state(m, states.READY_FOR_CUTOVER)
        # Finished tasks ran once; the export in flight was not restarted.
        for kind in ('snapshot', 'export', 'seal'):
            self.assertEqual([1], list(self.agent_attempts(m, kind).values()),
                             kind)
        snap_op = db.list_(self.ctx, 'operation', {
            'migration_id': m['id'], 'kind': 'snapshot'})[0]
        self.assertEqual(1, snap_op['attempts'])
        shown = migrations.migration_show(self.ctx, m['id'])
        self.assertGreaterEqual(shown['progress']['rounds'], 1)
        self.assertEqual('IMPORTED', shown['shipments'][0]['state'])
        self.cut_over(m, writer)
        self.assert_converged(m)
        lifecycle.migration_cleanup(self.ctx, m['id'])
        self.wait_state(m, states.CLEANED)
        # The cleanup removed our snapshots at both sites.
        self.assert_no_snapshots_of_ours(_images(m, 'source_image'))
        self.assert_no_snapshots_of_ours(_images(m, 'dest_image'),
                                         site='site-b')
        s = shipping.shipment_list(self.ctx)[0]
        self.assertEqual('ERASED', s['state'])
        self.key_destroyed(s)
        texts = [e['message'] for e in events.events_query(
            self.ctx, resource_id=s['id'])]
        self.assertTrue(any('custody check passed' in t for t in texts))

    def test_abort_in_exporting(self):
        specs, writer, m = self.running()
        self.wait_op(m, 'export', 'RUNNING')
        lifecycle.migration_abort(self.ctx, m['id'], 'test')
        self.wait_state(m, states.ABORTED, timeout=120)
        # The VM is untouched: its images are there, without our snapshots.
        self.assert_cleaned_up_after_abort(specs)


def _images(m, key):
    """The migration's images at one site (source_image, dest_image)."""
    return [v[key] for v in m['volumes']]
