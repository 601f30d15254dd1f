"""Migrations run end to end through fedex-conductor and lsrp-agent on the
sandbox (MariaDB, RabbitMQ, ZooKeeper, two Ceph clusters), with a writer
changing the images, and survive kill -9 of what runs them."""

import os

from lsrp import exception
from lsrp.manager import actions
from lsrp.manager.db import api as db
from lsrp.manager import keys
from lsrp.manager import rpc
from lsrp.manager import states
from tests.functional.manager import base


class TestEndToEnd(base.ManagerTestCase):

    def agent_attempts(self, m, kind):
        """How many times the terminal really started the operation."""
        op = [o for o in db.list_(self.ctx, 'operation',
                                  {'migration_id': m['id'], 'kind': kind})][0]
        term = db.get(self.ctx, 'terminal', op['terminal'])
        return rpc.TerminalAPI(term['rpc_topic']).status(op['id'])['attempts']

    def test_kill_conductor_in_export_and_in_transit(self):
        """kill -9 of conductors in the export and in transit.

        The conductor holding the job dies mid-export: another claims the
        job and finishes the export without starting it again; one dies
        while the shipment travels (parked: it holds nothing); the
        survivors carry the migration through, bit-exact.
        """
        for name in ('conductor-1', 'conductor-2'):
            self.dep.start_conductor(name)
        self.start_terminals()
        specs, writer = self.vm()
        m = self.migrate(specs)
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
            self.assertEqual(1, self.agent_attempts(m, kind), kind)
        snap_op = db.list_(self.ctx, 'operation', {
            'migration_id': m['id'], 'kind': 'snapshot'})[0]
        self.assertEqual(1, snap_op['attempts'])
        shown = actions.migration_show(self.ctx, m['id'])
        self.assertGreaterEqual(shown['progress']['rounds'], 1)
        self.assertEqual('IMPORTED', shown['shipments'][0]['state'])
        self.cut_over(m, writer)
        self.assert_converged(m)
        m = self.wait_state(m, states.CLEANED) and m
        s = actions.shipment_list(self.ctx)[0]
        self.assertEqual('ERASED', s['state'])
        self.assertRaises(exception.KeyManagerError, keys.get_store().get,
                          s['key_ref'])
        texts = [e['message'] for e in actions.events_query(
            self.ctx, resource_id=s['id'])]
        self.assertTrue(any('custody check passed' in t for t in texts))

    def test_abort_in_exporting(self):
        self.dep.start_conductor('conductor-1')
        self.start_terminals()
        specs, writer = self.vm()
        m = self.migrate(specs)
        self.wait_op(m, 'export', 'RUNNING')
        actions.migration_abort(self.ctx, m['id'], 'test')
        self.wait_state(m, states.ABORTED, timeout=120)
        s = actions.shipment_list(self.ctx)[0]
        self.assertEqual('ERASED', s['state'])
        self.assertRaises(exception.KeyManagerError, keys.get_store().get,
                          s['key_ref'])
        for d in actions.device_list(self.ctx):
            self.assertEqual('BLANK', d['state'])
            self.assertEqual([], os.listdir(d['path']))
        # The VM is untouched: its images are there, without our snapshots.
        with self.sites['site-a'].pool('vms') as pool:
            for spec in specs:
                with pool.open_image(spec.split('/')[1]) as img:
                    names = [x.name for x in img.list_snapshots()]
                    self.assertEqual([], [n for n in names
                                          if n.startswith('fedex-')])
