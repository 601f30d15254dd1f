"""The dashboard's only way to fedex-api: fedexclient with the user's token.

Each function takes the Django request and returns the API's JSON objects
(dicts). The endpoint comes from the user's catalog (type ``vm-shipping``);
the request goes through a keystoneauth session carrying the user's token,
so fedex-api's policy decides what the user may see and do. An error
becomes :class:`FedexAPIError`, whose message says what failed and what to
do; Horizon shows it as a message (it is registered as recoverable).
"""

import contextlib

from django.conf import settings
from keystoneauth1 import session as ks_session
from keystoneauth1 import token_endpoint

from openstack_dashboard.api import base

from fedex_dashboard import exceptions
from fedexclient import client as fedex_client
from fedexclient import exceptions as fedex_exc

FedexAPIError = exceptions.FedexAPIError

SERVICE_TYPE = fedex_client.SERVICE_TYPE


def is_available(request):
    """True when the user's catalog has fedex-api."""
    return base.is_service_enabled(request, SERVICE_TYPE)


def _client(request):
    endpoint = base.url_for(request, SERVICE_TYPE)
    auth = token_endpoint.Token(endpoint.rstrip('/'), request.user.token.id)
    verify = getattr(settings, 'OPENSTACK_SSL_CACERT', None) or not getattr(
        settings, 'OPENSTACK_SSL_NO_VERIFY', False)
    return fedex_client.Client(
        session=ks_session.Session(auth=auth, verify=verify),
        endpoint=endpoint)


@contextlib.contextmanager
def _failing(what):
    """fedexclient's errors as :class:`FedexAPIError`, saying ``what``."""
    try:
        yield
    except fedex_exc.HttpError as e:
        raise FedexAPIError(what, e.status, e.details)
    except fedex_exc.ClientException as e:
        raise FedexAPIError('%s: %s' % (what, e))


# --- migrations -------------------------------------------------------------

def migration_list(request, all_projects=False, state=None, limit=None):
    with _failing('Unable to list migrations'):
        return _client(request).migrations.list(
            all_projects=all_projects, state=state or None,
            limit=limit or None)


def migration_get(request, migration_id):
    with _failing('Unable to show migration %s' % migration_id):
        return _client(request).migrations.get(migration_id)


def wave_get(request, wave_id):
    """A wave: its servers' states, progress, ETA and cutovers."""
    with _failing('Unable to show wave %s' % wave_id):
        return _client(request).waves.get(wave_id)


def migration_create(request, servers, source_site, dest_site, name=None,
                     options=None):
    with _failing('Unable to create the migration'):
        return _client(request).migrations.create(
            dest_site, servers=servers, source_site=source_site,
            name=name or None, options=options or None)


def migration_action(request, migration_id, action, **args):
    """abort (reason=...), retry, cutover (approve), reship."""
    verb = {'approve_cutover': 'cutover'}.get(action, action)
    with _failing('Unable to %s migration %s' % (action.replace('_', ' '),
                                                 migration_id)):
        return _client(request).migrations.action(migration_id, verb,
                                                  **args)


def event_list(request, migration=None, shipment=None, device=None,
               limit=None):
    with _failing('Unable to list events'):
        return _client(request).events.list(
            migration=migration or None, shipment=shipment or None,
            device=device or None, limit=limit or None)


# --- planning, sites --------------------------------------------------------

def plan_create(request, vms, wan_bandwidth, **link):
    with _failing('Unable to compute the plan'):
        return _client(request).plans.create(vms, wan_bandwidth, **link)


def plan_forecast(request, migration, **fields):
    """The forecast of a migration request (POST /v1/plans, migration)."""
    with _failing('Unable to forecast the migration'):
        return _client(request).plans.forecast(migration, **fields)


def site_list(request):
    with _failing('Unable to list sites'):
        return _client(request).sites.list()


# --- shipments, devices -----------------------------------------------------

def shipment_list(request, state=None):
    with _failing('Unable to list shipments'):
        return _client(request).shipments.list(state=state or None)


def shipment_get(request, shipment_id):
    with _failing('Unable to show shipment %s' % shipment_id):
        return _client(request).shipments.get(shipment_id)


def shipment_event(request, shipment_id, event, tracking_number=None,
                   location=None):
    with _failing('Unable to record "%s" for shipment %s' % (event,
                                                             shipment_id)):
        return _client(request).shipments.event(
            shipment_id, event, tracking_number=tracking_number or None,
            location=location or None)


def device_list(request, shipment=None, state=None):
    with _failing('Unable to list devices'):
        return _client(request).devices.list(shipment=shipment or None,
                                             state=state or None)


def device_custody(request, device_id, holder, location=None, message=None):
    with _failing('Unable to record the custody of device %s' % device_id):
        return _client(request).devices.custody(
            device_id, holder, location=location or None,
            message=message or None)
