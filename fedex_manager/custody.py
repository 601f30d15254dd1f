"""What a shipment's custody events mean for its devices and migrations.

The carrier moves the shipment; this moves what rides in it: devices go
SHIPPED/MISSING, migrations go IN_TRANSIT/DELIVERED, a delivery posts the
receive phase, a loss destroys the key. The custody check itself (serials
and seal digest against the manifest) runs at the destination terminal in
the receive flow (:mod:`fedex_manager.flows.tasks.receive`). A return
consignment's events (wiped devices going home) are
:mod:`fedex_manager.return_trip`'s.
"""

from oslo_config import cfg
from oslo_log import log as logging

from fedex_manager.db import api as db
from fedex_manager import jobs
from fedex_manager import keys
from fedex_manager import return_trip
from fedex_manager import rpc
from fedex_manager import states
from lsrp import exception

CONF = cfg.CONF
LOG = logging.getLogger(__name__)


def migrations_of(ctx, shipment_id):
    """Migrations with at least one image in the shipment."""
    out = []
    for m in db.list_(ctx, 'migration'):
        if any(v['shipment_id'] == shipment_id for v in m['volumes']):
            out.append(m)
    return out


def _device_event(ctx, device, event):
    try:
        db.transition(ctx, 'device', device['id'], event)
    except exception.InvalidTransition as e:
        # Already there (a re-delivered event): recorded, harmless.
        LOG.info('%s', e)


def destroy_key(ctx, shipment, why):
    if not shipment.get('key_ref'):
        return
    keys.get_store().delete(shipment['key_ref'])
    db.add_event(ctx, 'shipment', shipment['id'], 'custody',
                 'key %s destroyed (%s): the devices are unreadable'
                 % (shipment['key_ref'], why))


def after_carrier_event(ctx, shipment, event, devices_missing):
    if shipment.get('kind') == return_trip.RETURN:
        # Wiped devices going home: no migration, no key.
        return_trip.after_carrier_event(ctx, shipment, event,
                                        devices_missing)
        return
    devices = db.devices_of(ctx, shipment['id'])
    if event == 'hand_over':
        for d in devices:
            _device_event(ctx, d, 'ship')
        for m in migrations_of(ctx, shipment['id']):
            if m['state'] == states.SEALED:
                db.transition(ctx, 'migration', m['id'], 'ship',
                              message='shipment %s handed to %s'
                              % (shipment['name'], shipment['carrier']))
    elif event == 'deliver':
        for d in devices:
            if d['serial'] in devices_missing:
                _device_event(ctx, d, 'lose')
        for m in migrations_of(ctx, shipment['id']):
            ships = {v['shipment_id'] for v in m['volumes']}
            delivered = all(db.get(ctx, 'shipment', s)['state'] in (
                states.S_DELIVERED, states.S_VERIFIED, states.S_IMPORTED)
                for s in ships if s)
            if m['state'] == states.IN_TRANSIT and delivered:
                db.transition(ctx, 'migration', m['id'], 'deliver')
                jobs.post(ctx, m['id'], 'receive')
    elif event == 'return':
        for m in migrations_of(ctx, shipment['id']):
            db.add_event(ctx, 'migration', m['id'], 'custody',
                         'shipment %s returned to the sender: its devices '
                         'are wiped once plugged in at the source terminal'
                         % shipment['name'], migration_id=m['id'])
    elif event in ('lose', 'damage'):
        for d in devices:
            if event == 'lose' and (not devices_missing or
                                    d['serial'] in devices_missing):
                _device_event(ctx, d, 'lose')
            elif event == 'damage':
                _device_event(ctx, d, 'damage')
        if event == 'lose':
            destroy_key(ctx, shipment, 'shipment lost')
        for m in migrations_of(ctx, shipment['id']):
            db.add_event(ctx, 'migration', m['id'], 'error',
                         'shipment %s is %s: re-ship from the same base '
                         'snapshot or seed over the WAN'
                         % (shipment['name'], 'lost' if event == 'lose'
                            else 'damaged'), migration_id=m['id'])


def _returned_to(ctx, s):
    """The terminal a delivered shipment's devices are wiped at.

    The source terminal if the carrier returned it to the sender.
    """
    said = db.events(ctx, {'resource_id': s['id'], 'kind': 'custody'})
    if any(e['to_state'] == states.S_DELIVERED and
           e['message'].startswith('carrier: return') for e in said):
        return s['source_terminal_id']
    return s['dest_terminal_id']


def _ask_again(ctx, term, op):
    """The erase's state from its terminal, when no word came for a while.

    The agent's "finished" cast can be lost (the flows' ``run_op`` asks too): a
    shipment wiped at the terminal stayed DELIVERED for ever (CI,
    2026-11-25). Asked after ``[conductor] op_timeout`` seconds of quiet;
    an erase the agent lost is started again (it is idempotent). Returns
    the operation row, None when it was started again.
    """
    quiet = (db.now() - db.utcfromiso(op['updated_at'])).total_seconds()
    if quiet < CONF.conductor.op_timeout:
        return op
    try:
        rec = rpc.TerminalAPI(term['rpc_topic']).status(op['id'])
    except Exception as e:
        LOG.warning('%s: terminal %s does not answer: %s', op['id'],
                    term['name'], e)
        return op
    if rec.get('state') in ('UNKNOWN', 'INTERRUPTED'):
        db.operation_report(ctx, op['id'], state='ERROR',
                            error='terminal %s lost it (%s)' % (
                                term['name'], rec['state']))
        return None     # started again by the next sweep
    return db.operation_take_status(ctx, op['id'], rec)


def wipe_returned(ctx):
    """Devices of an aborted migration's shipment, back from the road.

    An abort while the shipment travels destroys its key (the devices are
    unreadable) but cannot wipe devices it does not have. When the carrier
    delivers them (or returns them to the sender: carrier event
    ``return``) and the terminal there has them all plugged in, they are
    wiped there and go BLANK; the shipment goes ERASED. Run by the
    conductor's sweeper: it starts the erase (an idempotent operation) and
    ends it at a later sweep, holding nothing in between.
    """
    for s in db.list_(ctx, 'shipment', {'state': states.S_DELIVERED,
                                        'kind': return_trip.SEED}):
        if any(m['state'] not in states.MIGRATION_FINAL
               for m in migrations_of(ctx, s['id'])):
            continue
        devices = [d for d in db.devices_of(ctx, s['id'])
                   if d['state'] in (states.D_SHIPPED, states.D_RECEIVED,
                                     states.D_VERIFIED)]
        where = _returned_to(ctx, s)
        if any(d['terminal_id'] != where or not d['path']
               for d in devices):
            continue    # not all plugged in there yet
        term = db.get(ctx, 'terminal', where)
        op_id = '%s.erase.%s' % (s['name'], term['name'])
        try:
            op = db.get(ctx, 'operation', op_id)
        except exception.NotFound:
            op = None
        if op is None or op['state'] == 'ERROR':
            db.operation_start(ctx, op_id, None, term['name'], 'erase')
            db.add_event(ctx, 'shipment', s['id'], 'custody',
                         'back from the road after its migrations were '
                         'aborted: wiping %d devices at %s' % (
                             len(devices), term['name']))
            try:
                rpc.TerminalAPI(term['rpc_topic']).start(
                    op_id, 'erase', {'devices': [d['path'] for d in devices]})
            except Exception as e:
                LOG.warning('%s: terminal %s: %s', op_id, term['name'], e)
            continue
        if op['state'] not in ('DONE', 'ERROR'):
            op = _ask_again(ctx, term, op)
        if op is None or op['state'] != 'DONE':
            continue
        for d in devices:
            if d['state'] == states.D_SHIPPED:
                d = db.transition(ctx, 'device', d['id'], 'receive')
            db.transition(ctx, 'device', d['id'], 'erase',
                          message='wiped at %s (migration aborted)'
                          % term['name'])
            db.transition(ctx, 'device', d['id'], 'reuse', values={
                'shipment_id': None, 'index_in_set': None})
        db.transition(ctx, 'shipment', s['id'], 'erase',
                      event_kind='custody', message='devices wiped and '
                      'BLANK again; the key was destroyed at the abort')
