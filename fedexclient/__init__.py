"""The client library of fedex-api: see :mod:`fedexclient.client`."""
