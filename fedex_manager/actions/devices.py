"""Devices: registered blank where they are plugged in, listed, shown,
sent home, retired.

A device's home is the terminal it was first registered at; once wiped
away from home the courier brings it back there
(:mod:`fedex_manager.return_trip`).
"""

import re

from fedex_manager.actions import inputs
from fedex_manager.actions import sites
from fedex_manager.db import api as db
from fedex_manager import return_trip
from fedex_manager import states
from lsrp import exception

# A device's serial (fedex-api's schemas use it too). Checked here as well:
# terminals report serials in their heartbeats, not through fedex-api.
SERIAL = {'type': 'string', 'pattern': '^[A-Za-z0-9._:-]{1,128}$',
          'description': 'a device serial (1-128 of A-Z a-z 0-9 . _ : -)'}
_SERIAL = re.compile(SERIAL['pattern'])


def device_register(ctx, serial, terminal, capacity_bytes=0, slot=None,
                    path=None):
    """A terminal registers a blank device plugged into it.

    A device known already is where it says now; one on its way home (or
    LOST) arrives (:func:`fedex_manager.return_trip.arrived`).
    """
    # fullmatch: the pattern's $ also matches before a final newline.
    if not serial or not _SERIAL.fullmatch(serial):
        inputs.bad('serial', '%r is not a device serial' % (serial,))
    term = db.get(ctx, 'terminal', terminal)
    try:
        dev = db.get(ctx, 'device', serial)
    except exception.NotFound:
        try:
            return db.create(ctx, 'device', dict(
                serial=serial, state=states.D_BLANK, terminal_id=term['id'],
                home_terminal_id=term['id'],
                capacity_bytes=capacity_bytes, slot=slot, path=path),
                event_message='registered at %s' % term['name'])
        except exception.Conflict:
            # Two heartbeats of one terminal handled at once (a conductor
            # serves casts on several threads): the other one made it.
            dev = db.get(ctx, 'device', serial)
    # Plugged in again (at the destination, after delivery): where it is.
    values = dict(terminal_id=term['id'], slot=slot, path=path)
    if capacity_bytes:
        values['capacity_bytes'] = capacity_bytes
    if not dev.get('home_terminal_id'):
        values['home_terminal_id'] = term['id']
    dev = db.update(ctx, 'device', dev['id'], values)
    if dev['state'] in (states.D_RETURNING, states.D_LOST):
        dev = return_trip.arrived(ctx, dev, term)
    return dev


def device_list(ctx, filters=None, limit=None, marker=None):
    return db.list_(ctx, 'device', filters, inputs.limit(limit), marker)


def device_show(ctx, device):
    d = db.get(ctx, 'device', device)
    d['events'] = db.events(ctx, {'resource_id': d['id']})
    return return_trip.describe(ctx, [d])[0]


def device_return(ctx, device, reason=None):
    """An operator sends a wiped device home (BLANK or ERASED, away)."""
    # The event names who asked (its actor).
    d = return_trip.request_return(ctx, device, 'requested%s' % (
        ': %s' % reason if reason else ''))
    return return_trip.describe(ctx, [d])[0]


def device_retire(ctx, device):
    """An operator retires a device: its record goes, its events stay.

    Only one that holds nobody's data and is on no road (BLANK, ERASED,
    LOST), and that its terminal does not list any more (else its next
    heartbeat would register it again): unplug it first.
    """
    d = db.get(ctx, 'device', device)
    if d['state'] not in states.DEVICE_RETIRABLE:
        raise exception.Conflict(
            kind='device', id=d['serial'],
            reason='is %s: only a %s device is retired' % (
                d['state'], ', '.join(states.DEVICE_RETIRABLE)))
    term = sites.terminal_show(ctx, d['terminal_id']) \
        if d['terminal_id'] else None
    if term and d['state'] != states.D_LOST:
        listed = {x.get('serial') for x in
                  (term.get('info') or {}).get('devices') or ()}
        if term['health'] == 'UP' and d['serial'] in listed:
            raise exception.Conflict(
                kind='device', id=d['serial'],
                reason='is still plugged in at terminal %s (its last '
                'heartbeat lists it): unplug it, then retire it'
                % term['name'])
    with db.writer(ctx):
        db.add_event(ctx, 'device', d['id'], 'state', 'retired (was %s at '
                     '%s)' % (d['state'], term['name'] if term else
                              'no terminal'))
        db.delete(ctx, 'device', d['id'])
