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

The SELECTs are built once (:mod:`.migration_statements`).
"""

import datetime

import sqlalchemy as sa

from fedex_manager.db import crud
from fedex_manager.db import engine
from fedex_manager.db import events
from fedex_manager.db import migration_statements as statements
from fedex_manager.db import models
from fedex_manager.db import pagination
from fedex_manager.db import times
from fedex_manager.notifications import notifier
from fedex_manager import states
from lsrp import exception

_MIGRATIONS = statements.MIGRATIONS
_SERVERS = statements.SERVERS


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


def _summaries(conn, query, params=None,
               server_keys=statements.SERVER_KEYS):
    """Run a summary query; plain dicts with their servers and last event."""
    out = []
    for m in plain_rows(conn.execute(query, params)):
        last = {k: m.pop(c) for c, k in statements.LAST_EVENT_COLUMNS}
        m['last_event'] = last if last['id'] is not None else None
        m['servers'] = []
        out.append(m)
    if out:
        by_id = {m['id']: m for m in out}
        for r in conn.execute(statements.servers(server_keys),
                              {'ids': list(by_id)}):
            by_id[r[0]]['servers'].append(dict(zip(server_keys, r[1:])))
    return out


# (filter names, which are lists, server?, sort, marker?, limit?) -> the
# SELECT of such a page, built with bound parameters: building it and its
# cache key cost as much Python time as running it on SQLite.
_PAGES = {}


def _page(filters, server, sort_key, sort_dir, marker, limit):
    """The SELECT of a page and its parameters."""
    lists = frozenset(k for k, v in filters.items()
                      if isinstance(v, (list, tuple, set)))
    shape = (tuple(sorted(filters)), lists, server is not None, sort_key,
             sort_dir, marker is not None, bool(limit))
    if shape not in _PAGES:
        table = _MIGRATIONS
        pagination.check_sort(table, 'migration', sort_key, sort_dir)
        query = pagination.where(statements.summary(), table, 'migration', {
            k: sa.bindparam('f_' + k, expanding=k in lists)
            for k in filters})
        if server is not None:
            query = query.where(table.c.id.in_(sa.select(
                _SERVERS.c.migration_id).where(
                _SERVERS.c.server_id == sa.bindparam('p_server'))))
        query = pagination.paginate(
            query, table, sort_key, sort_dir,
            sa.bindparam('p_marker') if marker is not None else None)
        if limit:
            query = query.limit(sa.bindparam('p_limit', type_=sa.Integer))
        _PAGES[shape] = query
    params = {'f_' + k: list(v) if k in lists else v
              for k, v in filters.items()}
    params.update(p_server=server, p_marker=marker,
                  p_limit=int(limit) if limit else None)
    return _PAGES[shape], params


def migration_page(ctx, filters=None, limit=None, marker=None,
                   sort_key='created_at', sort_dir='desc', server=None):
    """A page of migration summaries; ``server``: only those moving it."""
    query, params = _page(dict(filters or {}), server, sort_key, sort_dir,
                          marker, limit)
    with engine.reader_connection(ctx) as conn:
        out = _summaries(conn, query, params)
        pagination.check_marker(conn, _MIGRATIONS, 'migration', marker, out)
    return out


def migration_get(ctx, ident, events_limit=0):
    """One migration (by id or name) with everything a show gives.

    Its servers, newest event, images with their shipments (summaries),
    terminal operations and ``events_limit`` latest events: one
    transaction, no ORM.
    """
    keys = statements.SHOWN_SERVER_KEYS
    with engine.reader_connection(ctx) as conn:
        found = _summaries(conn, statements.shown('id'), {'ident': ident},
                           keys) or \
            _summaries(conn, statements.shown('name'), {'ident': ident},
                       keys)
        if not found:
            raise exception.NotFound(kind='migration', id=ident)
        m = found[0]
        m.pop('image_count')
        mid = {'migration_id': m['id']}
        m['volumes'], m['shipments'] = _volumes_and_shipments(conn, mid)
        m['operations'] = plain_rows(conn.execute(statements.operations(),
                                                  mid))
        m['events'] = []
        if events_limit:
            m['events'] = plain_rows(conn.execute(
                statements.latest_events(),
                dict(mid, events_limit=int(events_limit))))
        return m


def _volumes_and_shipments(conn, params):
    """A migration's images, and the shipments carrying them (summaries)."""
    volumes = []
    ships = {}
    for v in plain_rows(conn.execute(statements.volumes_and_shipments(),
                                     params)):
        s = {k: v.pop('ship_' + k) for k in statements.SHIP_KEYS}
        created = v.pop('ship_created_at')
        if s['id'] is not None:
            ships[s['id']] = (created, s)
        volumes.append(v)
    return volumes, [s for _c, s in sorted(
        ships.values(), key=lambda cs: (cs[0], cs[1]['id']))]
