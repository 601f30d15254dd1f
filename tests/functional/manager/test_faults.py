"""Faults the manager survives, with the real services."""

import json
import os

from lsrp import exception
from lsrp.manager import actions
from lsrp.manager.db import api as db
from lsrp.manager import keys
from lsrp.manager import rpc
from lsrp.manager import states
from tests.functional.manager import base


class TestFaults(base.ManagerTestCase):

    def test_terminal_killed_mid_export(self):
        """kill -9 of the source terminal's agent mid-export.

        The manager notices, starts the operation again when the agent is
        back, the engine resumes from its journal; the result is exact.
        """
        self.dep.start_conductor('conductor-1')
        self.start_terminals()
        specs, writer = self.vm()
        m = self.migrate(specs)
        op = self.wait_op(m, 'export', 'RUNNING')
        agent = self.dep.processes['terminal-site-a']
        agent.kill9()
        self.dep.start_agent('site-a')
        self.wait_state(m, states.READY_FOR_CUTOVER, timeout=240)
        term = db.get(self.ctx, 'terminal', op['terminal'])
        rec = rpc.TerminalAPI(term['rpc_topic']).status(op['id'])
        self.assertEqual(2, rec['attempts'])
        self.assertTrue(any('lost export' in t for t in self.events(m)))
        self.cut_over(m, writer)
        self.assert_converged(m)

    def test_tampered_seal_and_carrier_events(self):
        """A device swapped in transit is caught at delivery.

        TAMPERED, the key destroyed, nothing imported. Duplicate and
        out-of-order carrier events are recorded, ignored or refused.
        """
        self.dep.start_conductor('conductor-1')
        self.start_terminals()
        specs, writer = self.vm()
        m = self.migrate(specs)
        s = self.dep.wait(lambda: actions.shipment_list(self.ctx), 60,
                          'the shipment')[0]
        plan = os.path.join(self.dep.work, 'courier', s['name'] + '.json')
        os.makedirs(os.path.dirname(plan), exist_ok=True)
        with open(plan, 'w') as f:
            json.dump({'tamper_devices': [self.serials[1]]}, f)
        self.wait_state(m, states.FAILED, timeout=180)
        m = db.get(self.ctx, 'migration', m['id'])
        self.assertIn('custody check failed', m['last_error'])
        s = actions.shipment_show(self.ctx, s['id'])
        self.assertEqual('TAMPERED', s['state'])
        self.assertRaises(exception.KeyManagerError, keys.get_store().get,
                          s['key_ref'])
        # Nothing was imported at the destination.
        with self.sites['site-b'].pool('vms') as pool:
            for spec in specs:
                self.assertFalse(pool.image_exists(spec.split('/')[1]))
        # The courier's events again: a duplicate is ignored, an event
        # out of order refused; both recorded.
        again = actions.carrier_event(self.ctx, s['id'], 'deliver', seq=3)
        self.assertTrue(again['ignored'])
        self.assertRaises(exception.InvalidTransition, actions.carrier_event,
                          self.ctx, s['id'], 'hand_over', seq=99)
        texts = [e['message'] for e in actions.events_query(
            self.ctx, resource_id=s['id'])]
        self.assertTrue(any('ignored' in t for t in texts))
        self.assertTrue(any('refused' in t for t in texts))

    def test_kill_conductor_mid_round_then_abort_in_catching_up(self):
        """kill -9 of the conductor holding the catch-up job mid-round.

        Another conductor resumes the round without the terminal running
        it twice, rounds go on; then an abort in CATCHING_UP stops them,
        erases the devices, destroys the key, removes our snapshots and
        leaves the VM's images alone.
        """
        for name in ('conductor-1', 'conductor-2'):
            self.dep.start_conductor(name)
        self.start_terminals()
        specs, writer = self.vm()
        # threshold 0: rounds go on until max_rounds.
        m = self.migrate(specs, threshold_bytes=0, max_rounds=30)
        op = self.wait_op(m, 'catchup_round', 'RUNNING', timeout=240)
        owner = self.owner_of_job(m)
        self.dep.processes[owner].kill9()
        self.dep.wait(lambda: db.get(self.ctx, 'migration', m['id'])[
            'rounds'] >= 3, 120, 'three rounds')
        term = db.get(self.ctx, 'terminal', op['terminal'])
        self.assertEqual(1, rpc.TerminalAPI(term['rpc_topic']).status(
            op['id'])['attempts'])
        self.assertEqual(states.CATCHING_UP, self.state(m))
        actions.migration_abort(self.ctx, m['id'], 'test')
        self.wait_state(m, states.ABORTED, timeout=120)
        s = actions.shipment_list(self.ctx)[0]
        self.assertEqual('ERASED', s['state'])
        self.assertRaises(exception.KeyManagerError, keys.get_store().get,
                          s['key_ref'])
        for d in actions.device_list(self.ctx):
            self.assertEqual('BLANK', d['state'])
            self.assertEqual([], os.listdir(d['path']))
        with self.sites['site-a'].pool('vms') as pool:
            for spec in specs:
                with pool.open_image(spec.split('/')[1]) as img:
                    self.assertEqual([], [x.name for x in
                                          img.list_snapshots()
                                          if x.name.startswith('fedex-')])
