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


def _allowed(m):
    events = states.MIGRATION.events(m['state'])
    out = []
    if 'abort' in events:
        out.append('abort')
    if any(e.startswith('retry_') for e in events):
        out.append('retry')
    if m['state'] == states.READY_FOR_CUTOVER and not m['cutover_approved']:
        out.append('approve_cutover')
    if m['state'] in states.MIGRATION_FINAL:
        out.append('delete')
    if m['state'] == states.COMPLETED:
        out.append('cleanup')
    if m['state'] == states.IN_TRANSIT:
        out += ['reship', 'seed_over_wan']
    return out
