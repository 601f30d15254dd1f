"""The audit trail: events by migration, resource, kind and time."""

from fedex_manager.actions import inputs
from fedex_manager.db import api as db


def events_query(ctx, migration=None, resource_id=None, kind=None,
                 since=None, limit=100, marker=None, sort_dir='asc',
                 until=None):
    """A page of events of a migration, a resource, a kind.

    ``since`` and ``until`` (inclusive) bound their creation times (ISO
    8601 text or datetimes).
    """
    filters = {}
    if migration:
        filters['migration_id'] = db.migration_get(ctx, migration)['id']
    if resource_id:
        filters['resource_id'] = resource_id
    if kind:
        filters['kind'] = kind
    times = {}
    for name, value in (('since', since), ('until', until)):
        try:
            times[name] = db.utcfromiso(value)
        except ValueError:
            inputs.bad(name, '%r is not an ISO 8601 time' % (value,))
    return db.events(ctx, filters, inputs.limit(limit), marker,
                     times['since'], sort_dir, until=times['until'])
