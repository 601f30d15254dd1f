"""Shipments, devices, terminals and sites: the operator's hardware."""

from fedex_manager.actions import devices
from fedex_manager.actions import shipping
from fedex_manager.actions import sites
from fedex_manager.api import handlers
from fedex_manager.api import schemas
from fedex_manager.api import util
from fedex_manager.db import api as db
from fedex_manager.policies import logistics as rules
from fedex_manager import policy
from fedex_manager import return_trip

SORT_KEYS = ('created_at', 'updated_at', 'state', 'id')
# Terminals and sites: by name unless asked otherwise.
NAMED_SORT_KEYS = ('name', 'created_at', 'updated_at', 'id')


def _filters(req, names):
    return {column: util.query(req, param) for param, column in names.items()
            if util.query(req, param) is not None}


# --- shipments ----------------------------------------------------------------

def shipment_list(req):
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.SHIPMENT_LIST)
    util.check_query(req, util.PAGE_PARAMS + ('state', 'tracking_number',
                                              'kind'))
    paging = util.page(req, SORT_KEYS + ('name', 'tracking_number'))
    filters = _filters(req, {'state': 'state',
                             'tracking_number': 'tracking_number'})
    kind = util.query(req, 'kind', choices=(return_trip.SEED,
                                            return_trip.RETURN))
    if kind:
        filters['kind'] = kind
    items = db.list_(ctx, 'shipment', filters, **paging)
    return util.list_response(req, 'shipments', items, paging)


def shipment_show(req):
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.SHIPMENT_SHOW)
    return util.json_response(200, {'shipment': shipping.shipment_show(
        ctx, req.urlvars['shipment_id'])})


def shipment_event(req):
    """Record a carrier event of a shipment.

    Handed to carrier (with its tracking number), in transit, delivered,
    lost, damaged.
    """
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.SHIPMENT_EVENT)
    body = util.extract_json(req, schemas.SHIPMENT_EVENT)
    event = schemas.CARRIER_EVENT_ALIASES.get(body['event'], body['event'])
    s = shipping.carrier_event(
        ctx, req.urlvars['shipment_id'], event, seq=body.get('seq'),
        occurred_at=body.get('occurred_at'), location=body.get('location'),
        tracking_number=body.get('tracking_number'),
        details=body.get('details'),
        devices_missing=body.get('devices_missing'))
    return util.json_response(200, {'shipment': s})


# --- devices ------------------------------------------------------------------

def device_list(req):
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.DEVICE_LIST)
    util.check_query(req, util.PAGE_PARAMS + ('state', 'terminal',
                                              'home_terminal', 'shipment'))
    paging = util.page(req, SORT_KEYS + ('serial',))
    filters = _filters(req, {'state': 'state', 'shipment': 'shipment_id'})
    for param, column in (('terminal', 'terminal_id'),
                          ('home_terminal', 'home_terminal_id')):
        if util.query(req, param):
            filters[column] = db.get(ctx, 'terminal',
                                     util.query(req, param))['id']
    items = return_trip.describe(ctx, db.list_(ctx, 'device', filters,
                                               **paging))
    return util.list_response(req, 'devices', items, paging)


def device_show(req):
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.DEVICE_SHOW)
    return util.json_response(200, {'device': devices.device_show(
        ctx, req.urlvars['device_id'])})


def device_create(req):
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.DEVICE_CREATE)
    body = util.extract_json(req, schemas.DEVICE_CREATE)
    d = devices.device_register(
        ctx, body['serial'], body['terminal'],
        capacity_bytes=body['capacity_bytes'], slot=body.get('slot'),
        path=body.get('path'))
    d = return_trip.describe(ctx, [d])[0]
    return util.json_response(201, {'device': d},
                              location='%s/%s' % (req.path_url, d['id']))


def device_delete(req):
    """Retire a device (BLANK, ERASED or LOST; unplugged)."""
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.DEVICE_DELETE)
    devices.device_retire(ctx, req.urlvars['device_id'])
    return util.no_content()


def device_return(req):
    """Send a wiped device home; the conductor hands it to the courier."""
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.DEVICE_RETURN)
    # The body is optional: a reason, recorded in the device's events.
    body = util.extract_json(req, schemas.DEVICE_RETURN) if req.body else {}
    d = devices.device_return(ctx, req.urlvars['device_id'],
                              reason=body.get('reason'))
    return util.json_response(202, {'device': d})


def device_custody(req):
    """Who holds a device now, where: appended to its chain of custody."""
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.DEVICE_CUSTODY)
    body = util.extract_json(req, schemas.DEVICE_CUSTODY)
    d = db.get(ctx, 'device', req.urlvars['device_id'])
    when = db.utcfromiso(body['occurred_at']) if body.get(
        'occurred_at') else None
    db.add_event(ctx, 'device', d['id'], 'custody',
                 'custody: %s%s%s' % (
                     body['holder'],
                     ' at %s' % body['location'] if body.get('location')
                     else '',
                     ': %s' % body['message'] if body.get('message')
                     else ''),
                 details={'holder': body['holder']}, occurred_at=when,
                 location=body.get('location'))
    return util.json_response(201, {'device': devices.device_show(
        ctx, d['id'])})


# --- terminals ------------------------------------------------------------------

def terminal_list(req):
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.TERMINAL_LIST)
    util.check_query(req, util.PAGE_PARAMS + ('site',))
    paging = util.page(req, NAMED_SORT_KEYS, default_key='name',
                       default_dir='asc')
    return util.list_response(req, 'terminals', sites.terminal_list(
        ctx, site=util.query(req, 'site'), **paging), paging)


def terminal_show(req):
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.TERMINAL_SHOW)
    return util.json_response(200, {'terminal': sites.terminal_show(
        ctx, req.urlvars['terminal_id'])})


def terminal_register(req):
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.TERMINAL_REGISTER)
    body = util.extract_json(req, schemas.TERMINAL_CREATE)
    t = sites.terminal_register(
        ctx, body['name'], body['site'], rpc_topic=body.get('rpc_topic'),
        capacity_bytes=body.get('capacity_bytes', 0),
        slots=body.get('slots', 0), lsrp_address=body.get('lsrp_address'))
    return util.json_response(201, {'terminal': t},
                              location='%s/%s' % (req.path_url, t['id']))


def terminal_health(req):
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.TERMINAL_HEALTH)
    body = util.extract_json(req, schemas.TERMINAL_HEALTH)
    sites.terminal_heartbeat(ctx, req.urlvars['terminal_id'],
                             info=body.get('info'))
    return util.json_response(200, {'terminal': sites.terminal_show(
        ctx, req.urlvars['terminal_id'])})


# --- sites --------------------------------------------------------------------

def site_list(req):
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.SITE_LIST)
    util.check_query(req, util.PAGE_PARAMS)
    paging = util.page(req, NAMED_SORT_KEYS, default_key='name',
                       default_dir='asc')
    return util.list_response(req, 'sites', [
        _public_site(ctx, s) for s in sites.site_list(ctx, **paging)],
        paging)


def _public_site(ctx, site):
    """Ceph paths and keyrings are for admins only."""
    if policy.authorize(ctx, rules.SITE_REGISTER, fatal=False):
        return site
    return {k: v for k, v in site.items() if not k.startswith('ceph_')}


def site_show(req):
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.SITE_SHOW)
    return util.json_response(200, {'site': _public_site(
        ctx, sites.site_show(ctx, req.urlvars['site_id']))})


def site_register(req):
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.SITE_REGISTER)
    body = util.extract_json(req, schemas.SITE_CREATE)
    s = sites.site_register(ctx, **body)
    return util.json_response(201, {'site': s},
                              location='%s/%s' % (req.path_url, s['id']))
