"""Migration, shipment and device states as the dashboard shows them.

The names are fedex-api's (fedex_manager/states.py); the dashboard only
needs to know which ones are still moving (their rows are polled) and the
order of the phases for the timeline.
"""

# The phases of a migration in the order it goes through them.
PHASES = ('REQUESTED', 'SNAPSHOTTING', 'EXPORTING', 'CONSOLIDATING', 'SEALED',
          'IN_TRANSIT', 'DELIVERED', 'IMPORTING', 'CATCHING_UP',
          'READY_FOR_CUTOVER', 'CUTTING_OVER', 'COMPLETED', 'CLEANED')
FAILURES = ('FAILED', 'ABORTING', 'ABORTED', 'ROLLED_BACK')
ALL = PHASES + FAILURES

# Stable states: nothing moves until someone acts (or a courier delivers).
# Rows in any other state are polled (Horizon's ajax row update).
STABLE = ('REQUESTED', 'SEALED', 'IN_TRANSIT', 'READY_FOR_CUTOVER',
          'COMPLETED', 'CLEANED', 'FAILED', 'ABORTED', 'ROLLED_BACK')
# For the table's status column: True = fine and settled, False = needs a
# human, None = moving (polled).
STATUS_CHOICES = tuple((s.lower(), s not in ('FAILED', 'ROLLED_BACK'))
                       for s in STABLE)

SHIPMENT_STABLE = ('CREATED', 'SEALED', 'HANDED_TO_CARRIER', 'IN_TRANSIT',
                   'DELIVERED', 'VERIFIED', 'IMPORTED', 'ERASED', 'LOST',
                   'DAMAGED', 'TAMPERED')

# Carrier events a person records by hand (fedex-api's names).
CARRIER_EVENTS = (
    ('handed_to_carrier', 'Handed to carrier'),
    ('in_transit', 'In transit (scan)'),
    ('delivered', 'Delivered'),
    ('lost', 'Lost'),
    ('damaged', 'Damaged'),
)


def phase_timeline(state, events=()):
    """[(phase, status, entered_at)] with status done/current/pending.

    ``events``: the migration's events; a state event (``to_state``) gives
    the time a phase was entered.
    """
    entered = {}
    for e in events:
        if e.get('to_state') and e['to_state'] not in entered:
            entered[e['to_state']] = e.get('occurred_at') or e.get(
                'created_at')
    # A failed migration stopped in the phase recorded as failed_in; other
    # failure states mark the last phase reached.
    current = state
    if state not in PHASES:
        reached = [p for p in PHASES if p in entered]
        current = reached[-1] if reached else PHASES[0]
    index = PHASES.index(current)
    timeline = []
    for i, phase in enumerate(PHASES):
        status = 'done' if i < index else 'current' if i == index else \
            'pending'
        if phase == 'CONSOLIDATING' and phase not in entered and \
                status == 'done':
            status = 'skipped'      # a single device needs no consolidation
        timeline.append((phase, status, entered.get(phase)))
    return timeline
