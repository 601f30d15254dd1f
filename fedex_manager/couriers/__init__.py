"""Couriers as stevedore plugins (entry points ``fedex_manager.couriers``).

A courier has ``dispatch(ctx, shipment) -> tracking number`` (the sealed
shipment is given to it) and ``poll(ctx, shipment) -> [events]``: the
carrier events due, each ``{"event", "seq", "occurred_at", "location",
"devices_missing"}``, which the conductor's sweeper records through
``fedex_manager.actions.shipping.carrier_event`` (so duplicates and
out-of-order events are handled in one place). A courier carries both
kinds of shipment: a migration's seed, and wiped devices going home (a
return consignment, ``shipment['kind'] == 'return'``, dispatched by the
conductor's ``return_devices_home`` job).
"""

from stevedore import driver

from lsrp import exception

NAMESPACE = 'fedex_manager.couriers'
_cache = {}


def get(name):
    if name not in _cache:
        try:
            _cache[name] = driver.DriverManager(
                NAMESPACE, name, invoke_on_load=True).driver
        except Exception as e:  # noqa: stevedore raises several kinds
            raise exception.CourierError(
                courier=name, reason='no such courier plugin (%s); known: '
                'manual, simulated' % e)
    return _cache[name]
