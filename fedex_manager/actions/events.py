"""The audit trail: events by migration, resource, kind and time."""

import datetime

from fedex_manager.actions import inputs
from fedex_manager.db import api as db


def events_query(ctx, migration=None, resource_id=None, kind=None,
                 since=None, limit=100, marker=None, sort_dir='asc'):
    filters = {}
    if migration:
        filters['migration_id'] = db.migration_get(ctx, migration)['id']
    if resource_id:
        filters['resource_id'] = resource_id
    if kind:
        filters['kind'] = kind
    if since is not None and not isinstance(since, datetime.datetime):
        try:
            since = db.utcfromiso(since)
        except ValueError:
            inputs.bad('since', '%r is not an ISO 8601 time' % (since,))
    return db.events(ctx, filters, inputs.limit(limit), marker, since,
                     sort_dir)
