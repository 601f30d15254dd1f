"""The devices' trip home: wiped at the destination, back where they belong.

A device's home is the terminal it was registered at
(``devices.home_terminal_id``). Once wiped away from home (BLANK at the
destination after a migration's cleanup, or after an abort) it goes back
in a *return consignment*: a shipment of kind ``return`` from the terminal
it is at to its home, tracked like a migration's shipment (the courier
plugin's events, custody events, ``openstack fedex shipment show``), but
with no data and no key. On the road the device is RETURNING; plugged in
at home it is BLANK again (:func:`arrived`, from its terminal's heartbeat
or the simulated courier). One the courier loses, or not back within
``[conductor] return_timeout``, is LOST with an event; if it turns up, it
arrives.

Who starts it: the conductor's sweeper (:func:`send_home`, a periodic job)
for every wiped device away from home when ``[conductor] return_devices``
is on, or an operator (``openstack fedex device return``,
:func:`request_return`); the sweeper then packs and dispatches the
consignments. Every step is a compare-and-swap or looks first at what is
done: safe on any conductor, and again after a crash.
"""

import collections
import datetime
import uuid

from oslo_config import cfg
from oslo_log import log as logging
import sqlalchemy as sa

from fedex_manager import couriers
from fedex_manager.db import api as db
from fedex_manager.db import models
from fedex_manager import states
from lsrp import exception

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

SEED = 'seed'
RETURN = 'return'
# States of a return consignment once the courier has it: its devices
# count as overdue after [conductor] return_timeout.
ON_THE_ROAD = (states.S_HANDED_TO_CARRIER, states.S_IN_TRANSIT,
               states.S_DELIVERED, states.S_DAMAGED)


def _name(ctx, terminal_id):
    return db.get(ctx, 'terminal', terminal_id)['name'] if terminal_id \
        else '(none)'


def request_return(ctx, device, why='requested'):
    """Send a wiped device home: BLANK or ERASED -> RETURNING.

    Refused (:class:`InvalidTransition`, naming the state) for a device
    that holds data or is on the road, and for one already at home or
    plugged in nowhere. The sweeper packs it into a consignment.
    """
    d = db.get(ctx, 'device', device)
    if d['state'] not in (states.D_BLANK, states.D_ERASED):
        raise exception.InvalidTransition(
            kind='device', id=d['serial'], current=d['state'],
            target=states.D_RETURNING,
            reason='only a BLANK or ERASED device goes home')
    reason = None
    if not d.get('home_terminal_id'):
        reason = 'it has no home terminal'
    elif not d.get('terminal_id'):
        reason = 'it is plugged in at no terminal'
    elif d['terminal_id'] == d['home_terminal_id']:
        reason = 'it is at its home terminal %s already' % _name(
            ctx, d['home_terminal_id'])
    if reason:
        raise exception.Conflict(kind='device', id=d['serial'],
                                 reason='cannot go home: %s' % reason)
    return db.transition(
        ctx, 'device', d['id'], 'return', expect=(d['state'],),
        values={'shipment_id': None, 'index_in_set': None},
        event_kind='custody',
        message='going home to %s from %s (%s)' % (
            _name(ctx, d['home_terminal_id']), _name(ctx, d['terminal_id']),
            why))


def send_home(ctx):
    """The sweeper's job: returns started, packed, dispatched, overdue."""
    if CONF.conductor.return_devices:
        _start_returns(ctx)
    _pack(ctx)
    _dispatch(ctx)
    _overdue(ctx)


def _start_returns(ctx):
    """Every BLANK device away from its home goes home."""
    for d in db.list_(ctx, 'device', {'state': states.D_BLANK}):
        if not d['home_terminal_id'] or not d['terminal_id'] or \
                d['terminal_id'] == d['home_terminal_id']:
            continue
        try:
            request_return(ctx, d['id'], 'wiped away from home')
        except (exception.InvalidTransition, exception.Conflict) as e:
            # A shipment's Pack took it first (BLANK -> ASSIGNED): it goes
            # on a migration instead; home later.
            LOG.info('%s', e)


def _pack(ctx):
    """RETURNING devices in no consignment: one per (from, home) route."""
    routes = collections.defaultdict(list)
    for d in db.list_(ctx, 'device', {'state': states.D_RETURNING,
                                      'shipment_id': None},
                      sort_key='serial', sort_dir='asc'):
        routes[(d['terminal_id'], d['home_terminal_id'])].append(d)
    for (src, home), devices in sorted(routes.items()):
        _consignment(ctx, src, home, devices)


class _NothingToPack(Exception):
    """Rolls back a consignment whose devices all went elsewhere."""


def _consignment(ctx, src, home, devices):
    """A return consignment with ``devices``, made in one transaction.

    Made SEALED: there is nothing to load (the devices are wiped) and
    nothing to seal (no data, no key); the courier takes it from there.
    """
    try:
        return _make_consignment(ctx, src, home, devices)
    except _NothingToPack:
        return None


def _make_consignment(ctx, src, home, devices):
    table = models.Device.__table__
    src_t = db.get(ctx, 'terminal', src)
    home_t = db.get(ctx, 'terminal', home)
    with db.writer(ctx) as session:
        s = db.create(ctx, 'shipment', dict(
            name='return-%s' % uuid.uuid4().hex[:12], kind=RETURN,
            state=states.S_SEALED, carrier=CONF.conductor.courier,
            source_site_id=src_t['site_id'], dest_site_id=home_t['site_id'],
            source_terminal_id=src, dest_terminal_id=home, parity=0),
            event_message='return consignment of wiped devices from %s to '
            '%s, for courier %s' % (src_t['name'], home_t['name'],
                                    CONF.conductor.courier))
        packed = []
        for d in devices:
            # Compare and swap: not one that arrived home meanwhile.
            done = session.execute(sa.update(table).where(
                table.c.id == d['id'], table.c.state == states.D_RETURNING,
                table.c.shipment_id.is_(None)).values(
                shipment_id=s['id'], index_in_set=len(packed),
                updated_at=db.now()))
            if done.rowcount == 1:
                packed.append(d)
                db.add_event(ctx, 'device', d['id'], 'custody',
                             'packed in return consignment %s at %s for %s'
                             % (s['name'], src_t['name'], home_t['name']),
                             details={'shipment': s['id']})
        if not packed:
            # Nothing left to send: the consignment is never made.
            raise _NothingToPack()
        db.add_event(ctx, 'shipment', s['id'], 'custody',
                     'packed %d device(s): %s' % (
                         len(packed), ', '.join(d['serial'] for d in packed)),
                     details={'devices': [d['serial'] for d in packed]})
    return db.get(ctx, 'shipment', s['id'])


def _dispatch(ctx):
    """Sealed consignments given to their courier (again after a crash).

    A courier's ``dispatch`` is idempotent (a seed shipment's is called
    again when its flow task runs again).
    """
    for s in db.list_(ctx, 'shipment', {'kind': RETURN,
                                        'state': states.S_SEALED,
                                        'tracking_number': None}):
        try:
            tracking = couriers.get(s['carrier']).dispatch(ctx, s)
        except exception.CourierError as e:
            LOG.warning('%s', e)
            continue
        if tracking:
            db.update(ctx, 'shipment', s['id'],
                      {'tracking_number': tracking})
            db.add_event(ctx, 'shipment', s['id'], 'custody',
                         'dispatched with courier %s, tracking %s'
                         % (s['carrier'], tracking))


def _overdue(ctx):
    """Devices not home ``return_timeout`` after their consignment: LOST."""
    limit = datetime.timedelta(seconds=CONF.conductor.return_timeout)
    now = db.now()
    late = collections.defaultdict(list)
    for d in db.list_(ctx, 'device', {'state': states.D_RETURNING}):
        if d['shipment_id']:
            late[d['shipment_id']].append(d)
    for sid, devices in sorted(late.items()):
        s = db.get(ctx, 'shipment', sid)
        age = now - db.utcfromiso(s['created_at'])
        if s['state'] not in ON_THE_ROAD or age < limit:
            continue
        why = 'not back at %s %d s after return consignment %s was made ' \
              '(return_timeout %d s)' % (
                  _name(ctx, s['dest_terminal_id']), age.total_seconds(),
                  s['name'], limit.total_seconds())
        for d in devices:
            _lose(ctx, d, 'overdue: ' + why)
        if 'lose' in states.SHIPMENT.events(s['state']):
            db.transition(ctx, 'shipment', sid, 'lose', event_kind='custody',
                          message='overdue: ' + why)


def _lose(ctx, d, why):
    try:
        db.transition(ctx, 'device', d['id'], 'lose',
                      expect=states.D_RETURNING, event_kind='custody',
                      message='LOST: %s' % why)
    except (exception.InvalidTransition, exception.Conflict) as e:
        LOG.info('%s', e)       # arrived meanwhile


def after_carrier_event(ctx, s, event, devices_missing):
    """What a carrier's event of a return consignment means for its devices.

    The consignment's own state changed already (``carrier_event``).
    """
    devices = [d for d in db.devices_of(ctx, s['id'])
               if d['state'] == states.D_RETURNING]
    home = _name(ctx, s['dest_terminal_id'])
    missing = set(devices_missing or ())
    if event == 'hand_over':
        for d in devices:
            db.add_event(ctx, 'device', d['id'], 'custody',
                         'handed to courier %s%s at %s, for %s' % (
                             s['carrier'], ' (tracking %s)' %
                             s['tracking_number'] if s['tracking_number']
                             else '', _name(ctx, s['source_terminal_id']),
                             home))
    elif event == 'deliver':
        for d in devices:
            if d['serial'] in missing:
                _lose(ctx, d, 'missing from return consignment %s when it '
                      'was delivered at %s' % (s['name'], home))
            else:
                db.add_event(ctx, 'device', d['id'], 'custody',
                             'delivered at %s: BLANK there once plugged in'
                             % home)
    elif event == 'lose':
        for d in devices:
            if not missing or d['serial'] in missing:
                _lose(ctx, d, 'the courier lost return consignment %s'
                      % s['name'])
    elif event == 'damage':
        for d in devices:
            db.add_event(ctx, 'device', d['id'], 'custody',
                         'return consignment %s damaged: plugged in at %s '
                         'it is BLANK again; else retire it' % (
                             s['name'], home))


def arrived(ctx, d, term):
    """A device on its way home (or LOST) is plugged in at ``term``.

    BLANK again at its home terminal, or anywhere once its consignment
    was delivered (then, away from home, it is sent on again). A LOST
    device that turns up arrives where it is. Returns the device.
    """
    if d['state'] == states.D_RETURNING:
        s = db.get(ctx, 'shipment', d['shipment_id']) \
            if d['shipment_id'] else None
        delivered = s is not None and s['state'] == states.S_DELIVERED
        if term['id'] != d['home_terminal_id'] and not delivered:
            return d    # still on its way (plugged in at the sender)
        why = 'home again at %s' % term['name'] if term['id'] == d[
            'home_terminal_id'] else 'delivered at %s, not its home %s' % (
            term['name'], _name(ctx, d['home_terminal_id']))
        if s is not None:
            why += ' (return consignment %s)' % s['name']
    elif d['state'] == states.D_LOST:
        why = 'turned up at %s after it was LOST' % term['name']
    else:
        return d
    try:
        return db.transition(ctx, 'device', d['id'], 'arrive',
                             expect=d['state'], event_kind='custody',
                             values={'shipment_id': None,
                                     'index_in_set': None},
                             message='%s: BLANK' % why)
    except (exception.InvalidTransition, exception.Conflict) as e:
        LOG.info('%s', e)   # another heartbeat made it arrive
        return db.get(ctx, 'device', d['id'])


def describe(ctx, devices):
    """Devices as shown: terminal names, and the trip home if on one.

    ``terminal``, ``home_terminal`` (names), ``return_trip``: None, or
    the consignment's name, state, tracking number and carrier.
    """
    names = {t['id']: t['name'] for t in db.list_(ctx, 'terminal')}
    trips = {}
    sids = sorted({d['shipment_id'] for d in devices if d['state'] in (
        states.D_RETURNING, states.D_LOST) and d.get('shipment_id')})
    if sids:
        for s in db.list_(ctx, 'shipment', {'id': sids, 'kind': RETURN}):
            trips[s['id']] = {
                'shipment_id': s['id'], 'name': s['name'],
                'state': s['state'], 'carrier': s['carrier'],
                'tracking_number': s['tracking_number'],
                'from': names.get(s['source_terminal_id']),
                'to': names.get(s['dest_terminal_id'])}
    for d in devices:
        d['terminal'] = names.get(d.get('terminal_id'))
        d['home_terminal'] = names.get(d.get('home_terminal_id'))
        d['return_trip'] = trips.get(d.get('shipment_id'))
    return devices
