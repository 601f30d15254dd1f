"""The manager's Python facade: what the REST API, the CLI and Nova call.

Every function takes a :class:`fedex_manager.context.RequestContext` first
and returns plain dicts (JSON-ready). Bad input raises
:class:`lsrp.exception.InvalidInput`; a missing record
:class:`~lsrp.exception.NotFound`; an action the state forbids
:class:`~lsrp.exception.InvalidTransition` naming both states. Nothing here
waits for terminals: work is posted to the conductors as jobs
(:mod:`fedex_manager.jobs`).
"""

import contextlib
import datetime
import random
import re
import uuid

from oslo_config import cfg
from oslo_log import log as logging

from lsrp import exception
from fedex_manager.db import api as db
from fedex_manager import jobs
from fedex_manager import options as options_mod
from fedex_manager import rpc
from fedex_manager import states

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

IMAGE_SPEC = re.compile(r'^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$')
MIGRATION_FILTERS = ('state', 'project_id', 'source_site_id', 'dest_site_id',
                     'name')
HEARTBEAT_TIMEOUT = 60
APPROVED = 'cutover approved'


def _bad(field, reason):
    raise exception.InvalidInput(field=field, reason=reason)


def _limit(limit):
    if limit is None:
        return None
    try:
        limit = int(limit)
    except (TypeError, ValueError):
        _bad('limit', '%r is not a number' % (limit,))
    if limit < 1:
        _bad('limit', 'must be at least 1, got %d' % limit)
    return limit


# --- sites and terminals --------------------------------------------------------

def site_register(ctx, name, ceph_conf=None, ceph_keyring=None,
                  ceph_client='admin', availability_zone=None,
                  aggregate=None):
    if not name:
        _bad('name', 'a site needs a name')
    return db.create(ctx, 'site', dict(
        name=name, ceph_conf=ceph_conf, ceph_keyring=ceph_keyring,
        ceph_client=ceph_client, availability_zone=availability_zone,
        aggregate=aggregate))


def site_list(ctx, limit=None, marker=None, sort_key='name',
              sort_dir='asc'):
    return db.list_(ctx, 'site', limit=limit, marker=marker,
                    sort_key=sort_key, sort_dir=sort_dir)


def site_show(ctx, site):
    return db.get(ctx, 'site', site)


def terminal_register(ctx, name, site, rpc_topic=None, capacity_bytes=0,
                      slots=0, lsrp_address=None):
    site = db.get(ctx, 'site', site)
    try:
        existing = db.get(ctx, 'terminal', name)
    except exception.NotFound:
        existing = None
    values = dict(site_id=site['id'],
                  rpc_topic=rpc_topic or rpc.terminal_topic(name),
                  capacity_bytes=capacity_bytes, slots=slots,
                  lsrp_address=lsrp_address)
    if existing:
        # A terminal re-registers at every start: same name, new details.
        return db.update(ctx, 'terminal', existing['id'], values)
    values['name'] = name
    values['state'] = 'UNKNOWN'
    return db.create(ctx, 'terminal', values)


def terminal_heartbeat(ctx, name, info=None):
    """A terminal's heartbeat; ``info['lsrp']`` is its data port's health.

    A terminal whose lsrp-server does not complete a TLS handshake (it
    still recovers after a restart, or died) is DOWN although its agent
    answers: catch-up rounds from its peers would fail on it.
    """
    term = db.get(ctx, 'terminal', name)
    was = term['state']
    state = 'DOWN' if (info or {}).get('lsrp') == 'DOWN' else 'UP'
    term = _heartbeat(ctx, term, info, state)
    if was != state:
        db.add_event(ctx, 'terminal', term['id'], 'health',
                     'terminal %s is up (was %s)' % (name, was)
                     if state == 'UP' else
                     'terminal %s: its agent answers but its LSRP port '
                     'does not accept connections (was %s)' % (name, was))
    return term


def _heartbeat(ctx, term, info, state='UP'):
    with db.writer(ctx) as session:
        row = db._get(session, 'terminal', term['id'])
        row.last_heartbeat = db.now()
        row.state = state
        if info is not None:
            row.info = info
        session.flush()
        return row.as_dict()


def _health(term, now=None):
    now = now or db.now()
    beat = db.utcfromiso(term.get('last_heartbeat'))
    if beat is None:
        term['health'] = 'UNKNOWN'
    else:
        age = (now - beat).total_seconds()
        term['heartbeat_age'] = round(age, 1)
        term['health'] = 'UP' if age <= HEARTBEAT_TIMEOUT and \
            term.get('state') != 'DOWN' else 'DOWN'
    return term


def terminal_list(ctx, site=None, limit=None, marker=None, sort_key='name',
                  sort_dir='asc'):
    filters = {}
    if site:
        filters['site_id'] = db.get(ctx, 'site', site)['id']
    return [_health(t) for t in db.list_(
        ctx, 'terminal', filters, limit=limit, marker=marker,
        sort_key=sort_key, sort_dir=sort_dir)]


def terminal_show(ctx, terminal):
    return _health(db.get(ctx, 'terminal', terminal))


# --- migrations ------------------------------------------------------------------

def _volumes_of(server, index, dest_pool_map):
    vols = server.get('volumes') or []
    if not vols:
        _bad('servers[%d].volumes' % index, 'a server needs at least one '
             'RBD image (its disks and volumes)')
    out = []
    for j, v in enumerate(vols):
        field = 'servers[%d].volumes[%d]' % (index, j)
        if isinstance(v, str):
            v = {'source_image': v}
        src = v.get('source_image')
        if not src or not IMAGE_SPEC.match(src):
            _bad(field + '.source_image', '%r is not POOL/IMAGE' % (src,))
        dest = v.get('dest_image')
        if dest is None:
            pool, name = src.split('/', 1)
            dest = '%s/%s' % (dest_pool_map.get(pool, pool), name)
        if not IMAGE_SPEC.match(dest):
            _bad(field + '.dest_image', '%r is not POOL/IMAGE' % (dest,))
        size = v.get('size_bytes', 0)
        if not isinstance(size, int) or size < 0:
            _bad(field + '.size_bytes', '%r is not a size' % (size,))
        out.append(dict(server_id=server.get('server_id'),
                        volume_id=v.get('volume_id'),
                        kind=v.get('kind', 'volume'), source_image=src,
                        dest_image=dest, size_bytes=size))
    return out


# The RBD image of a Cinder volume (the RBD driver's pool ``volumes``).
CINDER_IMAGE = 'volumes/volume-%s'


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
    if not isinstance(servers, list) or not (servers or volumes):
        _bad('servers', 'a migration needs at least one server or volume')
    if volumes is not None and (not isinstance(volumes, list) or any(
            not isinstance(v, dict) or not (v.get('volume_id') or
                                            v.get('source_image'))
            for v in volumes)):
        _bad('volumes', 'a list of {"volume_id": ..., "source_image": ...}')
    src = db.get(ctx, 'site', source_site)
    dst = db.get(ctx, 'site', dest_site)
    if src['id'] == dst['id']:
        _bad('dest_site', 'source and destination are both %s'
             % src['name'])
    opts = options_mod.validate(options)
    terms = {}
    for field, term, site in (('source_terminal', source_terminal, src),
                              ('dest_terminal', dest_terminal, dst)):
        if term is None:
            candidates = terminal_list(ctx, site['id'])
            if not candidates:
                _bad(field, 'site %s has no terminal; register one'
                     % site['name'])
            up = [t for t in candidates if t['health'] == 'UP']
            term = _least_busy(ctx, up or candidates)
        else:
            term = db.get(ctx, 'terminal', term)
            if term['site_id'] != site['id']:
                _bad(field, 'terminal %s is not at site %s'
                     % (term['name'], site['name']))
        terms[field] = term
    server_rows, volume_rows, seen = [], [], set()
    for i, server in enumerate(servers):
        if not isinstance(server, dict):
            _bad('servers[%d]' % i, 'not an object')
        server_rows.append(dict(server_id=server.get('server_id') or
                                'server-%d' % i, name=server.get('name'),
                                state='LOCKED'))
        for v in _volumes_of(server, i, pool_map or {}):
            if v['source_image'] in seen:
                _bad('servers[%d].volumes' % i, 'image %s is listed twice'
                     % v['source_image'])
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
                _bad('volumes', 'image %s is listed twice'
                     % v['source_image'])
            seen.add(v['source_image'])
            volume_rows.append(v)
    if opts.get('shipment_group'):
        from fedex_manager import shipments
        shipments.check_join(ctx, opts['shipment_group'],
                             terms['source_terminal']['id'],
                             terms['dest_terminal']['id'])
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


def migrations_create(ctx, requests, one_shipment=False):
    """A wave: several migrations at once.

    All are validated before any is created: a bad one leaves nothing.
    ``one_shipment``: they travel together in the same shipments (a new
    ``shipment_group``); they must share their source and destination.
    """
    if not requests:
        _bad('migrations', 'nothing to create')
    if one_shipment:
        routes = {(r.get('source_site'), r.get('dest_site'),
                   r.get('source_terminal'), r.get('dest_terminal'))
                  for r in requests}
        if len(routes) != 1:
            _bad('migrations', 'one shipment carries migrations of one '
                 'route; these go %s' % ', '.join(sorted(
                     '%s->%s' % r[:2] for r in routes)))
        group = 'wave-%s' % uuid.uuid4().hex[:12]
        requests = [dict(r, start=False, options=dict(
            r.get('options') or {}, shipment_group=group)) for r in requests]
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
    for i, s in enumerate(r.get('servers') or [None]):
        if not isinstance(s, dict):
            _bad('servers', 'a migration needs at least one server')
        _volumes_of(s, i, r.get('pool_map') or {})


def migration_list(ctx, filters=None, limit=None, marker=None,
                   sort_key='created_at', sort_dir='desc', server=None):
    """A page of migrations; ``server``: only those moving that server."""
    filters = dict(filters or {})
    for key in filters:
        if key not in MIGRATION_FILTERS:
            _bad('filter', '%r; filters are %s' % (
                key, ', '.join(MIGRATION_FILTERS)))
    if 'state' in filters:
        wanted = filters['state']
        for s in ([wanted] if isinstance(wanted, str) else wanted):
            if s not in states.MIGRATION.states:
                _bad('state', '%r is not a migration state' % s)
    return [_progress(m) for m in db.migration_page(
        ctx, filters, _limit(limit), marker, sort_key, sort_dir,
        server=server)]


# Nothing moves any more: no rate, no ETA (the last ones recorded are of a
# catch-up round long over).
_AT_REST = (states.COMPLETED, states.FAILED) + states.MIGRATION_FINAL


def _progress(m):
    total, done = m['bytes_total'] or 0, m['bytes_done'] or 0
    moving = m['state'] not in _AT_REST
    m['progress'] = {
        'bytes_total': total, 'bytes_done': done,
        'percent': round(100.0 * done / total, 1) if total else None,
        'rate': m.get('rate') if moving else None,
        'eta_seconds': m.get('eta_seconds') if moving else None,
        'rounds': m.get('rounds'),
        'last_round_bytes': m.get('last_round_bytes')}
    m['allowed_actions'] = _allowed(m)
    return m


def _allowed(m):
    events = states.MIGRATION.events(m['state'])
    out = []
    if 'abort' in events:
        out.append('abort')
    if any(e.startswith('retry_') for e in events):
        out.append('retry')
    if m['state'] == states.READY_FOR_CUTOVER and not m['cutover_approved']:
        out.append('approve_cutover')
    if m['state'] in states.MIGRATION_FINAL:
        out.append('delete')
    if m['state'] == states.COMPLETED:
        out.append('cleanup')
    if m['state'] == states.IN_TRANSIT:
        out += ['reship', 'seed_over_wan']
    return out


def migration_show(ctx, migration, events_limit=20):
    """A migration with its ``events_limit`` latest events (0: none).

    Older events are paged through /v1/events?migration=ID&marker=...
    """
    return _progress(db.migration_get(ctx, migration, events_limit))


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
                _bad(key, 'fixed when the migration was created')
        merged = dict(m['options'])
        merged.update(changed)
        values['options'] = options_mod.validate(merged)
    if name is not None:
        values['name'] = name
    if not values:
        _bad('update', 'nothing to change')
    out = db.update(ctx, 'migration', m['id'], values)
    db.add_event(ctx, 'migration', m['id'], 'config', 'updated: %s' % (
        ', '.join('%s=%s' % kv for kv in sorted(
            (options or {}).items())) or 'name'), migration_id=m['id'])
    return _progress(out)


def migration_abort(ctx, migration, reason=None):
    m = db.transition(ctx, 'migration', migration, 'abort',
                      message='abort requested%s' % (
                          ': %s' % reason if reason else ''))
    jobs.post(ctx, m['id'], 'abort')
    return _progress(m)


def migration_retry(ctx, migration):
    m = db.get(ctx, 'migration', migration)
    if m['state'] != states.FAILED:
        raise exception.InvalidTransition(
            kind='migration', id=m['id'], current=m['state'],
            target=m['failed_in'] or '(its last state)',
            reason='only a FAILED migration is retried')
    back = m['failed_in'] or states.SNAPSHOTTING
    m = db.transition(ctx, 'migration', m['id'], 'retry_' + back.lower(),
                      values={'last_error': None},
                      message='retry in %s' % back)
    jobs.post(ctx, m['id'], jobs.PHASE_OF_STATE[back])
    return _progress(m)


def migration_approve_cutover(ctx, migration):
    m = db.get(ctx, 'migration', migration)
    if m['state'] not in (states.READY_FOR_CUTOVER, states.CATCHING_UP,
                          states.ROLLED_BACK) and \
            m['state'] not in states.MIGRATION_STABLE[:4]:
        raise exception.InvalidTransition(
            kind='migration', id=m['id'], current=m['state'],
            target=states.CUTTING_OVER,
            reason='the cutover can no longer be approved')
    m = db.update(ctx, 'migration', m['id'], {'cutover_approved': True})
    db.add_event(ctx, 'migration', m['id'], 'config', APPROVED,
                 migration_id=m['id'])
    return _progress(m)


def cutover_max_attempts():
    """[conductor] cutover_max_attempts, in every process that calls us.

    fedex-api and ``fedex-sandbox demo`` read it too, and register only the
    options of their own: registering the same options again is a no-op.
    """
    from fedex_manager import opts    # late: opts imports our importers
    CONF.register_opts(opts.conductor_opts, group='conductor')
    return CONF.conductor.cutover_max_attempts


def cutover_ready(ctx, migration):
    """For Nova: may the cutover start now? (state, approval, window)."""
    m = db.get(ctx, 'migration', migration)
    reasons = []
    if m['state'] not in (states.READY_FOR_CUTOVER, states.ROLLED_BACK):
        reasons.append('state is %s, not READY_FOR_CUTOVER' % m['state'])
    if m['options'].get('cutover') == 'approved' and \
            not m['cutover_approved']:
        reasons.append('the cutover is not approved')
    rollbacks = cutover_rollbacks(ctx, m)
    if rollbacks >= cutover_max_attempts():
        reasons.append(
            'the cutover rolled back %d times since it was last approved '
            '([conductor] cutover_max_attempts = %d): approve it again '
            '(openstack fedex migration cutover %s)' % (
                rollbacks, cutover_max_attempts(), m['id']))
    if not options_mod.in_cutover_window(m['options']):
        reasons.append('outside the cutover window %s-%s UTC' % (
            m['options']['cutover_window']['start'],
            m['options']['cutover_window']['end']))
    return {'ready': not reasons, 'reasons': reasons, 'state': m['state'],
            'last_round_bytes': m['last_round_bytes'],
            'downtime_budget': m['options'].get('downtime_budget')}


def cutover_rollbacks(ctx, m):
    """Rollbacks of the cutover since the operator last approved it."""
    count = 0
    for e in db.events(ctx, {'migration_id': m['id']}):
        if e['kind'] == 'config' and e['message'] == APPROVED:
            count = 0
        elif e['to_state'] == states.ROLLED_BACK:
            count += 1
    return count


def migration_cutover_start(ctx, migration):
    """Nova (or the stand-in) starts the cutover: READY -> CUTTING_OVER."""
    ready = cutover_ready(ctx, migration)
    if not ready['ready']:
        m = db.get(ctx, 'migration', migration)
        raise exception.InvalidTransition(
            kind='migration', id=m['id'], current=m['state'],
            target=states.CUTTING_OVER, reason='; '.join(ready['reasons']))
    m = db.transition(ctx, 'migration', migration, 'cutover')
    # The cutover phase runs the final delta (the VM paused by Nova).
    jobs.post(ctx, m['id'], 'cutover')
    return _progress(db.get(ctx, 'migration', m['id']))


def final_delta_status(ctx, migration):
    """For Nova, after migration_cutover_start: is the final delta in?

    Returns {"done": bool, "failed": bool, "snapshot": the snapshot both
    sites now hold, "error": ...}. When done, the destination images equal
    the source at ``snapshot``: Nova may switch the VM over, then call
    migration_cutover_finish.
    """
    m = db.get(ctx, 'migration', migration)
    ops = [o for o in db.list_(ctx, 'operation', {
        'migration_id': m['id'], 'kind': 'final_delta'},
        sort_key='created_at', sort_dir='desc')]
    op = ops[0] if ops else None
    done = bool(op and op['state'] == 'DONE')
    return {'done': done, 'failed': bool(op and op['state'] == 'ERROR'),
            'snapshot': (op['result'] or {}).get('snapshot') if done
            else None, 'error': op and op['error'], 'state': m['state']}


def migration_cutover_finish(ctx, migration, success=True, reason=None):
    """Nova reports the cutover's end: COMPLETED, or ROLLED_BACK.

    Rolled back: the VM still runs at the source; catch-up goes on.
    """
    if success:
        _volumes_to_destination(ctx, migration)
        m = db.transition(ctx, 'migration', migration, 'complete',
                          values={'finished_at': db.now()})
        return _progress(m)
    m = db.transition(ctx, 'migration', migration, 'rollback',
                      values={'last_error': reason},
                      message='cutover rolled back: %s' % reason)
    rollbacks = cutover_rollbacks(ctx, m)
    if rollbacks >= cutover_max_attempts():
        db.add_event(
            ctx, 'migration', m['id'], 'cutover',
            'no more automatic cutovers: %d rollbacks since the last '
            'approval ([conductor] cutover_max_attempts); catch-up goes on '
            'and the cutover waits for the operator\'s approval (openstack '
            'fedex migration cutover %s)' % (rollbacks, m['id']),
            migration_id=m['id'])
    m = db.transition(ctx, 'migration', m['id'], 'catch_up')
    jobs.post(ctx, m['id'], 'catchup')
    return _progress(m)


def _volumes_to_destination(ctx, migration):
    """Cinder volumes of the migration become the destination site's.

    The server already runs at B: a failure here does not undo that, it is
    recorded for the operator (``cinder-fedex-reconcile`` finishes it).
    """
    from fedex_manager import cinder

    m = db.get(ctx, 'migration', migration)
    try:
        cinder.cutover(m)
    except Exception as e:
        LOG.error('migration %s: volumes not moved in Cinder: %s', m['id'], e)
        db.add_event(ctx, 'migration', m['id'], 'cutover',
                     'Cinder ownership move failed (run '
                     'cinder-fedex-reconcile --apply): %s' % e,
                     migration_id=m['id'])
    else:
        if cinder.cinder_volumes(m):
            db.add_event(ctx, 'migration', m['id'], 'cutover',
                         'Cinder volumes %s belong to site %s' % (
                             ', '.join(v['volume_id'] for v in
                                       cinder.cinder_volumes(m)),
                             db.get(ctx, 'site', m['dest_site_id'])['name']),
                         migration_id=m['id'])


def migration_cleanup(ctx, migration):
    """Clean up a COMPLETED migration now, before its retention ends.

    Devices crypto-erased, the key destroyed, our snapshots removed.
    """
    m = db.get(ctx, 'migration', migration)
    if m['state'] != states.COMPLETED:
        raise exception.InvalidTransition(
            kind='migration', id=m['id'], current=m['state'],
            target=states.CLEANED, reason='only a COMPLETED migration is '
            'cleaned up')
    jobs.post(ctx, m['id'], 'cleanup')
    return _progress(db.get(ctx, 'migration', m['id']))


def migration_reship(ctx, migration, seed_over_wan=False):
    """A lost, damaged or tampered shipment: ship again, or use the WAN.

    Re-shipping exports again from the same base snapshot.
    """
    event = 'seed_over_wan' if seed_over_wan else 'reship'
    m = db.transition(ctx, 'migration', migration, event)
    db.volumes_update(ctx, m['id'], {'shipment_id': None})
    jobs.post(ctx, m['id'], 'catchup' if seed_over_wan else 'prepare')
    return _progress(m)


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


# --- shipments and devices ---------------------------------------------------

def shipment_list(ctx, filters=None, limit=None, marker=None):
    return db.list_(ctx, 'shipment', filters, _limit(limit), marker)


def shipment_show(ctx, shipment):
    s = db.get(ctx, 'shipment', shipment)
    s['migrations'] = sorted({
        v['migration_id'] for m in db.list_(ctx, 'migration')
        for v in m['volumes'] if v['shipment_id'] == s['id']})
    s['events'] = db.events(ctx, {'resource_id': s['id']})
    return s


def device_register(ctx, serial, terminal, capacity_bytes=0, slot=None,
                    path=None):
    """A terminal registers a blank device plugged into it."""
    if not serial or not re.match(r'^[A-Za-z0-9._:-]{1,128}$', serial):
        _bad('serial', '%r is not a device serial' % (serial,))
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
    return db.list_(ctx, 'device', filters, _limit(limit), marker)


def device_show(ctx, device):
    d = db.get(ctx, 'device', device)
    d['events'] = db.events(ctx, {'resource_id': d['id']})
    return d


CARRIER_EVENTS = ('hand_over', 'depart', 'scan', 'deliver', 'lose',
                  'damage', 'return')


def carrier_event(ctx, shipment, event, seq=None, occurred_at=None,
                  location=None, tracking_number=None, details=None,
                  devices_missing=None):
    """Record a carrier's event (manual or a courier plugin).

    ``seq`` (the carrier's event number) makes duplicates harmless: one at
    or below the last seen is recorded and ignored. An event the shipment's
    state does not allow (out of order) is recorded and refused.
    """
    if event not in CARRIER_EVENTS:
        _bad('event', '%r; carrier events are %s' % (
            event, ', '.join(CARRIER_EVENTS)))
    s = db.get(ctx, 'shipment', shipment)
    when = db.utcfromiso(occurred_at) if occurred_at else None
    if event == 'return':
        from fedex_manager import custody
        need = [m['id'] for m in custody.migrations_of(ctx, s['id'])
                if m['state'] not in states.MIGRATION_FINAL]
        if need:
            _bad('event', 'return: shipment %s carries migration(s) %s, '
                 'not aborted; only an aborted migration\'s devices go back '
                 'to the sender' % (s['name'], ', '.join(need)))
    missing = sorted(set(devices_missing or []))
    if event == 'deliver' and len(missing) > s['parity']:
        # More devices missing than parity covers: the data did not come.
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
    from fedex_manager import custody    # late: custody imports actions
    custody.after_carrier_event(ctx, s, event, missing)
    s['ignored'] = False
    return s


# --- events ----------------------------------------------------------------------

def events_query(ctx, migration=None, resource_id=None, kind=None,
                 since=None, limit=100, marker=None, sort_dir='asc'):
    filters = {}
    if migration:
        filters['migration_id'] = db.migration_get(ctx, migration)['id']
    if resource_id:
        filters['resource_id'] = resource_id
    if kind:
        filters['kind'] = kind
    if since is not None and not isinstance(since, datetime.datetime):
        try:
            since = db.utcfromiso(since)
        except ValueError:
            _bad('since', '%r is not an ISO 8601 time' % (since,))
    return db.events(ctx, filters, _limit(limit), marker, since, sort_dir)
