"""What the terminals report (casts), written into the database.

Progress and completion of their operations, and heartbeats (the terminal
itself and the devices in its slots).
"""

import datetime
import time

from oslo_log import log as logging

from fedex_manager.actions import devices as device_actions
from fedex_manager.actions import sites
from fedex_manager.db import api as db
from fedex_manager.flows.tasks import common as tasks_common
from lsrp import exception

LOG = logging.getLogger(__name__)
# Seconds between a migration's progress events of one operation.
PROGRESS_EVENT_EVERY = 30.0
PROGRESS_KINDS = ('export', 'import', 'consolidate', 'snapshot')


def progress(ctx, op_id, bytes_done, bytes_total, rate, said):
    """An operation's progress, and its migration's.

    ``said`` maps an operation to when its last progress event was
    written (``time.monotonic()``): the caller keeps it between reports.
    """
    op = db.operation_report(ctx, op_id, bytes_done=bytes_done,
                             bytes_total=bytes_total, rate=rate,
                             state='RUNNING')
    if not op or not op['migration_id']:
        return
    if op['kind'] in PROGRESS_KINDS:
        _migration_progress(ctx, op, said)


def _migration_progress(ctx, op, said):
    try:
        m = db.get(ctx, 'migration', op['migration_id'])
    except exception.NotFound:
        return
    total = op['bytes_total'] or m['bytes_total']
    done = op['bytes_done']
    rate = op['rate']
    eta = (total - done) / rate if rate and total and total > done \
        else None
    db.update(ctx, 'migration', m['id'], {
        'bytes_done': done, 'bytes_total': total or m['bytes_total'],
        'rate': rate, 'eta_seconds': eta})
    now = time.monotonic()
    if now - said.get(op['id'], 0) >= PROGRESS_EVENT_EVERY:
        said[op['id']] = now
        db.add_event(ctx, 'migration', m['id'], 'progress',
                     '%s: %d of %d bytes%s' % (
                         op['kind'], done, total, ', %.1f MB/s' %
                         (rate / 1e6) if rate else ''),
                     migration_id=m['id'],
                     details={'op_id': op['id'], 'bytes_done': done,
                              'bytes_total': total, 'rate': rate,
                              'eta_seconds': eta})


def finished(ctx, terminal, op_id, state, result=None, error=None):
    """An operation ended: recorded, and its waiting task woken."""
    op = db.operation_report(ctx, op_id, state=state, result=result,
                             error=error)
    tasks_common.op_ended(op_id)
    if op and op['migration_id']:
        db.add_event(ctx, 'migration', op['migration_id'],
                     'error' if state == 'ERROR' else 'progress',
                     '%s %s on %s: %s' % (
                         op['kind'], 'done' if state == 'DONE' else
                         'failed', terminal, error or 'ok'),
                     migration_id=op['migration_id'],
                     details={'op_id': op_id})


def heartbeat(ctx, terminal, info):
    """A terminal is alive: registered if new, its devices where it says."""
    try:
        term = db.get(ctx, 'terminal', terminal)
    except exception.NotFound:
        term = sites.terminal_register(
            ctx, terminal, info['site'], rpc_topic=info['rpc_topic'],
            lsrp_address=info.get('lsrp_address'))
    if term['lsrp_address'] != info.get('lsrp_address'):
        db.update(ctx, 'terminal', term['id'],
                  {'lsrp_address': info.get('lsrp_address')})
    sites.terminal_heartbeat(ctx, terminal, info)
    devices = info.get('devices') or []
    known = {d['serial']: d for d in db.list_(ctx, 'device', {
        'serial': [d['serial'] for d in devices]})} if devices else {}
    scanned = db.utcfromiso(info.get('scanned_at'))
    for dev in devices:
        k = known.get(dev['serial'])
        if k and k['terminal_id'] == term['id'] and \
                k['path'] == dev['path']:
            continue
        if k and k['terminal_id'] not in (None, term['id']) and \
                listed_before_move(scanned, k):
            LOG.info('heartbeat of %s scanned at %s lists device %s, '
                     'recorded at another terminal since %s: stale, '
                     'ignored', terminal, info.get('scanned_at'),
                     k['serial'], k['updated_at'])
            continue
        device_actions.device_register(ctx, dev['serial'], terminal,
                                       dev.get('capacity_bytes', 0),
                                       _slot(dev.get('slot')), dev['path'])


def listed_before_move(scanned, device):
    """Whether a heartbeat's list of devices predates the device's move.

    A heartbeat is a cast: it may reach a conductor seconds after its
    terminal listed its slots (a loaded machine, a backlog of casts), and
    after the courier plugged the device in at another terminal. Believed,
    it would move the device back to where it no longer is, and the import
    at the destination would miss it (the 50-migration benchmark's
    ``DevicesMissing: device 0``, 3 s after the custody check had passed).
    A real move between terminals takes minutes (same site) to days;
    the second of margin covers the database's whole-second timestamps.
    A terminal that does not say when it listed (``scanned_at``) is
    believed, as before.
    """
    if scanned is None:
        return False
    moved = db.utcfromiso(device['updated_at'])
    return scanned < moved + datetime.timedelta(seconds=1)


def _slot(slot):
    try:
        return int(str(slot).lstrip('slotusb'))
    except (TypeError, ValueError):
        return None
