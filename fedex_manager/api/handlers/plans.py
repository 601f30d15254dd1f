"""/v1/plans: the ship-or-WAN planner over HTTP; each plan is kept.

POST computes a plan and stores it (the request, the parsed inputs and
the result) in the caller's project; GET lists them (newest first,
summaries) and shows one whole; DELETE forgets one. A POST with
``migration`` (a body of POST /v1/migrations) is the forecast of that
request, from its own servers, link and courier
(:mod:`fedex_manager.actions.plans`); one with ``vms`` is the fleet
planner's, from the figures given.
"""

from fedex_manager.actions import plans as plan_actions
from fedex_manager.api import handlers
from fedex_manager.api.handlers import migrations as migration_handlers
from fedex_manager.api import schemas
from fedex_manager.api import util
from fedex_manager.db import api as db
from fedex_manager import planner
from fedex_manager.policies import planning as rules
from fedex_manager import policy

SORT_KEYS = ('created_at', 'name', 'id')


def build(body):
    """VMProfiles and a Link from a plan body; units parsed, fields named."""
    vms = []
    for i, vm in enumerate(body['vms']):
        field = 'vms/%d/' % i
        size = planner.parse_size(vm['size'], field + 'size')
        vms.append(planner.VMProfile(
            size=size,
            allocated=planner.parse_size(vm.get('allocated', size),
                                         field + 'allocated'),
            write_rate=planner.parse_rate(vm.get('write_rate', 0),
                                          field + 'write_rate'),
            memory=planner.parse_size(vm.get('memory', 0), field + 'memory'),
            dirty_rate=planner.parse_rate(vm['dirty_rate'],
                                          field + 'dirty_rate')
            if 'dirty_rate' in vm else None,
            count=vm.get('count', 1)))
    link = {'wan_bandwidth': planner.parse_rate(body['wan_bandwidth'],
                                                'wan_bandwidth')}
    for key in ('device_write_rate', 'device_read_rate'):
        if key in body:
            link[key] = planner.parse_rate(body[key], key)
    if 'device_capacity' in body:
        link['device_capacity'] = planner.parse_size(body['device_capacity'],
                                                     'device_capacity')
    for key in ('transit_time', 'downtime_budget'):
        if key in body:
            link[key] = planner.parse_duration(body[key], key)
    for key in ('device_slots', 'parity', 'cost_per_shipment', 'cost_per_device',
                'wan_cost_per_gb'):
        if key in body:
            link[key] = body[key]
    return vms, planner.Link(**link)


def forecast(ctx, body):
    """The forecast of ``body['migration']``: (result, inputs, servers)."""
    request = body['migration']
    # The servers' images and the volumes' source site as a POST
    # /v1/migrations of the same body would read them.
    servers, volumes, source_site = migration_handlers.read_request(
        request, field='migration.servers')
    request = dict(request, source_site=source_site)
    result = plan_actions.request_forecast(
        ctx, request, servers, volumes, cloud=migration_handlers.cloud(),
        dirty_rate=body.get('dirty_rate'), write_rate=body.get('write_rate'))
    inputs = {'servers': result['servers'], 'link': result['link'],
              'assumes': result['assumes']}
    return result, inputs, len(result['servers'])


def _body(req):
    """The body, checked against the fleet plan's or the forecast's schema."""
    raw = util.extract_json(req, {'type': 'object'})
    # A forecast's own fields without its migration: the forecast's schema,
    # whose error names the missing migration (not the fleet plan's vms).
    forecast_only = set(schemas.PLAN_FORECAST['properties']) - set(
        schemas.PLAN_CREATE['properties'])
    return util.extract_json(req, schemas.PLAN_FORECAST
                             if forecast_only & set(raw)
                             else schemas.PLAN_CREATE)


def create(req):
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.PLAN_CREATE)
    body = _body(req)
    if 'migration' in body:
        result, inputs, count = forecast(ctx, body)
        return _store(req, ctx, body, result, inputs, count)
    vms, link = build(body)
    result = planner.plan(vms, link).as_dict()
    inputs = {'vms': [vars(v) for v in vms], 'link': vars(link)}
    if body.get('curve'):
        average = planner.average_vm(vms)
        result['curve'] = [{'vms': c, 'wan_seconds': w, 'fedex_seconds': f}
                           for c, w, f in planner.curve(average, link,
                                                        body['curve'])]
    return _store(req, ctx, body, result, inputs,
                  sum(v.count for v in vms))


def _store(req, ctx, body, result, inputs, count):
    row = db.create(ctx, 'plan', {
        'name': body.get('name'), 'project_id': ctx.project_id,
        'user_id': ctx.user_id, 'recommended': result.get('recommended'),
        'vms': count, 'request': body, 'inputs': inputs, 'result': result})
    return util.json_response(201, {'plan': _whole(row)},
                              location='%s/%s' % (req.path_url, row['id']))


def _whole(row):
    """The plan as POST always answered (result, inputs) plus its record."""
    out = dict(row['result'])
    out.update({k: row[k] for k in ('id', 'name', 'project_id', 'user_id',
                                    'created_at', 'request')})
    out['inputs'] = row['inputs']
    return out


def _summary(row):
    res = row['result'] or {}
    return {'id': row['id'], 'name': row['name'],
            'project_id': row['project_id'], 'created_at': row['created_at'],
            'vms': row['vms'], 'recommended': row['recommended'],
            'wan_total_time': (res.get('wan') or {}).get('total_time'),
            'fedex_total_time': (res.get('fedex') or {}).get('total_time'),
            'break_even_vms': res.get('break_even_vms')}


def list_(req):
    ctx = handlers.context(req)
    util.check_query(req, util.PAGE_PARAMS + ('project', 'all_projects'))
    paging = util.page(req, SORT_KEYS)
    project = util.query(req, 'project')
    filters = {}
    if util.query(req, 'all_projects', kind=bool, default=False) or (
            project and project != ctx.project_id):
        policy.authorize(ctx, rules.PLAN_LIST_ALL)
        if project:
            filters['project_id'] = project
    else:
        policy.authorize(ctx, rules.PLAN_LIST,
                         {'project_id': ctx.project_id})
        filters['project_id'] = ctx.project_id
    rows = db.list_(ctx, 'plan', filters, **paging)
    return util.list_response(req, 'plans', [_summary(r) for r in rows],
                              paging)


def show(req):
    ctx = handlers.context(req)
    row = db.get(ctx, 'plan', req.urlvars['plan_id'])
    policy.authorize(ctx, rules.PLAN_SHOW, {'project_id': row['project_id'],
                                            'user_id': row['user_id']})
    return util.json_response(200, {'plan': _whole(row)})


def delete(req):
    ctx = handlers.context(req)
    row = db.get(ctx, 'plan', req.urlvars['plan_id'])
    policy.authorize(ctx, rules.PLAN_DELETE, {'project_id': row['project_id'],
                                              'user_id': row['user_id']})
    db.delete(ctx, 'plan', row['id'])
    return util.no_content()
