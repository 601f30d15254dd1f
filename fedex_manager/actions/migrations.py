"""Migrations requested, alone or as a wave; listed, shown, changed, deleted.

Nothing here waits for terminals: a new migration's first phase is posted
to the conductors as a job (:mod:`fedex_manager.jobs`).
"""

import contextlib
import random
import re
import uuid

from fedex_manager.actions import inputs
from fedex_manager.actions import progress
from fedex_manager.actions import sites
from fedex_manager.db import api as db
from fedex_manager import jobs
from fedex_manager import options as options_mod
from fedex_manager import shipments
from fedex_manager import states
from lsrp import exception

# An RBD image POOL/IMAGE (fedex-api's schemas use it too); at most the
# length of its columns.
IMAGE_SPEC = {'type': 'string', 'maxLength': 512,
              'pattern': '^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$',
              'description': 'an RBD image POOL/IMAGE'}
_IMAGE_SPEC = re.compile(IMAGE_SPEC['pattern'])
# The RBD image of a Cinder volume (the RBD driver's pool ``volumes``).
CINDER_IMAGE = 'volumes/volume-%s'
MIGRATION_FILTERS = ('state', 'project_id', 'source_site_id', 'dest_site_id',
                     'name')


def _is_image(text):
    # fullmatch: the pattern's $ also matches before a final newline.
    return bool(text) and isinstance(text, str) and \
        len(text) <= IMAGE_SPEC['maxLength'] and \
        _IMAGE_SPEC.fullmatch(text) is not None


def _not_image(text):
    shown = repr(text)
    return '%s is not POOL/IMAGE (at most %d characters)' % (
        shown if len(shown) <= 60 else shown[:60] + '...',
        IMAGE_SPEC['maxLength'])


def _volumes_of(server, index, dest_pool_map):
    """A server's images as volume rows; each "pool/img" or an object."""
    vols = server.get('volumes') or []
    if not vols:
        inputs.bad('servers[%d].volumes' % index, 'a server needs at least '
                   'one RBD image (its disks and volumes)')
    out = []
    for j, v in enumerate(vols):
        field = 'servers[%d].volumes[%d]' % (index, j)
        if isinstance(v, str):
            v = {'source_image': v}
        src = v.get('source_image')
        if not _is_image(src):
            inputs.bad(field + '.source_image', _not_image(src))
        dest = v.get('dest_image')
        if dest is None:
            pool, name = src.split('/', 1)
            dest = '%s/%s' % (dest_pool_map.get(pool, pool), name)
        # A pool map may make a name no pool has.
        if not _is_image(dest):
            inputs.bad(field + '.dest_image', _not_image(dest))
        out.append(dict(server_id=server.get('server_id'),
                        volume_id=v.get('volume_id'),
                        kind=v.get('kind', 'volume'), source_image=src,
                        dest_image=dest, size_bytes=v.get('size_bytes', 0)))
    return out


def migration_create(ctx, servers, source_site, dest_site, name=None,
                     source_host=None, dest_host=None, options=None,
                     source_terminal=None, dest_terminal=None,
                     pool_map=None, start=True, volumes=None,
                     _held=None):
    """Request the move of ``servers`` (a wave) to ``dest_site``.

    ``servers``: [{"server_id": ..., "name": ..., "volumes": [
    {"source_image": "pool/img", "dest_image": ..., "volume_id": ...,
    "size_bytes": ...} or "pool/img", ...]}]
    ``volumes``: detached Cinder volumes (or bare RBD images) moved on
    their own, in the same form ({"volume_id": ..., "source_image": ...});
    with no server, the cutover needs no Nova: final delta, then Cinder's
    ownership move.
    """
    servers = servers or []
    if not (servers or volumes):
        inputs.bad('servers', 'a migration needs at least one server or '
                   'volume')
    if any(not (v.get('volume_id') or v.get('source_image'))
           for v in volumes or []):
        inputs.bad('volumes', 'a list of {"volume_id": ..., '
                   '"source_image": ...}')
    src = db.get(ctx, 'site', source_site)
    dst = db.get(ctx, 'site', dest_site)
    if src['id'] == dst['id']:
        inputs.bad('dest_site', 'source and destination are both %s'
                   % src['name'])
    opts = options_mod.validate(options)
    route = opts.get('shipment_group') and shipments.group_route(
        ctx, opts['shipment_group'])
    if route and [db.get(ctx, 'terminal', t)['site_id'] for t in route] \
            == [src['id'], dst['id']]:
        # One group, one route: the group's terminals, not the least busy
        # (a group between other sites: check_join refuses it).
        source_terminal = source_terminal or route[0]
        dest_terminal = dest_terminal or route[1]
    terms = choose_terminals(ctx, src, dst, source_terminal, dest_terminal)
    server_rows, volume_rows, seen = [], [], set()
    for i, server in enumerate(servers):
        server_rows.append(dict(server_id=server.get('server_id') or
                                'server-%d' % i, name=server.get('name'),
                                state='LOCKED'))
        for v in _volumes_of(server, i, pool_map or {}):
            if v['source_image'] in seen:
                inputs.bad('servers[%d].volumes' % i, 'image %s is listed '
                           'twice' % v['source_image'])
            seen.add(v['source_image'])
            volume_rows.append(v)
    if volumes:
        # A Cinder volume (its id) or a bare RBD image (no Cinder record:
        # the Ceph-only demo).
        for v in _volumes_of({'volumes': [
                dict(x, kind='volume' if x.get('volume_id') else 'disk',
                     source_image=x.get('source_image') or
                     CINDER_IMAGE % x['volume_id']) for x in volumes]}, 0,
                pool_map or {}):
            if v['source_image'] in seen:
                inputs.bad('volumes', 'image %s is listed twice'
                           % v['source_image'])
            seen.add(v['source_image'])
            volume_rows.append(v)
    if opts.get('shipment_group'):
        shipments.check_join(ctx, opts['shipment_group'],
                             terms['source_terminal']['id'],
                             terms['dest_terminal']['id'],
                             same_request=opts['shipment_group_closed'])
    values = dict(name=name, project_id=ctx.project_id,
                  user_id=ctx.user_id, source_site_id=src['id'],
                  dest_site_id=dst['id'], source_host=source_host,
                  dest_host=dest_host, options=opts,
                  source_terminal_id=terms['source_terminal']['id'],
                  dest_terminal_id=terms['dest_terminal']['id'],
                  bytes_total=sum(v['size_bytes'] for v in volume_rows))
    if _held is not None:
        # migrations_create holds the post lock (the id is its).
        values['id'], held = _held
        mig = db.migration_create(ctx, values, server_rows, volume_rows)
    else:
        # The row's id is known before the row: its post lock is held
        # from before it exists until its phase is posted.
        values['id'] = str(uuid.uuid4())
        with jobs.holding(values['id']) as held:
            mig = db.migration_create(ctx, values, server_rows, volume_rows)
            if start:
                jobs.post(ctx, mig['id'], 'prepare', held=held)
    return db.get(ctx, 'migration', mig['id'])


def choose_terminals(ctx, src, dst, source_terminal=None,
                     dest_terminal=None):
    """{"source_terminal": row, "dest_terminal": row} of a new migration.

    Those named (checked to be at their site), else the least busy of the
    site's terminals that are UP (of all of them if none is).
    """
    terms = {}
    for field, term, site in (('source_terminal', source_terminal, src),
                              ('dest_terminal', dest_terminal, dst)):
        if term is None:
            candidates = sites.terminal_list(ctx, site['id'])
            if not candidates:
                inputs.bad(field, 'site %s has no terminal; register one'
                           % site['name'])
            up = [t for t in candidates if t['health'] == 'UP']
            term = _least_busy(ctx, up or candidates)
        else:
            term = db.get(ctx, 'terminal', term)
            if term['site_id'] != site['id']:
                inputs.bad(field, 'terminal %s is not at site %s'
                           % (term['name'], site['name']))
        terms[field] = term
    return terms


def _least_busy(ctx, terminals):
    """The terminal with the fewest migrations under way.

    Ties are broken at random: migrations created at once read the same
    counts and would otherwise all take the first terminal (and wait for
    its devices while the other's lie unused).
    """
    if len(terminals) == 1:
        return terminals[0]
    busy = {}
    for m in db.list_(ctx, 'migration'):
        if m['state'] not in states.MIGRATION_FINAL:
            for tid in (m['source_terminal_id'], m['dest_terminal_id']):
                busy[tid] = busy.get(tid, 0) + 1
    return min(terminals, key=lambda t: (busy.get(t['id'], 0),
                                         random.random()))


def migrations_create(ctx, requests, one_shipment=False, group=None):
    """A wave: several migrations at once.

    All are validated before any is created: a bad one leaves nothing.
    ``one_shipment``: they travel together in the same shipments (a new
    ``shipment_group``, named ``group`` if given); they must share their
    source and destination.
    """
    if not requests:
        inputs.bad('migrations', 'nothing to create')
    if one_shipment:
        routes = {(r.get('source_site'), r.get('dest_site'),
                   r.get('source_terminal'), r.get('dest_terminal'))
                  for r in requests}
        if len(routes) != 1:
            inputs.bad('migrations', 'one shipment carries migrations of '
                       'one route; these go %s' % ', '.join(sorted(
                           '%s->%s' % r[:2] for r in routes)))
        group = group or 'wave-%s' % uuid.uuid4().hex[:12]
        requests = [dict(r, start=False, options=dict(
            r.get('options') or {}, shipment_group=group,
            shipment_group_closed=True)) for r in requests]
    for i, r in enumerate(requests):
        try:
            _dry_check(ctx, r)
        except exception.InvalidInput as e:
            raise exception.InvalidInput(field='migrations[%d].%s' % (
                i, e.kwargs.get('field')), reason=e.kwargs.get('reason'))
    if not one_shipment:
        return [migration_create(ctx, **r) for r in requests]
    # All exist before the first is packed: none is left behind (their
    # post locks are held until all are posted, so no sweeper posts one
    # early).
    with contextlib.ExitStack() as stack:
        made = []
        for r in requests:
            mid = str(uuid.uuid4())
            held = stack.enter_context(jobs.holding(mid))
            made.append((migration_create(ctx, _held=(mid, held), **r),
                         held))
        for m, held in made:
            jobs.post(ctx, m['id'], 'prepare', held=held)
    return [db.get(ctx, 'migration', m['id']) for m, _ in made]


def _dry_check(ctx, r):
    db.get(ctx, 'site', r.get('source_site'))
    db.get(ctx, 'site', r.get('dest_site'))
    options_mod.validate(r.get('options'))
    if not r.get('servers'):
        inputs.bad('servers', 'a migration needs at least one server')
    for i, s in enumerate(r['servers']):
        _volumes_of(s, i, r.get('pool_map') or {})


def migration_list(ctx, filters=None, limit=None, marker=None,
                   sort_key='created_at', sort_dir='desc', server=None):
    """A page of migrations; ``server``: only those moving that server."""
    filters = dict(filters or {})
    for key in filters:
        if key not in MIGRATION_FILTERS:
            inputs.bad('filter', '%r; filters are %s' % (
                key, ', '.join(MIGRATION_FILTERS)))
    if 'state' in filters:
        wanted = filters['state']
        for s in ([wanted] if isinstance(wanted, str) else wanted):
            if s not in states.MIGRATION.states:
                inputs.bad('state', '%r is not a migration state' % s)
    return [progress.annotate(m) for m in db.migration_page(
        ctx, filters, inputs.limit(limit), marker, sort_key, sort_dir,
        server=server)]


def migration_show(ctx, migration, events_limit=20):
    """A migration with its ``events_limit`` latest events (0: none).

    Older events are paged through /v1/events?migration=ID&marker=...
    """
    return progress.annotate(db.migration_get(ctx, migration, events_limit))


def migration_update(ctx, migration, options=None, name=None):
    """Change options while it runs.

    Rate cap, rate schedule, downtime budget, cutover window and mode,
    retention.
    """
    m = db.get(ctx, 'migration', migration)
    if m['state'] in states.MIGRATION_FINAL:
        raise exception.InvalidTransition(
            kind='migration', id=m['id'], current=m['state'],
            target=m['state'], reason='a finished migration cannot change')
    values = {}
    if options:
        changed = options_mod.validate(options, partial=True)
        for key in options_mod.FIXED:
            if key in changed and changed[key] != m['options'].get(key):
                inputs.bad(key, 'fixed when the migration was created')
        merged = dict(m['options'])
        merged.update(changed)
        values['options'] = options_mod.validate(merged)
    if name is not None:
        values['name'] = name
    if not values:
        inputs.bad('update', 'nothing to change')
    out = db.update(ctx, 'migration', m['id'], values)
    db.add_event(ctx, 'migration', m['id'], 'config', 'updated: %s' % (
        ', '.join('%s=%s' % kv for kv in sorted(
            (options or {}).items())) or 'name'), migration_id=m['id'])
    return progress.annotate(out)


def migration_delete(ctx, migration):
    m = db.get(ctx, 'migration', migration)
    if m['state'] not in states.MIGRATION_FINAL:
        raise exception.InvalidTransition(
            kind='migration', id=m['id'], current=m['state'],
            target='(deleted)', reason='only %s migrations are deleted; '
            'abort it first' % ' or '.join(states.MIGRATION_FINAL))
    db.delete(ctx, 'migration', m['id'])
    db.add_event(ctx, 'migration', m['id'], 'state', 'deleted',
                 migration_id=m['id'])
