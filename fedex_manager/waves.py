"""A wave: servers moved together, one migration each, in one shipment.

A wave is the migrations of one shipment group (``options.shipment_group``,
the wave's id): they travel in the same shipments, so the chunks their
disks share (clones of one Glance image) are stored once on the devices,
and each then catches up, cuts over and rolls back on its own, with the
migration's state machine unchanged. What a wave adds is a bound: at most
``max_parallel_cutovers`` of its members are CUTTING_OVER at once
(:func:`cutover_reasons`, one of the reasons of
:func:`fedex_manager.actions.cutover.cutover_ready`), and a view of all of
them (:func:`summary`). Why one migration per server rather than servers
with states inside one migration: doc/source/manager.rst, "Waves".
"""

import math

from fedex_manager.actions import progress
from fedex_manager.db import api as db
from fedex_manager import shipments
from fedex_manager import states

# A wave is as far as its slowest member: the states in the order a
# migration goes through them; those that need someone (FAILED) first.
ORDER = (states.FAILED, states.ABORTING, states.REQUESTED,
         states.SNAPSHOTTING, states.EXPORTING, states.CONSOLIDATING,
         states.SEALED, states.IN_TRANSIT, states.DELIVERED,
         states.IMPORTING, states.CATCHING_UP, states.ROLLED_BACK,
         states.READY_FOR_CUTOVER, states.CUTTING_OVER, states.COMPLETED,
         states.CLEANED)
# Members whose cutover is behind them (or will never come).
PAST_CUTOVER = (states.COMPLETED, states.CLEANED, states.ABORTING,
                states.ABORTED)
DEFAULT_PARALLEL = 2


def wave_of(m):
    """The wave (shipment group) of a migration, or None."""
    return shipments.group_of(m)


def members(ctx, wave_id, project_id=None):
    """The migrations of the wave, oldest first (an empty list: none)."""
    filters = {'project_id': project_id} if project_id else None
    out = [m for m in db.list_(ctx, 'migration', filters)
           if wave_of(m) == wave_id]
    return sorted(out, key=lambda m: (m['created_at'], m['id']))


def bound(m):
    return (m.get('options') or {}).get('max_parallel_cutovers') or \
        DEFAULT_PARALLEL


def cutting_over(ctx, wave_id, but=None):
    """The wave's members CUTTING_OVER now (other than ``but``)."""
    return [x for x in db.list_(ctx, 'migration',
                                {'state': states.CUTTING_OVER})
            if wave_of(x) == wave_id and x['id'] != but]


def length(m):
    """How long the member's cutover is expected to take, as a rank.

    Its disks: Nova attaches each Cinder volume at the destination and
    detaches it at the source inside the live migration (192 and 209 s
    for the members with one and two volumes of the eight-server wave,
    83-112 s for those without; doc/source/manager.rst).
    """
    return len(m['volumes'])


def cutover_reasons(ctx, m, will_start=None, hold_seconds=0):
    """Why ``m``'s cutover must wait for its wave; [] if it need not.

    Counted from the database when asked: the sweeper, one conductor at
    a time under its lock, starts cutovers one after another, so each
    start sees the ones before it. Longest first: for ``hold_seconds``
    after it became ready, ``m`` leaves the free slots to members with
    longer cutovers (:func:`length`) that ``will_start`` by themselves
    and are ready or still catching up, when they would need them all.
    """
    wave_id = wave_of(m)
    if not wave_id or m['state'] == states.CUTTING_OVER:
        return []
    busy = cutting_over(ctx, wave_id, but=m['id'])
    if len(busy) >= bound(m):
        return ['%d server(s) of wave %s cutting over (%s), its '
                'max_parallel_cutovers = %d: waiting for one to end' % (
                    len(busy), wave_id, ', '.join(sorted(
                        x['id'][:8] for x in busy)), bound(m))]
    if not hold_seconds or will_start is None:
        return []
    waited = (db.now() - db.utcfromiso(m['updated_at'])).total_seconds()
    if waited >= hold_seconds:
        return []
    longer = [x for x in members(ctx, wave_id)
              if x['state'] in (states.CATCHING_UP, states.READY_FOR_CUTOVER,
                                states.ROLLED_BACK) and
              length(x) > length(m) and will_start(x)]
    free = bound(m) - len(busy)
    if len(longer) < free:
        return []
    return ['leaving the %d free slot(s) of wave %s to its longer cutovers '
            'first (%s: more disks), for at most %d s more '
            '([conductor] longest_cutover_first_wait)' % (
                free, wave_id, ', '.join(sorted(
                    '%s %s' % (x['id'][:8], x['state']) for x in longer)),
                math.ceil(hold_seconds - waited))]


def by_length(items, member=lambda m: m):
    """The members with the longest cutovers first (then in given order).

    ``member`` finds the migration in each item (for pairs and the like).
    """
    return sorted(items, key=lambda x: length(member(x)), reverse=True)


def cutovers(ctx, m):
    """The member's cutovers from its state events, oldest first.

    [{"started_at", "ended_at" (None: running), "outcome" (COMPLETED,
    ROLLED_BACK or None), "seconds"}]
    """
    out = []
    for e in db.events(ctx, {'migration_id': m['id'], 'kind': 'state',
                             'resource_type': 'migration'}):
        if e['to_state'] == states.CUTTING_OVER:
            out.append({'started_at': e['created_at'], 'ended_at': None,
                        'outcome': None, 'seconds': None})
        elif out and out[-1]['ended_at'] is None and e['from_state'] == \
                states.CUTTING_OVER:
            out[-1].update(ended_at=e['created_at'], outcome=e['to_state'],
                           seconds=(db.utcfromiso(e['created_at']) -
                                    db.utcfromiso(out[-1]['started_at'])
                                    ).total_seconds())
    return out


def device_bytes(ctx, shipment):
    """Bytes on the shipment's devices as sealed; None before the seal."""
    try:
        op = db.get(ctx, 'operation', '%s.seal' % shipment['name'])
    except Exception:
        return None
    found = (op.get('result') or {}).get('device_bytes')
    return sum(found.values()) if found else None


def _rank(state):
    return ORDER.index(state) if state in ORDER else len(ORDER)


def wave_state(ms):
    """The slowest member's state (ABORTED when all are aborted)."""
    live = [m['state'] for m in ms if m['state'] != states.ABORTED]
    if not live:
        return states.ABORTED
    return min(live, key=_rank)


def member_view(ctx, m):
    """One server of the wave: its migration's state, progress, cutovers."""
    m = progress.annotate(m)
    runs = cutovers(ctx, m)
    return {'migration_id': m['id'], 'name': m['name'],
            'server_id': m['servers'][0]['server_id'] if m['servers']
            else None,
            'state': m['state'], 'progress': m['progress'],
            'cutover_approved': m['cutover_approved'],
            'last_error': m['last_error'], 'dest_host': m['dest_host'],
            'images': [v['source_image'] for v in m['volumes']],
            'cutovers': runs,
            'allowed_actions': m['allowed_actions']}


def summary(ctx, wave_id, ms):
    """The wave as its callers see it: members, progress, ETA, shipments."""
    servers = [member_view(ctx, m) for m in ms]
    first = ms[0]
    total = sum(s['progress']['bytes_total'] or 0 for s in servers)
    done = sum(s['progress']['bytes_done'] or 0 for s in servers)
    counts = {}
    for s in servers:
        counts[s['state']] = counts.get(s['state'], 0) + 1
    ships = {}
    for m in ms:
        for v in m['volumes']:
            if v['shipment_id'] and v['shipment_id'] not in ships:
                ships[v['shipment_id']] = db.get(ctx, 'shipment',
                                                 v['shipment_id'])
    shipment_rows = []
    for s in sorted(ships.values(), key=lambda x: x['created_at']):
        shipment_rows.append({'id': s['id'], 'name': s['name'],
                              'state': s['state'],
                              'devices': len(s['devices']),
                              'device_bytes': device_bytes(ctx, s)})
    known = [s['device_bytes'] for s in shipment_rows
             if s['device_bytes'] is not None]
    return {
        'id': wave_id, 'state': wave_state(ms), 'states': counts,
        'project_id': first['project_id'],
        'source_site_id': first['source_site_id'],
        'dest_site_id': first['dest_site_id'],
        'max_parallel_cutovers': bound(first),
        'cutover': first['options'].get('cutover'),
        'cutover_window': first['options'].get('cutover_window'),
        'servers': servers, 'shipments': shipment_rows,
        'device_bytes': sum(known) if known else None,
        'progress': {'bytes_total': total, 'bytes_done': done,
                     'percent': round(100.0 * done / total, 1) if total
                     else None,
                     'eta_seconds': eta(servers, bound(first)),
                     'servers': len(servers),
                     'completed': sum(1 for s in servers if s['state'] in (
                         states.COMPLETED, states.CLEANED)),
                     'cutting_over': counts.get(states.CUTTING_OVER, 0)},
        'created_at': min(m['created_at'] for m in ms),
        'updated_at': max(m['updated_at'] for m in ms)}


def eta(servers, parallel):
    """Seconds until the wave is over, or None when nothing says.

    The data's ETA is its slowest member's (they move in parallel, in one
    shipment); the cutovers left then take their turns ``parallel`` at a
    time, each as long as the wave's completed cutovers took on average
    (unknown before the first one: then the data's ETA only).
    """
    data = [s['progress']['eta_seconds'] for s in servers
            if s['progress']['eta_seconds'] is not None and
            s['state'] not in (states.READY_FOR_CUTOVER,
                               states.CUTTING_OVER) + PAST_CUTOVER]
    took = [c['seconds'] for s in servers for c in s['cutovers']
            if c['outcome'] == states.COMPLETED]
    left = sum(1 for s in servers if s['state'] not in PAST_CUTOVER)
    if not left:
        return None
    out = max(data) if data else 0.0
    if took:
        out += math.ceil(left / float(parallel)) * sum(took) / len(took)
    return out if (data or took) else None
