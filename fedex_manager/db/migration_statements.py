"""The SELECTs of a migration list and show, each built once.

Built with bound parameters (``:ident``, ``:migration_id``, ``:ids``,
``:events_limit``) and kept: building a SELECT and its SQLAlchemy cache key
costs more Python time than SQLite takes to run it, and a show runs five.
A SQLAlchemy statement is immutable: the threads of a process share them.
"""

import functools

import sqlalchemy as sa

from fedex_manager.db import models

MIGRATIONS = models.Migration.__table__
SERVERS = models.MigrationServer.__table__
VOLUMES = models.MigrationVolume.__table__
EVENTS = models.Event.__table__
OPERATIONS = models.Operation.__table__
SHIPMENTS = models.Shipment.__table__

# What a list shows of a migration: no snapshots or job internals, and its
# images counted, not listed (a show lists them).
INTERNAL = ('base_snapshot', 'last_snapshot', 'job_id', 'generation')
SERVER_KEYS = ('server_id', 'name', 'state')
# A show's servers also give their memory copy's verdict (not a list's).
SHOWN_SERVER_KEYS = SERVER_KEYS + ('convergence',)
LAST_EVENT_KEYS = ('id', 'kind', 'message', 'created_at')
# Their columns in a summary row (names built once, not once a row).
LAST_EVENT_COLUMNS = tuple(('last_event_' + k, k) for k in LAST_EVENT_KEYS)
SHIP_KEYS = ('id', 'name', 'state', 'carrier', 'tracking_number')


@functools.lru_cache(maxsize=None)
def summary(internal=False):
    """What a list shows of each migration, in one SELECT.

    Its columns (all of them when ``internal``), its images counted and its
    newest event (``last_event``: id, kind, message, time; what Horizon's
    *Last event* column shows) joined by the index on
    ``events.migration_id``.
    """
    table = MIGRATIONS
    columns = [c for c in table.columns if internal or c.key not in INTERNAL]
    image_count = sa.select(sa.func.count(VOLUMES.c.id)).where(
        VOLUMES.c.migration_id == table.c.id).scalar_subquery()
    last = EVENTS.alias('last_event')
    # NOTE: not MAX(id): MariaDB reads all of a migration's index entries
    # for it in a dependent subquery; ORDER BY id DESC LIMIT 1 reads one.
    newest = sa.select(EVENTS.c.id).where(
        EVENTS.c.migration_id == table.c.id).order_by(
        EVENTS.c.id.desc()).limit(1).scalar_subquery()
    return sa.select(
        *columns, image_count.label('image_count'),
        *[last.c[k].label(c) for c, k in LAST_EVENT_COLUMNS]
    ).select_from(table.outerjoin(last, last.c.id == newest))


@functools.lru_cache(maxsize=None)
def servers(keys):
    """The servers of the migrations ``:ids`` (a list), their ``keys``."""
    return sa.select(SERVERS.c.migration_id,
                     *[SERVERS.c[k] for k in keys]).where(
        SERVERS.c.migration_id.in_(sa.bindparam('ids', expanding=True))
    ).order_by(SERVERS.c.id)


@functools.lru_cache(maxsize=None)
def shown(by):
    """A show's migration: ``:ident`` its id (``by`` 'id') or its name."""
    query = summary(internal=True).where(
        MIGRATIONS.c[by] == sa.bindparam('ident'))
    return query if by == 'id' else query.limit(1)


@functools.lru_cache(maxsize=None)
def volumes_and_shipments():
    """The images of ``:migration_id``, each with its shipment's summary."""
    sh = SHIPMENTS
    return sa.select(
        VOLUMES, *[sh.c[k].label('ship_' + k) for k in SHIP_KEYS],
        sh.c.created_at.label('ship_created_at')).select_from(
        VOLUMES.outerjoin(sh, sh.c.id == VOLUMES.c.shipment_id)).where(
        VOLUMES.c.migration_id == sa.bindparam('migration_id')).order_by(
        VOLUMES.c.id)


@functools.lru_cache(maxsize=None)
def operations():
    """The terminal operations of ``:migration_id``, oldest first."""
    op = OPERATIONS
    return sa.select(op).where(
        op.c.migration_id == sa.bindparam('migration_id')).order_by(
        op.c.created_at, op.c.id)


@functools.lru_cache(maxsize=None)
def latest_events():
    """The ``:events_limit`` newest events of ``:migration_id``."""
    return sa.select(EVENTS).where(
        EVENTS.c.migration_id == sa.bindparam('migration_id')).order_by(
        EVENTS.c.id.desc()).limit(
        sa.bindparam('events_limit', type_=sa.Integer))
