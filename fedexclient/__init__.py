"""The client library of fedex-api: see :mod:`fedexclient.client`.

It needs keystoneauth1 only (``pip install openstack-fedex[client]``); it
imports nothing of the service, the OSC plugin or Horizon.
"""
