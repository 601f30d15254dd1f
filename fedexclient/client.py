"""The client of fedex-api v1: one attribute per part of the API.

::

    from fedexclient import client
    fedex = client.Client(session=keystone_session)
    fedex.migrations.list_all(state='CATCHING_UP')

The endpoint is the catalog's ``vm-shipping`` (or ``endpoint``, with or
without its ``/v1``), through a keystoneauth adapter: the session's token,
TLS and timeouts apply. A Nova compute passes the adapter it loads from
nova.conf instead.
"""

from keystoneauth1 import adapter as ks_adapter

from fedexclient import cutover
from fedexclient import events
from fedexclient import http
from fedexclient import logistics
from fedexclient import migrations
from fedexclient import plans
from fedexclient import waves

SERVICE_TYPE = 'vm-shipping'
CLIENT_NAME = 'fedexclient'


def _root(endpoint):
    """The API's root: requests add /v1 themselves."""
    if not endpoint:
        return None
    endpoint = endpoint.rstrip('/')
    if endpoint.endswith(http.PREFIX):
        endpoint = endpoint[:-len(http.PREFIX)]
    return endpoint


class Client(object):
    """fedex-api v1 over a keystoneauth session (or adapter)."""

    def __init__(self, session=None, endpoint=None, adapter=None,
                 service_type=SERVICE_TYPE, interface=None, region_name=None,
                 **adapter_options):
        if adapter is None:
            if session is None:
                raise ValueError('fedexclient: give a session or an adapter')
            adapter = ks_adapter.Adapter(
                session, service_type=service_type, interface=interface,
                region_name=region_name, endpoint_override=_root(endpoint),
                client_name=CLIENT_NAME, **adapter_options)
        self.http = http.HTTPClient(adapter)
        self.migrations = migrations.MigrationManager(self.http)
        self.cutover = cutover.CutoverManager(self.http)
        self.plans = plans.PlanManager(self.http)
        self.shipments = logistics.ShipmentManager(self.http)
        self.devices = logistics.DeviceManager(self.http)
        self.terminals = logistics.TerminalManager(self.http)
        self.sites = logistics.SiteManager(self.http)
        self.events = events.EventManager(self.http)
        self.waves = waves.WaveManager(self.http)
