"""Tests of Migration over FedEx.

NOTE: the property tests check properties, not speed: on a loaded machine
(CI, or many sandboxes side by side) hypothesis' "input generation is slow"
health check and its per-example deadline fail tests that are right.
"""

from hypothesis import HealthCheck
from hypothesis import settings

settings.register_profile('fedex', deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile('fedex')
