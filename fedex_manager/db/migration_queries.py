"""Migrations: created with their servers and images; listed and shown.

A list and a show (the API's hot reads) read columns through SQLAlchemy
Core, never ORM objects or their graphs (a page of 100 with servers,
images and events as objects cost a second on a loaded machine):

* a page: one SELECT of the migrations, each with its images counted and
  its newest event (``last_event``), paged by :mod:`.pagination` (the
  marker's sort key a subquery of it); then one SELECT of the page's
  servers (``migration_id IN``, its index);
* a show: the same SELECT for the one migration, then its servers, its
  images with their shipments, its operations and its latest events.
"""

import datetime

import sqlalchemy as sa

from fedex_manager.db import crud
from fedex_manager.db import engine
from fedex_manager.db import events
from fedex_manager.db import models
from fedex_manager.db import pagination
from fedex_manager.db import times
from fedex_manager.notifications import notifier
from fedex_manager import states
from lsrp import exception

_MIGRATIONS = models.Migration.__table__
_SERVERS = models.MigrationServer.__table__
_VOLUMES = models.MigrationVolume.__table__
_EVENTS = models.Event.__table__

# What a list shows of a migration: no snapshots or job internals, and its
# images counted, not listed (a show lists them).
_INTERNAL = ('base_snapshot', 'last_snapshot', 'job_id', 'generation')
_SERVER_KEYS = ('server_id', 'name', 'state')
# A show's servers also give their memory copy's verdict (not a list's).
_SHOWN_SERVER_KEYS = _SERVER_KEYS + ('convergence',)
_LAST_EVENT_KEYS = ('id', 'kind', 'message', 'created_at')


def migration_create(ctx, values, servers, volumes):
    with engine.writer(ctx) as session:
        row = models.Migration(state=states.REQUESTED, **values)
        row.servers = [models.MigrationServer(**s) for s in servers]
        row.volumes = [models.MigrationVolume(**v) for v in volumes]
        session.add(row)
        session.flush()
        events.record(session, ctx, 'migration', row.id, 'state', None,
                      states.REQUESTED, 'requested: %d server(s), %d image(s)'
                      % (len(servers), len(volumes)), migration_id=row.id)
        notifier.migration_state_changed(session, ctx, row, None, 'create')
        return crud.as_dict(row)


def volumes_update(ctx, migration_id, values):
    with engine.writer(ctx) as session:
        session.execute(sa.update(models.MigrationVolume).where(
            models.MigrationVolume.migration_id == migration_id
        ).values(**values))


def volume_update(ctx, volume_id, values):
    """One image of a migration (its size, its shipment)."""
    with engine.writer(ctx) as session:
        session.execute(sa.update(models.MigrationVolume).where(
            models.MigrationVolume.id == volume_id).values(**values))


def volumes_unassign(ctx, shipment_id):
    """The images a shipment was to carry are loose again."""
    with engine.writer(ctx) as session:
        session.execute(sa.update(models.MigrationVolume).where(
            models.MigrationVolume.shipment_id == shipment_id
        ).values(shipment_id=None))


# --- reads ------------------------------------------------------------------

def plain_rows(result):
    """The rows of a Core ``result`` as dicts, times as ISO 8601 text.

    Only the columns that may hold times are checked: a list reads a
    hundred rows of thirty columns, and checking the type of every value
    cost more than the rest of the conversion. A column whose value is
    neither None nor a time is not checked again.
    """
    keys = list(result.keys())
    maybe = set(keys)
    out = []
    for r in result:
        d = dict(zip(keys, r))
        others = []
        for k in maybe:
            v = d[k]
            if isinstance(v, datetime.datetime):
                d[k] = times.iso(v)
            elif v is not None:
                others.append(k)
        maybe.difference_update(others)
        out.append(d)
    return out


_SUMMARIES = {}


def _summary_query(internal=False):
    """:func:`_build_summary_query`, built once (it is costly)."""
    if internal not in _SUMMARIES:
        _SUMMARIES[internal] = _build_summary_query([
            c for c in _MIGRATIONS.columns
            if internal or c.key not in _INTERNAL])
    return _SUMMARIES[internal]


def _build_summary_query(columns):
    """What a list shows of each migration, in one SELECT.

    ``columns`` of the migration, its images counted and its newest event
    (``last_event``: id, kind, message, time; what Horizon's *Last event*
    column shows) joined by the index on ``events.migration_id``.
    """
    table = _MIGRATIONS
    image_count = sa.select(sa.func.count(_VOLUMES.c.id)).where(
        _VOLUMES.c.migration_id == table.c.id).scalar_subquery()
    last = _EVENTS.alias('last_event')
    # NOTE: not MAX(id): MariaDB reads all of a migration's index entries
    # for it in a dependent subquery; ORDER BY id DESC LIMIT 1 reads one.
    newest = sa.select(_EVENTS.c.id).where(
        _EVENTS.c.migration_id == table.c.id).order_by(
        _EVENTS.c.id.desc()).limit(1).scalar_subquery()
    return sa.select(
        *columns, image_count.label('image_count'),
        *[last.c[k].label('last_event_' + k) for k in _LAST_EVENT_KEYS]
    ).select_from(table.outerjoin(last, last.c.id == newest))


def _summaries(conn, query, server_keys=_SERVER_KEYS):
    """Run a summary query; plain dicts with their servers and last event."""
    out = []
    for m in plain_rows(conn.execute(query)):
        last = {k: m.pop('last_event_' + k) for k in _LAST_EVENT_KEYS}
        m['last_event'] = last if last['id'] is not None else None
        m['servers'] = []
        out.append(m)
    if out:
        by_id = {m['id']: m for m in out}
        for r in conn.execute(sa.select(
                _SERVERS.c.migration_id,
                *[_SERVERS.c[k] for k in server_keys]).where(
                _SERVERS.c.migration_id.in_(list(by_id))).order_by(
                _SERVERS.c.id)):
            by_id[r[0]]['servers'].append(dict(zip(server_keys, r[1:])))
    return out


def migration_page(ctx, filters=None, limit=None, marker=None,
                   sort_key='created_at', sort_dir='desc', server=None):
    """A page of migration summaries; ``server``: only those moving it."""
    table = _MIGRATIONS
    pagination.check_sort(table, 'migration', sort_key, sort_dir)
    query = pagination.where(_summary_query(), table, 'migration', filters)
    if server is not None:
        query = query.where(table.c.id.in_(sa.select(
            _SERVERS.c.migration_id).where(_SERVERS.c.server_id == server)))
    query = pagination.paginate(query, table, sort_key, sort_dir, marker,
                                limit)
    with engine.reader_connection(ctx) as conn:
        out = _summaries(conn, query)
        pagination.check_marker(conn, table, 'migration', marker, out)
    return out


def migration_get(ctx, ident, events_limit=0):
    """One migration (by id or name) with everything a show gives.

    Its servers, newest event, images with their shipments (summaries),
    terminal operations and ``events_limit`` latest events: one
    transaction, no ORM.
    """
    table = _MIGRATIONS
    query = _summary_query(internal=True)
    with engine.reader_connection(ctx) as conn:
        found = _summaries(conn, query.where(table.c.id == ident),
                           _SHOWN_SERVER_KEYS) or \
            _summaries(conn, query.where(table.c.name == ident).limit(1),
                       _SHOWN_SERVER_KEYS)
        if not found:
            raise exception.NotFound(kind='migration', id=ident)
        m = found[0]
        m.pop('image_count')
        m['volumes'], m['shipments'] = _volumes_and_shipments(conn, m['id'])
        op = models.Operation.__table__
        m['operations'] = plain_rows(conn.execute(sa.select(op).where(
            op.c.migration_id == m['id']).order_by(op.c.created_at,
                                                   op.c.id)))
        m['events'] = []
        if events_limit:
            m['events'] = plain_rows(conn.execute(sa.select(_EVENTS).where(
                _EVENTS.c.migration_id == m['id']).order_by(
                _EVENTS.c.id.desc()).limit(int(events_limit))))
        return m


def _volumes_and_shipments(conn, migration_id):
    """A migration's images, and the shipments carrying them (summaries)."""
    sh = models.Shipment.__table__
    ship_keys = ('id', 'name', 'state', 'carrier', 'tracking_number')
    volumes = []
    ships = {}
    for v in plain_rows(conn.execute(sa.select(
            _VOLUMES, *[sh.c[k].label('ship_' + k) for k in ship_keys],
            sh.c.created_at.label('ship_created_at')).select_from(
            _VOLUMES.outerjoin(sh, sh.c.id == _VOLUMES.c.shipment_id)).where(
            _VOLUMES.c.migration_id == migration_id).order_by(
            _VOLUMES.c.id))):
        s = {k: v.pop('ship_' + k) for k in ship_keys}
        created = v.pop('ship_created_at')
        if s['id'] is not None:
            ships[s['id']] = (created, s)
        volumes.append(v)
    return volumes, [s for _c, s in sorted(
        ships.values(), key=lambda cs: (cs[0], cs[1]['id']))]
