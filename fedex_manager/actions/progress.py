"""A migration as its callers see it: its progress, what it allows now."""

from fedex_manager import states

# Nothing moves any more: no rate, no ETA (the last ones recorded are of a
# catch-up round long over).
_AT_REST = (states.COMPLETED, states.FAILED) + states.MIGRATION_FINAL


def annotate(m):
    """``m`` with its ``progress`` and ``allowed_actions``."""
    total, done = m['bytes_total'] or 0, m['bytes_done'] or 0
    moving = m['state'] not in _AT_REST
    m['progress'] = {
        'bytes_total': total, 'bytes_done': done,
        'percent': round(100.0 * done / total, 1) if total else None,
        'rate': m.get('rate') if moving else None,
        'eta_seconds': m.get('eta_seconds') if moving else None,
        'rounds': m.get('rounds'),
        'last_round_bytes': m.get('last_round_bytes')}
    m['allowed_actions'] = _allowed(m)
    # The wave it belongs to (its shipment group: GET /v1/waves/<id>).
    m['wave'] = (m.get('options') or {}).get('shipment_group')
    return m


# (state, cutover_approved) -> the actions allowed: a list annotates a
# hundred migrations, and the state machine's events are found by a walk
# of all its transitions.
_ALLOWED = {}


def _allowed(m):
    key = (m['state'], bool(m['cutover_approved']))
    if key not in _ALLOWED:
        _ALLOWED[key] = tuple(_allowed_in(*key))
    return list(_ALLOWED[key])


def _allowed_in(state, cutover_approved):
    events = states.MIGRATION.events(state)
    out = []
    if 'abort' in events:
        out.append('abort')
    if any(e.startswith('retry_') for e in events):
        out.append('retry')
    if state == states.READY_FOR_CUTOVER and not cutover_approved:
        out.append('approve_cutover')
    if state in states.MIGRATION_FINAL:
        out.append('delete')
    if state == states.COMPLETED:
        out.append('cleanup')
    if state == states.IN_TRANSIT:
        out += ['reship', 'seed_over_wan']
    return out
