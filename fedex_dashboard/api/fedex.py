"""The dashboard's only way to fedex-api: thin calls with the user's token.

Each function takes the Django request and returns the API's JSON objects
(dicts). The endpoint comes from the user's catalog (type ``vm-shipping``);
the request goes through a keystoneauth session carrying the user's token,
so fedex-api's policy decides what the user may see and do. An error
becomes :class:`FedexAPIError`, whose message says what failed and what to
do; Horizon shows it as a message (it is registered as recoverable).
"""

from django.conf import settings
from keystoneauth1 import exceptions as ks_exc
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from openstack_dashboard.api import base

from fedex_dashboard import exceptions

FedexAPIError = exceptions.FedexAPIError

SERVICE_TYPE = 'vm-shipping'


def is_available(request):
    """True when the user's catalog has fedex-api."""
    return base.is_service_enabled(request, SERVICE_TYPE)


def _session(request):
    endpoint = base.url_for(request, SERVICE_TYPE)
    auth = token_endpoint.Token(endpoint.rstrip('/'), request.user.token.id)
    verify = getattr(settings, 'OPENSTACK_SSL_CACERT', None) or not getattr(
        settings, 'OPENSTACK_SSL_NO_VERIFY', False)
    return ks_session.Session(auth=auth, verify=verify)


def _details(response):
    try:
        errors = response.json().get('errors') or []
        return [e.get('detail') or e.get('title') for e in errors]
    except ValueError:
        return [response.text[:200]] if response.text else []


def _call(request, method, path, what, body=None, params=None):
    try:
        resp = _session(request).request(
            path, method, json=body, params=params, raise_exc=False,
            endpoint_filter={'service_type': SERVICE_TYPE},
            headers={'Accept': 'application/json'})
    except ks_exc.ClientException as e:
        raise FedexAPIError('%s: %s' % (what, e))
    if resp.status_code >= 400:
        raise FedexAPIError(what, resp.status_code, _details(resp))
    if resp.status_code == 204 or not resp.content:
        return None
    return resp.json()


# --- migrations -------------------------------------------------------------

def migration_list(request, all_projects=False, state=None, limit=None):
    params = {}
    if all_projects:
        params['all_projects'] = 'true'
    if state:
        params['state'] = state
    if limit:
        params['limit'] = limit
    return _call(request, 'GET', '/v1/migrations', 'Unable to list migrations',
                 params=params)['migrations']


def migration_get(request, migration_id):
    return _call(request, 'GET', '/v1/migrations/%s' % migration_id,
                 'Unable to show migration %s' % migration_id)['migration']


def migration_create(request, servers, source_site, dest_site, name=None,
                     options=None):
    body = {'servers': servers, 'source_site': source_site,
            'dest_site': dest_site}
    if name:
        body['name'] = name
    if options:
        body['options'] = options
    return _call(request, 'POST', '/v1/migrations',
                 'Unable to create the migration', body=body)['migration']


def migration_action(request, migration_id, action, **args):
    """abort (reason=...), retry, cutover (approve), reship."""
    verb = {'approve_cutover': 'cutover'}.get(action, action)
    return _call(request, 'POST', '/v1/migrations/%s/action' % migration_id,
                 'Unable to %s migration %s' % (
                     action.replace('_', ' '), migration_id),
                 body={verb: args})['migration']


def event_list(request, migration=None, shipment=None, device=None,
               limit=None):
    params = {k: v for k, v in (('migration', migration),
                                ('shipment', shipment), ('device', device),
                                ('limit', limit)) if v}
    return _call(request, 'GET', '/v1/events', 'Unable to list events',
                 params=params)['events']


# --- planning, sites --------------------------------------------------------

def plan_create(request, vms, wan_bandwidth, **link):
    body = dict(link, vms=vms, wan_bandwidth=wan_bandwidth)
    return _call(request, 'POST', '/v1/plans', 'Unable to compute the plan',
                 body=body)['plan']


def site_list(request):
    return _call(request, 'GET', '/v1/sites', 'Unable to list sites')['sites']


# --- shipments, devices -----------------------------------------------------

def shipment_list(request, state=None):
    params = {'state': state} if state else None
    return _call(request, 'GET', '/v1/shipments', 'Unable to list shipments',
                 params=params)['shipments']


def shipment_get(request, shipment_id):
    return _call(request, 'GET', '/v1/shipments/%s' % shipment_id,
                 'Unable to show shipment %s' % shipment_id)['shipment']


def shipment_event(request, shipment_id, event, tracking_number=None,
                   location=None):
    body = {'event': event}
    if tracking_number:
        body['tracking_number'] = tracking_number
    if location:
        body['location'] = location
    return _call(request, 'POST', '/v1/shipments/%s/events' % shipment_id,
                 'Unable to record "%s" for shipment %s' % (
                     event, shipment_id), body=body)['shipment']


def device_list(request, shipment=None, state=None):
    params = {k: v for k, v in (('shipment', shipment), ('state', state))
              if v}
    return _call(request, 'GET', '/v1/devices', 'Unable to list devices',
                 params=params)['devices']


def device_custody(request, device_id, holder, location=None, message=None):
    body = {'holder': holder}
    if location:
        body['location'] = location
    if message:
        body['message'] = message
    return _call(request, 'POST', '/v1/devices/%s/custody' % device_id,
                 'Unable to record the custody of device %s' % device_id,
                 body=body)['device']
