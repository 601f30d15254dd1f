"""The three state machines of the manager, as data, run by ``automaton``.

Modelled on ironic's ``common/states.py``: the row in the database is the
truth; a machine is a validator built once from the tables below and
re-initialised at the row's state for every event. An impossible event is
refused with :class:`lsrp.exception.InvalidTransition`, naming both states.

``tools/states_to_dot.py`` draws each machine into ``doc/source/images``.
"""

from automaton import exceptions as automaton_exc
from automaton import machines as automaton_machines

from lsrp import exception

# --- Migration: the data's journey --------------------------------------------
REQUESTED = 'REQUESTED'
SNAPSHOTTING = 'SNAPSHOTTING'
EXPORTING = 'EXPORTING'
CONSOLIDATING = 'CONSOLIDATING'
SEALED = 'SEALED'
IN_TRANSIT = 'IN_TRANSIT'
DELIVERED = 'DELIVERED'
IMPORTING = 'IMPORTING'
CATCHING_UP = 'CATCHING_UP'
READY_FOR_CUTOVER = 'READY_FOR_CUTOVER'
CUTTING_OVER = 'CUTTING_OVER'
COMPLETED = 'COMPLETED'
CLEANED = 'CLEANED'
FAILED = 'FAILED'
ABORTING = 'ABORTING'
ABORTED = 'ABORTED'
ROLLED_BACK = 'ROLLED_BACK'

# States a migration may be aborted from: everything before the cutover
# starts (the point of no return) and the retryable/rolled-back ones.
ABORTABLE = (REQUESTED, SNAPSHOTTING, EXPORTING, CONSOLIDATING, SEALED,
             IN_TRANSIT, DELIVERED, IMPORTING, CATCHING_UP,
             READY_FOR_CUTOVER, FAILED, ROLLED_BACK)
# States whose work a flow is doing; a failure there goes to FAILED and a
# retry comes back to the same state (the flow's tasks are idempotent).
WORKING = (SNAPSHOTTING, EXPORTING, CONSOLIDATING, DELIVERED, IMPORTING,
           CATCHING_UP, ABORTING, COMPLETED)

MIGRATION_TRANSITIONS = [
    # (from, event, to)
    (REQUESTED, 'snapshot', SNAPSHOTTING),
    (SNAPSHOTTING, 'export', EXPORTING),
    (EXPORTING, 'consolidate', CONSOLIDATING),
    (EXPORTING, 'seal', SEALED),
    (CONSOLIDATING, 'seal', SEALED),
    (SEALED, 'ship', IN_TRANSIT),
    (IN_TRANSIT, 'deliver', DELIVERED),
    # A lost, damaged or tampered shipment: re-ship from the same base
    # snapshot (export again), or seed over the WAN instead.
    (IN_TRANSIT, 'reship', EXPORTING),
    (IN_TRANSIT, 'seed_over_wan', CATCHING_UP),
    (DELIVERED, 'import', IMPORTING),
    (IMPORTING, 'catch_up', CATCHING_UP),
    (CATCHING_UP, 'converge', READY_FOR_CUTOVER),
    # Rounds go on at an interval while waiting for the cutover.
    (READY_FOR_CUTOVER, 'keep_warm', READY_FOR_CUTOVER),
    (READY_FOR_CUTOVER, 'cutover', CUTTING_OVER),
    (CUTTING_OVER, 'complete', COMPLETED),
    (CUTTING_OVER, 'rollback', ROLLED_BACK),
    (ROLLED_BACK, 'catch_up', CATCHING_UP),
    (ROLLED_BACK, 'cutover', CUTTING_OVER),
    (COMPLETED, 'clean', CLEANED),
    (ABORTING, 'aborted', ABORTED),
]
MIGRATION_TRANSITIONS += [(s, 'abort', ABORTING) for s in ABORTABLE]
MIGRATION_TRANSITIONS += [(s, 'fail', FAILED) for s in WORKING]
MIGRATION_TRANSITIONS += [(FAILED, 'retry_' + s.lower(), s) for s in WORKING]

MIGRATION_STABLE = (REQUESTED, SEALED, IN_TRANSIT, READY_FOR_CUTOVER,
                    COMPLETED, CLEANED, FAILED, ABORTED, ROLLED_BACK)
MIGRATION_FINAL = (CLEANED, ABORTED)

# --- Shipment: physical custody ------------------------------------------------
S_CREATED = 'CREATED'
S_LOADING = 'LOADING'
S_SEALED = 'SEALED'
S_HANDED_TO_CARRIER = 'HANDED_TO_CARRIER'
S_IN_TRANSIT = 'IN_TRANSIT'
S_DELIVERED = 'DELIVERED'
S_VERIFIED = 'VERIFIED'
S_IMPORTED = 'IMPORTED'
S_ERASED = 'ERASED'
S_LOST = 'LOST'
S_DAMAGED = 'DAMAGED'
S_TAMPERED = 'TAMPERED'

SHIPMENT_TRANSITIONS = [
    (S_CREATED, 'load', S_LOADING),
    (S_LOADING, 'seal', S_SEALED),
    (S_SEALED, 'hand_over', S_HANDED_TO_CARRIER),
    (S_HANDED_TO_CARRIER, 'depart', S_IN_TRANSIT),
    (S_IN_TRANSIT, 'scan', S_IN_TRANSIT),
    (S_HANDED_TO_CARRIER, 'deliver', S_DELIVERED),
    (S_IN_TRANSIT, 'deliver', S_DELIVERED),
    # Returned to the sender (its migrations were aborted on the road):
    # delivered back, at the source terminal.
    (S_HANDED_TO_CARRIER, 'return', S_DELIVERED),
    (S_IN_TRANSIT, 'return', S_DELIVERED),
    (S_DELIVERED, 'verify', S_VERIFIED),
    (S_DELIVERED, 'tamper', S_TAMPERED),
    (S_VERIFIED, 'import', S_IMPORTED),
    (S_IMPORTED, 'erase', S_ERASED),
    (S_HANDED_TO_CARRIER, 'lose', S_LOST),
    (S_IN_TRANSIT, 'lose', S_LOST),
    (S_HANDED_TO_CARRIER, 'damage', S_DAMAGED),
    (S_IN_TRANSIT, 'damage', S_DAMAGED),
    (S_DELIVERED, 'damage', S_DAMAGED),
    # Abort, loss, damage, tampering: the key is destroyed (crypto-erase).
    (S_CREATED, 'erase', S_ERASED),
    (S_LOADING, 'erase', S_ERASED),
    (S_SEALED, 'erase', S_ERASED),
    (S_DELIVERED, 'erase', S_ERASED),
    (S_VERIFIED, 'erase', S_ERASED),
    (S_LOST, 'erase', S_ERASED),
    (S_DAMAGED, 'erase', S_ERASED),
    (S_TAMPERED, 'erase', S_ERASED),
]
SHIPMENT_STABLE = (S_CREATED, S_SEALED, S_IN_TRANSIT, S_DELIVERED,
                   S_IMPORTED, S_ERASED, S_LOST, S_DAMAGED, S_TAMPERED)
SHIPMENT_FINAL = (S_ERASED,)

# --- Device: one disk in a shipment -----------------------------------------
D_BLANK = 'BLANK'
D_ASSIGNED = 'ASSIGNED'
D_WRITTEN = 'WRITTEN'
D_SEALED = 'SEALED'
D_SHIPPED = 'SHIPPED'
D_RECEIVED = 'RECEIVED'
D_VERIFIED = 'VERIFIED'
D_ERASED = 'ERASED'
D_MISSING = 'MISSING'
D_DAMAGED = 'DAMAGED'
# The trip home (a return consignment): wiped, on the road, not back.
D_RETURNING = 'RETURNING'
D_LOST = 'LOST'

DEVICE_TRANSITIONS = [
    (D_BLANK, 'assign', D_ASSIGNED),
    (D_ASSIGNED, 'write', D_WRITTEN),
    (D_WRITTEN, 'write', D_WRITTEN),         # consolidate appends
    (D_WRITTEN, 'seal', D_SEALED),
    (D_SEALED, 'ship', D_SHIPPED),
    (D_SHIPPED, 'receive', D_RECEIVED),
    (D_RECEIVED, 'verify', D_VERIFIED),
    (D_SHIPPED, 'lose', D_MISSING),
    (D_SHIPPED, 'damage', D_DAMAGED),
    (D_RECEIVED, 'damage', D_DAMAGED),
    (D_MISSING, 'receive', D_RECEIVED),      # turned up late
    (D_ERASED, 'reuse', D_BLANK),
    # Home again (fedex_manager.return_trip): a wiped device away from its
    # home terminal is handed to the courier; it is BLANK again once
    # plugged in there. One that does not come back (the courier's 'lose',
    # or overdue) is LOST; if it turns up after all, it arrives.
    (D_BLANK, 'return', D_RETURNING),
    (D_ERASED, 'return', D_RETURNING),
    (D_RETURNING, 'arrive', D_BLANK),
    (D_RETURNING, 'lose', D_LOST),
    (D_LOST, 'arrive', D_BLANK),
]
DEVICE_TRANSITIONS += [(s, 'erase', D_ERASED) for s in (
    D_ASSIGNED, D_WRITTEN, D_SEALED, D_RECEIVED, D_VERIFIED, D_MISSING,
    D_DAMAGED)]
DEVICE_STABLE = (D_BLANK, D_SEALED, D_SHIPPED, D_VERIFIED, D_ERASED,
                 D_MISSING, D_DAMAGED, D_RETURNING, D_LOST)
# What an operator may retire (DELETE /v1/devices/{id}): holds no data of
# anyone's and is in no shipment on the road.
DEVICE_RETIRABLE = (D_BLANK, D_ERASED, D_LOST)
DEVICE_FINAL = ()


class Machine(object):
    """One state machine: a table of (from, event, to) run by automaton."""

    def __init__(self, kind, initial, transitions, stable, final):
        self.kind = kind
        self.initial = initial
        self.transitions = list(transitions)
        self.stable = tuple(stable)
        self.final = tuple(final)
        self.fsm = automaton_machines.FiniteMachine()
        states = []
        for src, _, dst in self.transitions:
            for s in (src, dst):
                if s not in states:
                    states.append(s)
        self.states = tuple(states)
        for s in states:
            self.fsm.add_state(s, terminal=s in self.final)
        for src, event, dst in self.transitions:
            self.fsm.add_transition(src, dst, event)
        self.fsm.default_start_state = initial
        self.fsm.freeze()

    def events(self, state):
        """The events allowed in ``state``: {event: next state}."""
        return {e: d for s, e, d in self.transitions if s == state}

    def next_state(self, current, event, ident='?'):
        """The state ``event`` leads to from ``current``, or an error."""
        fsm = self.fsm.copy()
        try:
            fsm.initialize(start_state=current)
            fsm.process_event(event)
        except automaton_exc.NotFound:
            allowed = sorted(self.events(current))
            target = self._target_of(event)
            raise exception.InvalidTransition(
                kind=self.kind, id=ident, current=current, target=target,
                reason='event %r not allowed in %s; allowed: %s' % (
                    event, current, ', '.join(allowed) or 'none'))
        return fsm.current_state

    def event_to(self, current, target, ident='?'):
        """The event that moves ``current`` to ``target``, or an error."""
        for s, e, d in self.transitions:
            if s == current and d == target:
                return e
        raise exception.InvalidTransition(
            kind=self.kind, id=ident, current=current, target=target,
            reason='no such transition; from %s one may go to %s' % (
                current, ', '.join(sorted(set(
                    self.events(current).values()))) or 'nowhere'))

    def _target_of(self, event):
        targets = sorted({d for _, e, d in self.transitions if e == event})
        return '/'.join(targets) if targets else '(unknown event %r)' % event


MIGRATION = Machine('migration', REQUESTED, MIGRATION_TRANSITIONS,
                    MIGRATION_STABLE, MIGRATION_FINAL)
SHIPMENT = Machine('shipment', S_CREATED, SHIPMENT_TRANSITIONS,
                   SHIPMENT_STABLE, SHIPMENT_FINAL)
DEVICE = Machine('device', D_BLANK, DEVICE_TRANSITIONS, DEVICE_STABLE,
                 DEVICE_FINAL)
MACHINES = {'migration': MIGRATION, 'shipment': SHIPMENT, 'device': DEVICE}
