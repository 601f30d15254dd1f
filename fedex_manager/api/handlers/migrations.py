"""/v1/migrations: create (after a preflight), list, show, update, delete,
and the actions abort, retry, cutover, reship."""

import urllib.parse

from oslo_config import cfg

from fedex_manager.actions import cutover as cutover_actions
from fedex_manager.actions import lifecycle
from fedex_manager.actions import migrations as migration_actions
from fedex_manager.api import errors
from fedex_manager.api import handlers
from fedex_manager.api import schemas
from fedex_manager.api import util
from fedex_manager import cloud_preflight
from fedex_manager import options as options_mod
from fedex_manager.policies import migration as rules
from fedex_manager import policy
from fedex_manager import preflight

CONF = cfg.CONF
# Events in a migration's show; older ones through /v1/events.
EVENTS_LIMIT = 20
SORT_KEYS = ('created_at', 'updated_at', 'name', 'state', 'id')
# Nova's RBD image of a server's root disk (images_type = rbd).
NOVA_DISK = 'vms/%s_disk'


def get_authorized(ctx, migration_id, rule, events_limit=0):
    """The migration, if the caller may see it and do ``rule`` on it.

    Another project's migration is not found (404, as an unknown id);
    its own project's reader gets 403 for a write.
    """
    m = migration_actions.migration_show(
        ctx, migration_id, events_limit=events_limit)
    util.authorize_visible(ctx, rules.SHOW, rule,
                           {'project_id': m['project_id'],
                            'user_id': m['user_id']},
                           'migration', migration_id)
    return m


_CLOUD = []


def _cloud():
    """Nova, Cinder and Placement of ``[nova]`` (one per process), or None."""
    if not _CLOUD:
        _CLOUD.append(cloud_preflight.Cloud.from_conf(CONF))
    return _CLOUD[0]


def _servers(body):
    """Bare server ids get their Nova root disk as their one image."""
    out = []
    for s in body['servers']:
        if isinstance(s, str):
            s = {'server_id': s, 'volumes': [NOVA_DISK % s]}
        elif not s.get('volumes'):
            s = dict(s, volumes=[NOVA_DISK % s['server_id']])
        out.append(s)
    return out


def _detached(body):
    """Detached Cinder volumes as images: their RBD image, kind volume."""
    return [dict(v, kind='volume', source_image=migration_actions.CINDER_IMAGE
                 % v['volume_id']) for v in body.get('volumes') or []]


def _volumes_site(volumes):
    """The source site of volumes moved alone: their availability zone."""
    cloud = _cloud()
    if not volumes or cloud is None:
        raise errors.HTTPError(400, 'source_site is required (it is found '
                               'from the volumes\' availability zone only '
                               'when the API has [nova] credentials)')
    _reasons, zones = cloud_preflight.volume_reasons(
        cloud, [v['volume_id'] for v in volumes])
    sites = set(zones.values())
    if len(sites) != 1 or None in sites:
        raise errors.HTTPError(400, 'source_site is required: the volumes\' '
                               'availability zones are %s' % (
                                   ', '.join(sorted(map(str, sites))) or
                                   'unknown'))
    return sites.pop()


def read_request(body, field='servers'):
    """A migration's request as create reads it: (servers, volumes, site).

    The forecast of a plan (``handlers/plans.py``) reads its ``migration``
    the same way; ``field`` names the servers in its refusal.
    """
    servers = _servers(body) if body.get('servers') else []
    volumes = _detached(body)
    if not servers and not volumes:
        raise errors.HTTPError(400, 'invalid body field %s: a migration '
                               'needs servers or volumes' % field)
    return servers, volumes, body.get('source_site') or _volumes_site(volumes)


def cloud():
    """Nova, Cinder and Placement of ``[nova]`` (one per process), or None."""
    return _cloud()


def create(req):
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.CREATE)
    body = util.extract_json(req, schemas.MIGRATION_CREATE)
    servers, volumes, source_site = read_request(body)
    options = body.get('options') or {}
    # Detached volumes are checked like a server's images (their sizes,
    # room at the destination), as one pseudo-server.
    images = servers + ([{'server_id': None, 'volumes': volumes}]
                        if volumes else [])
    _total, sizes = preflight.check(
        ctx, images, source_site, body['dest_site'],
        pool_map=body.get('pool_map'), parity=options.get(
            'parity', options_mod.DEFAULTS['parity']),
        cloud=_cloud(), dest_host=body.get('dest_host'),
        volume_ids=[v['volume_id'] for v in volumes])
    # Sizes read from the source cluster go with the images.
    for s in images:
        s['volumes'] = [
            dict({'source_image': v} if isinstance(v, str) else v,
                 size_bytes=sizes.get(v if isinstance(v, str)
                                      else v['source_image'], 0))
            for v in s['volumes']]
    m = migration_actions.migration_create(
        ctx, servers, source_site, body['dest_site'],
        volumes=images[-1]['volumes'] if volumes else None,
        name=body.get('name'), source_host=body.get('source_host'),
        dest_host=body.get('dest_host'), options=options or None,
        source_terminal=body.get('source_terminal'),
        dest_terminal=body.get('dest_terminal'),
        pool_map=body.get('pool_map'))
    return util.json_response(
        201, {'migration': migration_actions.migration_show(
            ctx, m['id'])},
        location='%s/%s' % (req.path_url, m['id']))


def list_(req):
    ctx = handlers.context(req)
    util.check_query(req, util.PAGE_PARAMS + (
        'state', 'server', 'project', 'all_projects', 'name'))
    paging = util.page(req, SORT_KEYS)
    filters = {}
    project = util.query(req, 'project')
    all_projects = util.query(req, 'all_projects', kind=bool, default=False)
    if all_projects or (project and project != ctx.project_id):
        policy.authorize(ctx, rules.LIST_ALL)
        if project:
            filters['project_id'] = project
    else:
        policy.authorize(ctx, rules.LIST)
        filters['project_id'] = ctx.project_id
    state = util.query(req, 'state')
    if state:
        filters['state'] = state.split(',') if ',' in state else state
    if util.query(req, 'name'):
        filters['name'] = util.query(req, 'name')
    items = migration_actions.migration_list(
        ctx, filters, server=util.query(req, 'server'), **paging)
    return util.list_response(req, 'migrations', items, paging)


def show(req):
    """The migration and its latest events (?events_limit=, 20 by default).

    ``events_links`` points at the next (older) page of its events in
    /v1/events when there may be more.
    """
    ctx = handlers.context(req)
    util.check_query(req, ('events_limit',))
    limit = util.query(req, 'events_limit', kind=int, default=EVENTS_LIMIT)
    if limit < 0:
        raise errors.HTTPError(
            400, 'query parameter events_limit: must be >= 0')
    limit = min(limit, CONF.api.max_limit)
    m = get_authorized(ctx, req.urlvars['migration_id'], rules.SHOW,
                       events_limit=limit)
    if limit and len(m['events']) >= limit:
        m['events_links'] = [{'rel': 'next', 'href': '%s/events?%s' % (
            req.application_url + '/v1', urllib.parse.urlencode((
                ('migration', m['id']), ('sort_dir', 'desc'),
                ('limit', limit), ('marker', m['events'][-1]['id']))))}]
    return util.json_response(200, {'migration': m})


def update(req):
    ctx = handlers.context(req)
    m = get_authorized(ctx, req.urlvars['migration_id'], rules.UPDATE)
    body = util.extract_json(req, schemas.MIGRATION_UPDATE)
    name = body.pop('name', None)
    out = migration_actions.migration_update(
        ctx, m['id'], options=body or None, name=name)
    return util.json_response(200, {'migration': out})


def delete(req):
    ctx = handlers.context(req)
    m = get_authorized(ctx, req.urlvars['migration_id'], rules.DELETE)
    migration_actions.migration_delete(ctx, m['id'])
    return util.no_content()


def action(req):
    ctx = handlers.context(req)
    body = util.extract_json(req, schemas.MIGRATION_ACTION)
    (verb, args), = body.items()
    rule = {'abort': rules.ABORT, 'retry': rules.RETRY,
            'cutover': rules.CUTOVER, 'reship': rules.RETRY}[verb]
    m = get_authorized(ctx, req.urlvars['migration_id'], rule)
    if verb == 'abort':
        out = lifecycle.migration_abort(ctx, m['id'],
                                        reason=args.get('reason'))
    elif verb == 'retry':
        out = lifecycle.migration_retry(ctx, m['id'])
    elif verb == 'cutover':
        out = cutover_actions.migration_approve_cutover(ctx, m['id'])
    else:
        out = lifecycle.migration_reship(
            ctx, m['id'], seed_over_wan=args.get('seed_over_wan', False))
    resp = util.json_response(202, {'migration': out})
    resp.location = req.path_url.rsplit('/action', 1)[0]
    return resp
