"""/v1/events: the audit trail, by migration, shipment, type and time."""

from fedex_manager.actions import events as event_actions
from fedex_manager.api import errors
from fedex_manager.api import handlers
from fedex_manager.api.handlers import migrations as migrations_h
from fedex_manager.api import util
from fedex_manager.db import api as db
from fedex_manager.policies import planning as rules
from fedex_manager import policy

EVENT_CREATE = {
    'type': 'object', 'additionalProperties': False,
    'required': ['migration', 'message'],
    'properties': {'migration': {'type': 'string', 'minLength': 1},
                   'message': {'type': 'string', 'minLength': 1,
                               'maxLength': 4096},
                   'kind': {'enum': ['progress', 'cutover', 'note']},
                   'details': {'type': 'object'}},
}


def list_(req):
    ctx = handlers.context(req)
    util.check_query(req, ('migration', 'shipment', 'device', 'type',
                           'since', 'until', 'limit', 'marker', 'sort_dir'))
    paging = util.page(req, ('id',), default_key='id', default_dir='asc')
    migration = util.query(req, 'migration')
    resource = util.query(req, 'shipment') or util.query(req, 'device')
    if migration:
        # Another project's migration: 404, as for an unknown id.
        migrations_h.get_authorized(ctx, migration, rules.EVENT_LIST)
    else:
        # Everything else (logistics, every project) is for operators.
        policy.authorize(ctx, rules.EVENT_LIST_ALL)
    if util.query(req, 'shipment'):
        resource = db.get(ctx, 'shipment', util.query(req, 'shipment'))['id']
    elif util.query(req, 'device'):
        resource = db.get(ctx, 'device', util.query(req, 'device'))['id']
    items = event_actions.events_query(
        ctx, migration=migration, resource_id=resource,
        kind=util.query(req, 'type'), since=_time(req, 'since'),
        until=_time(req, 'until'), limit=paging['limit'],
        marker=_marker(req), sort_dir=paging['sort_dir'])
    return util.list_response(req, 'events', items, paging)


def _time(req, name):
    """A time query parameter (ISO 8601; with a zone, converted to UTC)."""
    text = util.query(req, name)
    try:
        return db.utcfromiso(text)
    except ValueError:
        raise errors.HTTPError(
            400, 'query parameter %s: %s is not an ISO 8601 time'
            % (name, util.quoted(text)))


def _marker(req):
    """Events page by their ids: integers (past any number)."""
    marker = util.query(req, 'marker', kind=int)
    if marker is not None and not 0 <= marker <= util.INT_RANGE[1]:
        raise errors.HTTPError(
            400, 'query parameter marker: %d is not an event id' % marker)
    return marker


def create(req):
    """A Nova compute or a terminal reports progress into the trail."""
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.EVENT_CREATE)
    body = util.extract_json(req, EVENT_CREATE)
    m = db.get(ctx, 'migration', body['migration'])
    ev = db.add_event(ctx, 'migration', m['id'], body.get('kind', 'note'),
                      body['message'], migration_id=m['id'],
                      details=body.get('details'))
    return util.json_response(201, {'event': ev})
