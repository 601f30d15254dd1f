"""/v1/waves: servers moved together (one migration each, one shipment).

A wave is a view over its migrations, so it is authorized by the
migrations' rules: creating one is creating migrations, showing it shows
them, its cutover approves theirs, its abort aborts them.
"""

from fedex_manager.actions import wave as wave_actions
from fedex_manager.api import handlers
from fedex_manager.api.handlers import migrations as migrations_h
from fedex_manager.api import schemas
from fedex_manager.api import util
from fedex_manager import options as options_mod
from fedex_manager.policies import migration as rules
from fedex_manager import policy
from fedex_manager import preflight


def _authorized(ctx, wave_id, rule):
    """The wave's members' project, if the caller may do ``rule``.

    Another project's wave is not found, as an unknown id.
    """
    shown = wave_actions.wave_show(ctx, wave_id)
    util.authorize_visible(ctx, rules.SHOW, rule,
                           {'project_id': shown['project_id']}, 'wave',
                           wave_id)
    return shown


def create(req):
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.CREATE)
    body = util.extract_json(req, schemas.WAVE_CREATE)
    servers, _volumes, source_site = migrations_h.read_request(body)
    options = body.get('options') or {}
    # One preflight for the wave: the room at the destination is for all
    # its servers together.
    _total, sizes = preflight.check(
        ctx, servers, source_site, body['dest_site'],
        pool_map=body.get('pool_map'), parity=options.get(
            'parity', options_mod.DEFAULTS['parity']),
        cloud=migrations_h.cloud(), dest_host=body.get('dest_host'))
    for s in servers:
        s['volumes'] = [
            dict({'source_image': v} if isinstance(v, str) else v,
                 size_bytes=sizes.get(v if isinstance(v, str)
                                      else v['source_image'], 0))
            for v in s['volumes']]
    wave = wave_actions.wave_create(
        ctx, servers, source_site, body['dest_site'], name=body.get('name'),
        source_host=body.get('source_host'),
        dest_host=body.get('dest_host'), options=options or None,
        source_terminal=body.get('source_terminal'),
        dest_terminal=body.get('dest_terminal'),
        pool_map=body.get('pool_map'))
    return util.json_response(201, {'wave': wave},
                              location='%s/%s' % (req.path_url, wave['id']))


def list_(req):
    ctx = handlers.context(req)
    util.check_query(req, ('all_projects',))
    if util.query(req, 'all_projects', kind=bool, default=False):
        policy.authorize(ctx, rules.LIST_ALL)
        project = None
    else:
        policy.authorize(ctx, rules.LIST)
        project = ctx.project_id
    return util.json_response(200, {'waves': wave_actions.wave_list(
        ctx, project_id=project)})


def show(req):
    ctx = handlers.context(req)
    util.check_query(req, ())
    return util.json_response(200, {'wave': _authorized(
        ctx, req.urlvars['wave_id'], rules.SHOW)})


def action(req):
    ctx = handlers.context(req)
    body = util.extract_json(req, schemas.WAVE_ACTION)
    (verb, args), = body.items()
    rule = {'abort': rules.ABORT, 'cutover': rules.CUTOVER}[verb]
    wave = _authorized(ctx, req.urlvars['wave_id'], rule)
    if verb == 'cutover':
        out = wave_actions.wave_cutover(ctx, wave['id'])
    else:
        out = wave_actions.wave_abort(ctx, wave['id'],
                                      reason=args.get('reason'))
    resp = util.json_response(202, {'wave': out})
    resp.location = req.path_url.rsplit('/action', 1)[0]
    return resp
