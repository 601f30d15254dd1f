"""Devices: registered blank where they are plugged in, listed, shown."""

import re

from fedex_manager.actions import inputs
from fedex_manager.db import api as db
from fedex_manager import states
from lsrp import exception

# A device's serial (fedex-api's schemas use it too). Checked here as well:
# terminals report serials in their heartbeats, not through fedex-api.
SERIAL = {'type': 'string', 'pattern': '^[A-Za-z0-9._:-]{1,128}$'}
_SERIAL = re.compile(SERIAL['pattern'])


def device_register(ctx, serial, terminal, capacity_bytes=0, slot=None,
                    path=None):
    """A terminal registers a blank device plugged into it."""
    if not serial or not _SERIAL.match(serial):
        inputs.bad('serial', '%r is not a device serial' % (serial,))
    term = db.get(ctx, 'terminal', terminal)
    try:
        dev = db.get(ctx, 'device', serial)
    except exception.NotFound:
        try:
            return db.create(ctx, 'device', dict(
                serial=serial, state=states.D_BLANK, terminal_id=term['id'],
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
    return db.update(ctx, 'device', dev['id'], values)


def device_list(ctx, filters=None, limit=None, marker=None):
    return db.list_(ctx, 'device', filters, inputs.limit(limit), marker)


def device_show(ctx, device):
    d = db.get(ctx, 'device', device)
    d['events'] = db.events(ctx, {'resource_id': d['id']})
    return d
