"""Tempest tests of Migration over FedEx: fedex-api's policies and answers,
and a server moved from site A to site B (doc/source/tempest.rst)."""
