"""Waves: servers moved together (one migration each, one shipment group).

``wave_create`` makes one migration per server, all created before any
starts, in one shipment group named after the wave
(:func:`fedex_manager.actions.migrations.migrations_create`); the wave's
id is that group's label. ``wave_show`` is every member's state, progress
and cutovers, and the wave's own; ``wave_cutover`` approves every
member's cutover (the conductor starts them, ``max_parallel_cutovers`` at
a time, :mod:`fedex_manager.waves`); ``wave_abort`` aborts those that can
still be.
"""

import re
import uuid

from fedex_manager.actions import cutover as cutover_actions
from fedex_manager.actions import inputs
from fedex_manager.actions import lifecycle
from fedex_manager.actions import migrations
from fedex_manager.db import api as db
from fedex_manager import options as options_mod
from fedex_manager import states
from fedex_manager import waves
from lsrp import exception

_LABEL = re.compile(options_mod.LABEL['pattern'])


def _wave_id(ctx, name):
    if name is None:
        return 'wave-%s' % uuid.uuid4().hex[:12]
    if not isinstance(name, str) or not _LABEL.fullmatch(name):
        inputs.bad('name', 'a wave\'s name is its id: %s'
                   % options_mod.LABEL['description'])
    if waves.members(ctx, name):
        inputs.bad('name', 'wave %s exists already; choose another name'
                   % name)
    return name


def wave_create(ctx, servers, source_site, dest_site, name=None,
                source_host=None, dest_host=None, options=None,
                source_terminal=None, dest_terminal=None, pool_map=None):
    """Move ``servers`` to ``dest_site`` as one wave; the wave shown.

    ``servers`` as :func:`~fedex_manager.actions.migrations.
    migration_create` takes them; each becomes a migration named
    ``<wave>-<n>``. All get the same options and terminals (one route:
    one shipment group); a bad server leaves nothing made.
    """
    if not servers:
        inputs.bad('servers', 'a wave needs at least one server')
    wave_id = _wave_id(ctx, name)
    src = db.get(ctx, 'site', source_site)
    dst = db.get(ctx, 'site', dest_site)
    # One route for all, chosen once (each migration alone would take the
    # least busy terminals, and two members could differ).
    terms = migrations.choose_terminals(ctx, src, dst, source_terminal,
                                        dest_terminal)
    requests = [dict(servers=[s], source_site=src['id'],
                     dest_site=dst['id'], name='%s-%d' % (wave_id, i + 1),
                     source_host=source_host, dest_host=dest_host,
                     options=options,
                     source_terminal=terms['source_terminal']['id'],
                     dest_terminal=terms['dest_terminal']['id'],
                     pool_map=pool_map)
                for i, s in enumerate(servers)]
    migrations.migrations_create(ctx, requests, one_shipment=True,
                                 group=wave_id)
    return wave_show(ctx, wave_id)


def _members(ctx, wave_id, project_id=None):
    found = waves.members(ctx, wave_id, project_id)
    if not found:
        raise exception.NotFound(kind='wave', id=wave_id)
    return found


def wave_show(ctx, wave_id, project_id=None):
    """The wave: its servers (state, progress, cutovers), progress, ETA.

    A member waiting for its cutover says why (``waiting``: the window,
    the approval, its turn in the wave).
    """
    ms = _members(ctx, wave_id, project_id)
    out = waves.summary(ctx, wave_id, ms)
    for s in out['servers']:
        s['waiting'] = None
        if s['state'] in (states.READY_FOR_CUTOVER, states.ROLLED_BACK):
            reasons = cutover_actions.cutover_ready(
                ctx, s['migration_id'])['reasons']
            s['waiting'] = '; '.join(reasons) or None
    out['allowed_actions'] = sorted(
        {a for s in out['servers'] for a in s['allowed_actions']} &
        {'abort', 'approve_cutover'})
    return out


def wave_list(ctx, project_id=None):
    """Every wave (of ``project_id``), newest first: summaries."""
    filters = {'project_id': project_id} if project_id else None
    by_wave = {}
    for m in db.list_(ctx, 'migration', filters):
        if waves.wave_of(m):
            by_wave.setdefault(waves.wave_of(m), []).append(m)
    out = []
    for wave_id, ms in by_wave.items():
        counts = {}
        for m in ms:
            counts[m['state']] = counts.get(m['state'], 0) + 1
        out.append({'id': wave_id, 'state': waves.wave_state(ms),
                    'states': counts, 'servers': len(ms),
                    'project_id': ms[0]['project_id'],
                    'created_at': min(m['created_at'] for m in ms),
                    'updated_at': max(m['updated_at'] for m in ms)})
    return sorted(out, key=lambda w: w['created_at'], reverse=True)


def wave_cutover(ctx, wave_id, project_id=None):
    """Approve the cutover of every member that may still be approved.

    The conductor starts them once each is ready, in the window,
    ``max_parallel_cutovers`` at a time.
    """
    for m in _members(ctx, wave_id, project_id):
        # Approved again (after rollbacks): its count of rollbacks
        # starts over, as for one migration.
        if m['state'] in waves.PAST_CUTOVER:
            continue
        try:
            cutover_actions.migration_approve_cutover(ctx, m['id'])
        except exception.InvalidTransition:
            continue        # CUTTING_OVER or FAILED: nothing to approve
    return wave_show(ctx, wave_id, project_id)


def wave_abort(ctx, wave_id, reason=None, project_id=None):
    """Abort every member that can be (not once its cutover started)."""
    for m in _members(ctx, wave_id, project_id):
        if m['state'] in states.ABORTABLE:
            lifecycle.migration_abort(ctx, m['id'], reason=reason or
                                      'wave %s aborted' % wave_id)
    return wave_show(ctx, wave_id, project_id)
