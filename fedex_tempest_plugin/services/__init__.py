"""Service clients of the plugin (registered by plugin.get_service_clients:
``os_<credentials>.fedex.FedexClient()``)."""

from fedex_tempest_plugin.services.fedex_client import FedexClient

__all__ = ['FedexClient']
