import testtools

from fedex_manager import states
from lsrp import exception


class TestMachines(testtools.TestCase):

    def test_issue_states_present(self):
        for s in ('REQUESTED', 'SNAPSHOTTING', 'EXPORTING', 'CONSOLIDATING',
                  'SEALED', 'IN_TRANSIT', 'DELIVERED', 'IMPORTING',
                  'CATCHING_UP', 'READY_FOR_CUTOVER', 'CUTTING_OVER',
                  'COMPLETED', 'CLEANED', 'FAILED', 'ABORTING', 'ABORTED',
                  'ROLLED_BACK'):
            self.assertIn(s, states.MIGRATION.states)
        for s in ('CREATED', 'LOADING', 'SEALED', 'HANDED_TO_CARRIER',
                  'IN_TRANSIT', 'DELIVERED', 'VERIFIED', 'IMPORTED',
                  'ERASED', 'LOST', 'DAMAGED', 'TAMPERED'):
            self.assertIn(s, states.SHIPMENT.states)
        for s in ('BLANK', 'ASSIGNED', 'WRITTEN', 'SEALED', 'SHIPPED',
                  'RECEIVED', 'VERIFIED', 'ERASED', 'MISSING', 'DAMAGED'):
            self.assertIn(s, states.DEVICE.states)

    def test_every_state_reachable_and_left(self):
        for machine in states.MACHINES.values():
            seen, todo = {machine.initial}, [machine.initial]
            while todo:
                for dst in machine.events(todo.pop()).values():
                    if dst not in seen:
                        seen.add(dst)
                        todo.append(dst)
            self.assertEqual(set(machine.states), seen, machine.kind)
            for s in machine.states:
                if s not in machine.final:
                    self.assertTrue(machine.events(s), (machine.kind, s))

    def test_happy_path(self):
        s = states.REQUESTED
        for event in ('snapshot', 'export', 'consolidate', 'seal', 'ship',
                      'deliver', 'import', 'catch_up', 'converge',
                      'keep_warm', 'cutover', 'complete', 'clean'):
            s = states.MIGRATION.next_state(s, event)
        self.assertEqual(states.CLEANED, s)

    def test_refused_names_both_states(self):
        e = self.assertRaises(exception.InvalidTransition,
                              states.MIGRATION.next_state,
                              states.CUTTING_OVER, 'abort', 'm-1')
        self.assertIn('CUTTING_OVER', str(e))
        self.assertIn('ABORTING', str(e))
        self.assertIn('m-1', str(e))
        e = self.assertRaises(exception.InvalidTransition,
                              states.SHIPMENT.event_to,
                              states.S_CREATED, states.S_DELIVERED, 's-1')
        self.assertIn('from CREATED to DELIVERED', str(e))

    def test_abort_only_before_point_of_no_return(self):
        for s in states.MIGRATION.states:
            allowed = 'abort' in states.MIGRATION.events(s)
            self.assertEqual(s in states.ABORTABLE, allowed, s)
        self.assertNotIn('abort', states.MIGRATION.events(
            states.CUTTING_OVER))

    def test_retry_returns_to_failed_state(self):
        for s in states.WORKING:
            self.assertEqual(states.FAILED,
                             states.MIGRATION.next_state(s, 'fail'))
            self.assertEqual(s, states.MIGRATION.next_state(
                states.FAILED, 'retry_' + s.lower()))


class TestDeviceTripHome(testtools.TestCase):

    def test_erased_devices_go_home_blank_or_are_lost(self):
        d = states.DEVICE
        for start in (states.D_BLANK, states.D_ERASED):
            self.assertEqual(states.D_RETURNING,
                             d.next_state(start, 'return'))
        self.assertEqual(states.D_BLANK, d.next_state(states.D_RETURNING,
                                                      'arrive'))
        self.assertEqual(states.D_LOST, d.next_state(states.D_RETURNING,
                                                     'lose'))
        # Found after all.
        self.assertEqual(states.D_BLANK, d.next_state(states.D_LOST,
                                                      'arrive'))
        for s in (states.D_ASSIGNED, states.D_SEALED, states.D_SHIPPED,
                  states.D_VERIFIED, states.D_RETURNING):
            self.assertRaises(exception.InvalidTransition, d.next_state, s,
                              'return')
        self.assertEqual((states.D_BLANK, states.D_ERASED, states.D_LOST),
                         states.DEVICE_RETIRABLE)
