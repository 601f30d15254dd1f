"""Shipments and the carrier's events that move them.

What an event means for the devices and migrations riding in the
shipment is :mod:`fedex_manager.custody`'s; a shipment is a migration's
seed (kind ``seed``) or wiped devices going home (kind ``return``,
:mod:`fedex_manager.return_trip`).
"""

from fedex_manager.actions import inputs
from fedex_manager import custody
from fedex_manager.db import api as db
from fedex_manager import return_trip
from fedex_manager import states
from lsrp import exception

# The carrier's verbs (fedex-api's schemas accept these and aliases).
CARRIER_EVENTS = ('hand_over', 'depart', 'scan', 'deliver', 'lose',
                  'damage', 'return')


def shipment_list(ctx, filters=None, limit=None, marker=None):
    return db.list_(ctx, 'shipment', filters, inputs.limit(limit), marker)


def shipment_show(ctx, shipment):
    s = db.get(ctx, 'shipment', shipment)
    s['migrations'] = sorted({
        v['migration_id'] for m in db.list_(ctx, 'migration')
        for v in m['volumes'] if v['shipment_id'] == s['id']})
    s['events'] = db.events(ctx, {'resource_id': s['id']})
    return s


def carrier_event(ctx, shipment, event, seq=None, occurred_at=None,
                  location=None, tracking_number=None, details=None,
                  devices_missing=None):
    """Record a carrier's event (manual or a courier plugin).

    ``seq`` (the carrier's event number) makes duplicates harmless: one at
    or below the last seen is recorded and ignored. An event the shipment's
    state does not allow (out of order) is recorded and refused.
    """
    if event not in CARRIER_EVENTS:
        # Courier plugins report through the conductor, not fedex-api.
        inputs.bad('event', '%r; carrier events are %s' % (
            event, ', '.join(CARRIER_EVENTS)))
    s = db.get(ctx, 'shipment', shipment)
    when = db.utcfromiso(occurred_at) if occurred_at else None
    going_home = s.get('kind') == return_trip.RETURN
    if event == 'return' and going_home:
        inputs.bad('event', 'return: %s is a return consignment, on its '
                   'way to the devices\' home already; record deliver, '
                   'lose or damage' % s['name'])
    if event == 'return':
        need = [m['id'] for m in custody.migrations_of(ctx, s['id'])
                if m['state'] not in states.MIGRATION_FINAL]
        if need:
            inputs.bad('event', 'return: shipment %s carries migration(s) '
                       '%s, not aborted; only an aborted migration\'s '
                       'devices go back to the sender'
                       % (s['name'], ', '.join(need)))
    missing = sorted(set(devices_missing or []))
    if event == 'deliver' and len(missing) > s['parity'] and \
            not going_home:
        # More devices missing than parity covers: the data did not come.
        # (A return consignment carries no data: those missing are LOST,
        # the others delivered.)
        event = 'lose'
    if seq is not None and seq <= s['last_carrier_seq']:
        db.add_event(ctx, 'shipment', s['id'], 'custody',
                     'duplicate carrier event %s #%d ignored (last #%d)'
                     % (event, seq, s['last_carrier_seq']),
                     details={'event': event, 'seq': seq, 'ignored': True},
                     occurred_at=when, location=location)
        s['ignored'] = True
        return s
    values = {}
    if seq is not None:
        values['last_carrier_seq'] = seq
    if tracking_number:
        values['tracking_number'] = tracking_number
    try:
        s = db.transition(ctx, 'shipment', s['id'], event, values=values,
                          event_kind='custody', location=location,
                          occurred_at=when,
                          details=dict(details or {}, seq=seq),
                          message='carrier: %s%s' % (
                              event, ' at %s' % location if location
                              else ''))
    except exception.InvalidTransition as e:
        db.add_event(ctx, 'shipment', s['id'], 'custody',
                     'carrier event %s refused: %s' % (event, e),
                     details={'event': event, 'seq': seq,
                              'refused': True},
                     occurred_at=when, location=location)
        raise
    custody.after_carrier_event(ctx, s, event, missing)
    s['ignored'] = False
    return s
