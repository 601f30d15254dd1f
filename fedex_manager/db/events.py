"""The audit trail: events appended, and read a page at a time."""

import sqlalchemy as sa

from fedex_manager import context as context_mod
from fedex_manager.db import engine
from fedex_manager.db import models
from fedex_manager.db import pagination
from fedex_manager.db import times


def record(session, ctx, resource_type, resource_id, kind, from_state,
           to_state, message, migration_id=None, details=None,
           occurred_at=None, location=None, actor=None):
    """Append an event in ``session``'s transaction; the ORM row."""
    ev = models.Event(resource_type=resource_type, resource_id=resource_id,
                      migration_id=migration_id, kind=kind,
                      from_state=from_state, to_state=to_state,
                      message=message, details=details,
                      occurred_at=occurred_at or times.now(),
                      location=location,
                      actor=actor or context_mod.actor_of(ctx))
    session.add(ev)
    session.flush()
    return ev


def add_event(ctx, resource_type, resource_id, kind, message,
              migration_id=None, details=None, occurred_at=None,
              location=None, actor=None):
    with engine.writer(ctx) as session:
        return record(session, ctx, resource_type, resource_id, kind, None,
                      None, message, migration_id, details, occurred_at,
                      location, actor).as_dict()


def events(ctx, filters=None, limit=None, marker=None, since=None,
           sort_dir='asc', until=None):
    """Events matching ``filters``, by id.

    ``since``: created then or later; ``until``: then or earlier.
    ``marker``: the id of the event the page starts after.
    """
    table = models.Event.__table__
    query = pagination.where(sa.select(models.Event), table, 'event',
                             filters)
    if since is not None:
        query = query.where(table.c.created_at >= since)
    if until is not None:
        query = query.where(table.c.created_at <= until)
    pagination.check_sort(table, 'event', 'id', sort_dir)
    query = pagination.paginate(
        query, table, 'id', sort_dir,
        int(marker) if marker is not None else None, limit,
        marker_must_exist=False)
    with engine.reader(ctx) as session:
        return [r.as_dict() for r in session.execute(query).scalars()]
