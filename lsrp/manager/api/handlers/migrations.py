"""/v1/migrations: create (after a preflight), list, show, update, delete,
and the actions abort, retry, cutover, reship."""

from lsrp.manager import actions
from lsrp.manager.api import handlers
from lsrp.manager.api import schemas
from lsrp.manager.api import util
from lsrp.manager.db import api as db
from lsrp.manager.db import models
from lsrp.manager.policies import migration as rules
from lsrp.manager import policy
from lsrp.manager import preflight

SORT_KEYS = ('created_at', 'updated_at', 'name', 'state', 'id')
# Nova's RBD image of a server's root disk (images_type = rbd).
NOVA_DISK = 'vms/%s_disk'


def _get_authorized(ctx, migration_id, rule):
    m = actions.migration_show(ctx, migration_id)
    policy.authorize(ctx, rule, {'project_id': m['project_id'],
                                 'user_id': m['user_id']})
    return m


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


def create(req):
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.CREATE)
    body = util.extract_json(req, schemas.MIGRATION_CREATE)
    servers = _servers(body)
    options = body.get('options') or {}
    _total, sizes = preflight.check(
        ctx, servers, body['source_site'], body['dest_site'],
        pool_map=body.get('pool_map'), parity=options.get('parity', 1))
    # Sizes read from the source cluster go with the images.
    for s in servers:
        s['volumes'] = [
            dict({'source_image': v} if isinstance(v, str) else v,
                 size_bytes=sizes.get(v if isinstance(v, str)
                                      else v['source_image'], 0))
            for v in s['volumes']]
    m = actions.migration_create(
        ctx, servers, body['source_site'], body['dest_site'],
        name=body.get('name'), source_host=body.get('source_host'),
        dest_host=body.get('dest_host'), options=options or None,
        source_terminal=body.get('source_terminal'),
        dest_terminal=body.get('dest_terminal'),
        pool_map=body.get('pool_map'))
    return util.json_response(
        201, {'migration': actions.migration_show(ctx, m['id'])},
        location='%s/%s' % (req.path_url, m['id']))


def _server_filter(ctx, server):
    """Ids of the migrations that move ``server``."""
    with db.reader(ctx) as session:
        rows = session.query(models.MigrationServer.migration_id).filter(
            models.MigrationServer.server_id == server).all()
    return [r[0] for r in rows]


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
    server = util.query(req, 'server')
    if server:
        ids = _server_filter(ctx, server)
        if not ids:
            return util.list_response(req, 'migrations', [], paging)
        filters['id'] = ids
    items = actions.migration_list(ctx, filters, **paging) if \
        'id' not in filters else _list_ids(ctx, filters, paging)
    return util.list_response(req, 'migrations', items, paging)


def _list_ids(ctx, filters, paging):
    ids = filters.pop('id')
    return [m for m in actions.migration_list(ctx, filters, **dict(
        paging, limit=None)) if m['id'] in ids][:paging['limit']]


def show(req):
    ctx = handlers.context(req)
    m = _get_authorized(ctx, req.urlvars['migration_id'], rules.SHOW)
    return util.json_response(200, {'migration': m})


def update(req):
    ctx = handlers.context(req)
    m = _get_authorized(ctx, req.urlvars['migration_id'], rules.UPDATE)
    body = util.extract_json(req, schemas.MIGRATION_UPDATE)
    name = body.pop('name', None)
    out = actions.migration_update(ctx, m['id'], options=body or None,
                                   name=name)
    return util.json_response(200, {'migration': out})


def delete(req):
    ctx = handlers.context(req)
    m = _get_authorized(ctx, req.urlvars['migration_id'], rules.DELETE)
    actions.migration_delete(ctx, m['id'])
    return util.no_content()


def action(req):
    ctx = handlers.context(req)
    body = util.extract_json(req, schemas.MIGRATION_ACTION)
    (verb, args), = body.items()
    rule = {'abort': rules.ABORT, 'retry': rules.RETRY,
            'cutover': rules.CUTOVER, 'reship': rules.RETRY}[verb]
    m = _get_authorized(ctx, req.urlvars['migration_id'], rule)
    if verb == 'abort':
        out = actions.migration_abort(ctx, m['id'], reason=args.get('reason'))
    elif verb == 'retry':
        out = actions.migration_retry(ctx, m['id'])
    elif verb == 'cutover':
        out = actions.migration_approve_cutover(ctx, m['id'])
    else:
        out = actions.migration_reship(
            ctx, m['id'], seed_over_wan=args.get('seed_over_wan', False))
    resp = util.json_response(202, {'migration': out})
    resp.location = req.path_url.rsplit('/action', 1)[0]
    return resp
