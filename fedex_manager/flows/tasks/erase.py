"""What the cleanup and the abort both undo at the terminals.

:func:`_erase_shipments` erases the devices of a migration's shipments
(those no other migration of its group still needs) and destroys their
keys; :func:`_remove_snapshots` removes its snapshots at a terminal.
"""

from fedex_manager import custody
from fedex_manager.db import api as db
from fedex_manager.flows.tasks import common
from fedex_manager import shipments as shipments_mod
from fedex_manager import states


def _erase_shipments(task_, ctx, m, generation, why):
    """Erase every device of the migration's shipments and their keys."""
    sids = {v['shipment_id'] for v in m['volumes'] if v['shipment_id']}
    sids |= {s['id'] for s in db.list_(ctx, 'shipment')
             if s['name'].startswith('fedex-%s-' % common.short(m['id']))}
    for sid in sorted(sids):
        s = db.get(ctx, 'shipment', sid)
        others = shipments_mod.still_needed(ctx, sid, but=m['id'])
        if others:
            # Erase waits until no migration of the group needs it.
            db.add_event(ctx, 'migration', m['id'], 'custody',
                         'shipment %s kept: migration(s) %s still need it'
                         % (s['name'], ', '.join(x['id'] for x in others)),
                         migration_id=m['id'])
            continue
        devices = db.devices_of(ctx, sid)
        by_terminal = {}
        for d in devices:
            if d['state'] not in (states.D_ERASED, states.D_MISSING,
                                  states.D_SHIPPED) and d['terminal_id']:
                by_terminal.setdefault(d['terminal_id'], []).append(d)
        for terminal_id, devs in sorted(by_terminal.items()):
            task_.op(ctx, m, generation, terminal_id, 'erase',
                     '%s.erase.%s' % (s['name'],
                                      common._terminal(ctx, terminal_id)['name']),
                     {'devices': [d['path'] for d in devs]})
        custody.destroy_key(ctx, s, why)
        for d in devices:
            if 'erase' in states.DEVICE.events(d['state']):
                db.transition(ctx, 'device', d['id'], 'erase',
                              message='erased (%s)' % why)
            d = db.get(ctx, 'device', d['id'])
            if d['state'] == states.D_ERASED and why != 'lost':
                db.transition(ctx, 'device', d['id'], 'reuse', values={
                    'shipment_id': None, 'index_in_set': None})
        s = db.get(ctx, 'shipment', sid)
        if 'erase' in states.SHIPMENT.events(s['state']):
            db.transition(ctx, 'shipment', sid, 'erase',
                          event_kind='custody', message='crypto-erased (%s)'
                          % why)


def _remove_snapshots(task_, ctx, m, generation, terminal_id, images):
    task_.op(ctx, m, generation, terminal_id, 'remove_snapshots',
             '%s.remove_snapshots.%s' % (m['id'], terminal_id),
             {'images': images,
              'prefixes': shipments_mod.snapshot_prefixes(ctx, m)})
