"""Database access of the manager: enginefacade, one function per need.

Every state change goes through :func:`transition`, which asks the state
machine, updates the row only if it is still in the state it was read in
(compare and swap: two conductors never both move it), and appends the
event in the same transaction.
"""

import contextlib
import datetime
import json
import threading
import time

from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_db import options as db_options
from oslo_db.sqlalchemy import enginefacade
from oslo_db.sqlalchemy import utils as db_utils
import sqlalchemy as sa
from sqlalchemy import event as sa_event

from lsrp import exception
from fedex_manager import context as context_mod
from fedex_manager.db import models
from fedex_manager import states

CONF = cfg.CONF
_LOCK = threading.Lock()
_CTX = None

MODELS = {'site': models.Site, 'terminal': models.Terminal,
          'migration': models.Migration, 'shipment': models.Shipment,
          'device': models.Device, 'event': models.Event,
          'operation': models.Operation, 'plan': models.Plan}


def register_opts(conf):
    db_options.set_defaults(conf)


def configure(connection=None):
    """(Re)build the engine facade for ``connection`` ([database] default)."""
    global _CTX
    with _LOCK:
        if connection is None:
            register_opts(CONF)
            connection = CONF.database.connection
        if not connection:
            raise exception.ManagerError(
                reason='no database: set [database] connection (SQLite: '
                'sqlite:////var/lib/fedex/manager.sqlite)')
        ctx = enginefacade.transaction_context()
        # thread_checkin: a sleep(0) at each checkin, for eventlet; we have
        # none, and under load that yield costs a wait for the CPU.
        ctx.configure(connection=connection, sqlite_fk=True,
                      max_retries=5, thread_checkin=False)
        engine = ctx.writer.get_engine()
        if connection.startswith('sqlite'):
            _sqlite_for_many(engine)
        _ping_when_idle(engine)
        _CTX = ctx
        return ctx


def _sqlite_for_many(engine):
    """SQLite shared by a conductor, its RPC handlers and a facade user.

    WAL lets readers go on while one writes; a writer waits up to 60 s
    for another instead of failing at once with 'database is locked'.
    """
    def on_connect(dbapi_connection, record):
        cursor = dbapi_connection.cursor()
        cursor.execute('PRAGMA busy_timeout = 60000')
        cursor.execute('PRAGMA journal_mode = WAL')
        cursor.close()
    sa_event.listen(engine, 'connect', on_connect)


# A pooled connection unused for longer than this is pinged before use.
IDLE_PING_SECONDS = 5.0


def _ping_when_idle(engine):
    """Ping a pooled connection at checkout only when it sat idle.

    oslo.db turns SQLAlchemy's ``pool_pre_ping`` on: a round trip to the
    database before every transaction, which on a loaded machine means one
    more wait for a CPU per request. A connection used less than
    IDLE_PING_SECONDS ago is taken as is (if the server went away in
    between, that one request fails and the pool reconnects); an idle one
    is pinged and, if dead, replaced before use, as pre-ping did.
    """
    pool = engine.pool
    if not getattr(pool, '_pre_ping', False):
        return
    # NOTE: oslo.db does not let a caller pass pool_pre_ping=False.
    pool._pre_ping = False

    def checkin(dbapi_connection, record):
        if record is not None:
            record.info['fedex.idle_since'] = time.monotonic()

    def checkout(dbapi_connection, record, proxy):
        since = record.info.pop('fedex.idle_since', None)
        if since is None or time.monotonic() - since < IDLE_PING_SECONDS:
            return
        try:
            alive = engine.dialect.do_ping(dbapi_connection)
        except Exception as e:
            raise sa.exc.DisconnectionError('ping failed: %s' % e)
        if not alive:
            raise sa.exc.DisconnectionError('ping failed')

    sa_event.listen(engine, 'checkin', checkin)
    sa_event.listen(engine, 'checkout', checkout)


def _facade():
    if _CTX is None:
        configure()
    return _CTX


def get_engine():
    return _facade().writer.get_engine()


def writer(ctx):
    return _facade().writer.using(ctx or context_mod.admin())


def reader(ctx):
    return _facade().reader.using(ctx or context_mod.admin())


def now():
    return models._now()


# --- generic helpers ----------------------------------------------------------

def _get(session, kind, ident, by_name=True):
    model = MODELS[kind]
    row = session.get(model, ident)
    if row is None and by_name and hasattr(model, 'name'):
        # Names of migrations and plans need not be unique: two of them
        # named alike are refused by name, never guessed between.
        rows = session.execute(sa.select(model).where(
            model.name == ident).limit(2)).scalars().all()
        if len(rows) > 1:
            raise exception.Conflict(
                kind=kind, id=ident,
                reason='several have this name; use the id')
        row = rows[0] if rows else None
    if row is None and kind == 'device':
        row = session.execute(sa.select(model).where(
            model.serial == ident)).scalar_one_or_none()
    if row is None:
        raise exception.NotFound(kind=kind, id=ident)
    return row


def _dict(row):
    out = row.as_dict()
    if isinstance(row, models.Migration):
        out['servers'] = [s.as_dict() for s in row.servers]
        out['volumes'] = [v.as_dict() for v in row.volumes]
    if isinstance(row, models.Shipment):
        out['devices'] = [d.as_dict() for d in row.devices]
    return out


def get(ctx, kind, ident):
    with reader(ctx) as session:
        return _dict(_get(session, kind, ident))


def create(ctx, kind, values, event_message=None):
    with writer(ctx) as session:
        row = MODELS[kind](**values)
        session.add(row)
        try:
            session.flush()
        except db_exc.DBDuplicateEntry as e:
            raise exception.Conflict(kind=kind, id=values.get(
                'name') or values.get('serial') or values.get('id'),
                reason='exists already (%s)' % ', '.join(e.columns))
        if event_message:
            _event(session, ctx, kind, row.id, 'state', None,
                   getattr(row, 'state', None), event_message,
                   migration_id=row.id if kind == 'migration' else None)
        return _dict(row)


def update(ctx, kind, ident, values):
    with writer(ctx) as session:
        row = _get(session, kind, ident)
        if 'state' in values:
            raise exception.ManagerError(
                reason='%s %s: state changes go through transition()'
                % (kind, ident))
        for k, v in values.items():
            setattr(row, k, v)
        session.flush()
        return _dict(row)


def delete(ctx, kind, ident):
    with writer(ctx) as session:
        row = _get(session, kind, ident)
        session.delete(row)


def list_(ctx, kind, filters=None, limit=None, marker=None,
          sort_key='created_at', sort_dir='desc'):
    """Rows of ``kind`` matching ``filters``; paginated by ``marker`` id."""
    model = MODELS[kind]
    filters = dict(filters or {})
    with reader(ctx) as session:
        query = session.query(model)
        for key, value in filters.items():
            column = getattr(model, key, None)
            if column is None:
                raise exception.InvalidInput(
                    field='filter', reason='%s has no field %r' % (kind, key))
            if isinstance(value, (list, tuple, set)):
                query = query.filter(column.in_(list(value)))
            else:
                query = query.filter(column == value)
        if sort_key not in model.__table__.columns:
            raise exception.InvalidInput(
                field='sort_key',
                reason='%s has no field %r' % (kind, sort_key))
        if sort_dir not in ('asc', 'desc'):
            raise exception.InvalidInput(
                field='sort_dir', reason="%r is not 'asc' or 'desc'"
                % sort_dir)
        marker_row = None
        if marker is not None:
            marker_row = session.get(model, marker)
            if marker_row is None:
                raise exception.InvalidInput(
                    field='marker', reason='no %s %s' % (kind, marker))
        keys = [sort_key] + (['id'] if sort_key != 'id' else [])
        query = db_utils.paginate_query(query, model, limit, keys,
                                        marker=marker_row,
                                        sort_dirs=[sort_dir] * len(keys))
        return [_dict(r) for r in query.all()]


# --- state changes and events -------------------------------------------------

def _event(session, ctx, resource_type, resource_id, kind, from_state,
           to_state, message, migration_id=None, details=None,
           occurred_at=None, location=None, actor=None):
    ev = models.Event(resource_type=resource_type, resource_id=resource_id,
                      migration_id=migration_id, kind=kind,
                      from_state=from_state, to_state=to_state,
                      message=message, details=details,
                      occurred_at=occurred_at or now(), location=location,
                      actor=actor or context_mod.actor_of(ctx))
    session.add(ev)
    session.flush()
    return ev


def add_event(ctx, resource_type, resource_id, kind, message,
              migration_id=None, details=None, occurred_at=None,
              location=None, actor=None):
    with writer(ctx) as session:
        return _event(session, ctx, resource_type, resource_id, kind, None,
                      None, message, migration_id, details, occurred_at,
                      location, actor).as_dict()


_transition_hooks = []


def on_transition(hook):
    """Call ``hook(kind, id, old, new, message)`` after each state change.

    Only changes committed by this process; the conductor sends them as
    notifications.
    """
    _transition_hooks.append(hook)


def _notify(kind, ident, old, new, message):
    for hook in list(_transition_hooks):
        try:
            hook(kind, ident, old, new, message)
        except Exception:  # noqa: monitoring never breaks a transition
            pass


def transition(ctx, kind, ident, event=None, target=None, expect=None,
               values=None, message=None, details=None, location=None,
               occurred_at=None, event_kind='state'):
    """Move ``kind`` ``ident`` by ``event`` (or to ``target``), CAS.

    ``expect``: a state or tuple of states the row must be in, else
    :class:`InvalidTransition`. Returns the row as a dict.
    """
    machine = states.MACHINES[kind]
    model = MODELS[kind]
    with writer(ctx) as session:
        row = _get(session, kind, ident)
        current = row.state
        if expect is not None:
            expected = (expect,) if isinstance(expect, str) else expect
            if current not in expected:
                raise exception.InvalidTransition(
                    kind=kind, id=row.id, current=current,
                    target=target or machine._target_of(event),
                    reason='expected %s' % ' or '.join(expected))
        if event is None:
            event = machine.event_to(current, target, row.id)
        new = machine.next_state(current, event, row.id)
        values = dict(values or {})
        values['state'] = new
        values['updated_at'] = now()
        result = session.execute(
            sa.update(model).where(model.id == row.id,
                                   model.state == current).values(**values))
        if result.rowcount != 1:
            raise exception.Conflict(
                kind=kind, id=row.id,
                reason='changed state while going from %s to %s; try '
                'again' % (current, new))
        migration_id = row.id if kind == 'migration' else None
        _event(session, ctx, kind, row.id, event_kind, current, new,
               message or '%s: %s -> %s' % (event, current, new),
               migration_id=migration_id, details=details,
               location=location, occurred_at=occurred_at)
        session.expire(row)
        out = _dict(_get(session, kind, row.id))
    _notify(kind, out['id'], current, new, message)
    return out


def events(ctx, filters=None, limit=None, marker=None, since=None,
           sort_dir='asc'):
    model = models.Event
    with reader(ctx) as session:
        query = sa.select(model)
        for key, value in (filters or {}).items():
            column = getattr(model, key, None)
            if column is None:
                raise exception.InvalidInput(
                    field='filter', reason='events have no field %r' % key)
            query = query.where(column == value)
        if since is not None:
            query = query.where(model.created_at >= since)
        if marker is not None:
            marker = int(marker)
            query = query.where(model.id > marker if sort_dir == 'asc'
                                else model.id < marker)
        query = query.order_by(model.id.asc() if sort_dir == 'asc'
                               else model.id.desc())
        if limit:
            query = query.limit(int(limit))
        return [r.as_dict() for r in session.execute(query).scalars()]


# --- migrations -----------------------------------------------------------------

def migration_create(ctx, values, servers, volumes):
    with writer(ctx) as session:
        row = models.Migration(state=states.REQUESTED, **values)
        row.servers = [models.MigrationServer(**s) for s in servers]
        row.volumes = [models.MigrationVolume(**v) for v in volumes]
        session.add(row)
        session.flush()
        _event(session, ctx, 'migration', row.id, 'state', None,
               states.REQUESTED, 'requested: %d server(s), %d image(s)'
               % (len(servers), len(volumes)), migration_id=row.id)
        return _dict(row)


def _plain(row):
    """A result row as a JSON-ready dict (times as ISO 8601 with Z)."""
    d = dict(row._mapping)
    for k, v in d.items():
        if isinstance(v, datetime.datetime):
            d[k] = v.isoformat() + 'Z'
    return d


def _plain_rows(result):
    """:func:`_plain` of each row, checking only columns that may be times.

    A list reads a hundred rows of thirty columns: checking the type of
    every value cost more than the rest of the conversion. A column whose
    value is neither None nor a datetime is not checked again.
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
                d[k] = v.isoformat() + 'Z'
            elif v is not None:
                others.append(k)
        maybe.difference_update(others)
        out.append(d)
    return out


# What a list shows of a migration: no snapshots or job internals, and its
# images counted, not listed (a show lists them).
_INTERNAL = ('base_snapshot', 'last_snapshot', 'job_id', 'generation')


def _json_rows(dialect, table, keys, where):
    """A scalar subquery: ``table``'s rows matching ``where`` as a JSON list.

    One column of the outer query instead of a query of its own per page
    (a round trip less). Each row is an object of ``keys`` and its ``id``,
    in no particular order (:func:`_rows_of` sorts by id).
    """
    pairs = []
    for k in ('id',) + tuple(keys):
        pairs += [sa.literal_column("'%s'" % k), table.c[k]]
    if dialect == 'sqlite':
        agg = sa.func.json_group_array(sa.func.json_object(*pairs))
    elif dialect == 'postgresql':
        agg = sa.func.json_agg(sa.func.json_build_object(*pairs))
    else:
        agg = sa.func.json_arrayagg(sa.func.json_object(*pairs))
    return sa.select(agg).where(where).scalar_subquery()


def _rows_of(text, keys):
    """The rows :func:`_json_rows` made, in id order, without their id.

    None when the text is not whole JSON (MySQL cuts an aggregate at
    ``group_concat_max_len``): the caller then reads them by a query.
    """
    if text is None:
        return []
    if not isinstance(text, str):
        rows = text
    else:
        try:
            rows = json.loads(text)
        except ValueError:
            return None
    rows = sorted(rows, key=lambda r: r['id'])
    return [{k: r[k] for k in keys} for r in rows]


_SERVER_KEYS = ('server_id', 'name', 'state')
_LAST_EVENT_KEYS = ('id', 'kind', 'message', 'created_at')


def _summaries(conn, query_of_table):
    """Run a summary query (see :func:`_summary_query`); plain dicts."""
    out = []
    missing = []
    for m in _plain_rows(conn.execute(query_of_table)):
        m['servers'] = _rows_of(m.pop('servers_json'), _SERVER_KEYS)
        if m['servers'] is None:
            missing.append(m)
        last = {k: m.pop('last_event_' + k) for k in _LAST_EVENT_KEYS}
        m['last_event'] = last if last['id'] is not None else None
        out.append(m)
    if missing:
        _servers_of(conn, missing)
    return out


def _servers_of(conn, migrations):
    """Fill each migration's ``servers`` by a query of their own."""
    by_id = {m['id']: m for m in migrations}
    for m in migrations:
        m['servers'] = []
    srv = models.MigrationServer.__table__
    for r in conn.execute(sa.select(
            srv.c.migration_id, *[srv.c[k] for k in _SERVER_KEYS]).where(
            srv.c.migration_id.in_(list(by_id))).order_by(srv.c.id)):
        by_id[r[0]]['servers'].append(dict(zip(_SERVER_KEYS, r[1:])))


_SUMMARY_QUERIES = {}


def _summary_query(dialect, internal=False):
    """:func:`_build_summary_query`, built once per dialect (it is costly)."""
    key = (dialect, internal)
    if key not in _SUMMARY_QUERIES:
        table = models.Migration.__table__
        _SUMMARY_QUERIES[key] = _build_summary_query(dialect, [
            c for c in table.columns if internal or c.key not in _INTERNAL])
    return _SUMMARY_QUERIES[key]


def _build_summary_query(dialect, columns):
    """What a list shows of each migration, in one SELECT.

    ``columns`` of the migration, its images counted, its servers (a JSON
    aggregate) and its newest event (``last_event``: id, kind, message,
    time; what Horizon's *Last event* column shows) joined by the index
    on ``events.migration_id``.
    """
    table = models.Migration.__table__
    vol = models.MigrationVolume.__table__
    srv = models.MigrationServer.__table__
    ev = models.Event.__table__
    image_count = sa.select(sa.func.count(vol.c.id)).where(
        vol.c.migration_id == table.c.id).scalar_subquery()
    last = ev.alias('last_event')
    # NOTE: not MAX(id): MariaDB reads all of a migration's index entries
    # for it in a dependent subquery; ORDER BY id DESC LIMIT 1 reads one.
    newest = sa.select(ev.c.id).where(ev.c.migration_id == table.c.id
                                      ).order_by(ev.c.id.desc()).limit(
        1).scalar_subquery()
    return sa.select(
        *columns, image_count.label('image_count'),
        _json_rows(dialect, srv, _SERVER_KEYS,
                   srv.c.migration_id == table.c.id).label('servers_json'),
        *[last.c[k].label('last_event_' + k) for k in _LAST_EVENT_KEYS]
    ).select_from(table.outerjoin(last, last.c.id == newest))


_MARKER = models.Migration.__table__.alias('marker')


@contextlib.contextmanager
def _read():
    """A connection for one read: one transaction, one ROLLBACK at the end.

    Lighter than ``reader(ctx)`` for the API's hot reads: an enginefacade
    session ends its transaction and then hands the connection back to the
    pool, which rolls back a second time (a round trip for nothing); a
    Connection closed inside its transaction rolls back once and tells the
    pool so.
    """
    with _facade().reader.get_engine().connect() as conn:
        yield conn


def migration_page(ctx, filters=None, limit=None, marker=None,
                   sort_key='created_at', sort_dir='desc', server=None):
    """A page of migration summaries: one query, columns only.

    Reading columns, never ORM objects or their graphs (a page of 100 with
    servers, images and events as objects cost a second on a loaded
    machine): the migrations with their images counted, their servers and
    their newest event in one SELECT; the marker's sort key is a subquery
    of it. ``server``: only those moving that Nova server.
    """
    table = models.Migration.__table__
    filters = dict(filters or {})
    if sort_key not in table.columns:
        raise exception.InvalidInput(
            field='sort_key', reason='migration has no field %r' % sort_key)
    if sort_dir not in ('asc', 'desc'):
        raise exception.InvalidInput(
            field='sort_dir', reason="%r is not 'asc' or 'desc'" % sort_dir)
    dialect = get_engine().dialect.name
    query = _summary_query(dialect)
    for key, value in filters.items():
        if key not in table.columns:
            raise exception.InvalidInput(
                field='filter', reason='migration has no field %r' % key)
        column = table.columns[key]
        query = query.where(column.in_(list(value)) if isinstance(
            value, (list, tuple, set)) else column == value)
    if server is not None:
        srv = models.MigrationServer.__table__
        query = query.where(table.c.id.in_(sa.select(
            srv.c.migration_id).where(srv.c.server_id == server)))
    keys = [sort_key] + (['id'] if sort_key != 'id' else [])
    # A nullable key (name) sorts and compares as '' so that a marker
    # without one still has rows after it.

    def key_of(t, k):
        return sa.func.coalesce(t.c[k], '') if t.c[k].nullable else t.c[k]
    cols = [key_of(table, k) for k in keys]
    order = sa.desc if sort_dir == 'desc' else sa.asc
    if marker is not None:
        # Keyset pagination: the rows strictly after the marker, whose
        # sort key the same SELECT reads (no round trip of its own).
        mt = _MARKER
        m = [sa.select(key_of(mt, k)).where(
            mt.c.id == marker).scalar_subquery() for k in keys]
        after = (lambda c, v: c < v) if sort_dir == 'desc' else \
            (lambda c, v: c > v)
        query = query.where(sa.or_(*[
            sa.and_(*[cols[j] == m[j] for j in range(i)],
                    after(col, m[i])) for i, col in enumerate(cols)]))
    query = query.order_by(*[order(c) for c in cols])
    if limit:
        query = query.limit(int(limit))
    with _read() as conn:
        out = _summaries(conn, query)
        if marker is not None and not out and conn.execute(sa.select(
                table.c.id).where(table.c.id == marker)).first() is None:
            raise exception.InvalidInput(
                field='marker', reason='no migration %s' % marker)
    return out


def migration_get(ctx, ident, events_limit=0):
    """One migration (by id or name) with everything a show gives.

    Its servers, newest event, images with their shipments (summaries),
    terminal operations and ``events_limit`` latest events: one
    transaction, four queries, no ORM.
    """
    table = models.Migration.__table__
    dialect = get_engine().dialect.name
    query = _summary_query(dialect, internal=True)
    with _read() as conn:
        found = _summaries(conn, query.where(table.c.id == ident)) or \
            _summaries(conn, query.where(table.c.name == ident).limit(1))
        if not found:
            raise exception.NotFound(kind='migration', id=ident)
        m = found[0]
        m.pop('image_count')
        vol = models.MigrationVolume.__table__
        sh = models.Shipment.__table__
        ship_keys = ('id', 'name', 'state', 'carrier', 'tracking_number')
        m['volumes'] = []
        ships = {}
        for r in conn.execute(sa.select(
                vol, *[sh.c[k].label('ship_' + k) for k in ship_keys],
                sh.c.created_at.label('ship_created_at')).select_from(
                vol.outerjoin(sh, sh.c.id == vol.c.shipment_id)).where(
                vol.c.migration_id == m['id']).order_by(vol.c.id)):
            v = _plain(r)
            s = {k: v.pop('ship_' + k) for k in ship_keys}
            created = v.pop('ship_created_at')
            if s['id'] is not None:
                ships[s['id']] = (created, s)
            m['volumes'].append(v)
        m['shipments'] = [s for _c, s in sorted(
            ships.values(), key=lambda cs: (cs[0], cs[1]['id']))]
        op = models.Operation.__table__
        m['operations'] = _plain_rows(conn.execute(sa.select(op).where(
            op.c.migration_id == m['id']).order_by(op.c.created_at,
                                                   op.c.id)))
        m['events'] = []
        if events_limit:
            ev = models.Event.__table__
            m['events'] = _plain_rows(conn.execute(sa.select(ev).where(
                ev.c.migration_id == m['id']).order_by(ev.c.id.desc()).limit(
                int(events_limit))))
        return m


def volumes_update(ctx, migration_id, values):
    with writer(ctx) as session:
        session.execute(sa.update(models.MigrationVolume).where(
            models.MigrationVolume.migration_id == migration_id
        ).values(**values))


def volume_update(ctx, volume_id, values):
    """One image of a migration (its size, its shipment)."""
    with writer(ctx) as session:
        session.execute(sa.update(models.MigrationVolume).where(
            models.MigrationVolume.id == volume_id).values(**values))


def volumes_unassign(ctx, shipment_id):
    """The images a shipment was to carry are loose again."""
    with writer(ctx) as session:
        session.execute(sa.update(models.MigrationVolume).where(
            models.MigrationVolume.shipment_id == shipment_id
        ).values(shipment_id=None))


def devices_of(ctx, shipment_id):
    return list_(ctx, 'device', {'shipment_id': shipment_id},
                 sort_key='index_in_set', sort_dir='asc')


# --- operations (terminal work, idempotent by id) -----------------------------

def operation_start(ctx, op_id, migration_id, terminal, kind):
    """Record operation ``op_id`` (once); returns it as a dict.

    The migrations of one shipment group start the group's operations
    (its import) at the same moment: the one whose insert loses the race
    counts an attempt on the row the other made.
    """
    try:
        return _operation_start(ctx, op_id, migration_id, terminal, kind)
    except db_exc.DBDuplicateEntry:
        return _operation_start(ctx, op_id, migration_id, terminal, kind)


def _operation_start(ctx, op_id, migration_id, terminal, kind):
    with writer(ctx) as session:
        row = session.get(models.Operation, op_id)
        if row is None:
            row = models.Operation(id=op_id, migration_id=migration_id,
                                   terminal=terminal, kind=kind,
                                   state='PENDING')
            session.add(row)
        row.attempts = (row.attempts or 0) + 1
        session.flush()
        return row.as_dict()


def operation_report(ctx, op_id, **values):
    """A terminal's progress or completion of ``op_id`` (E1-E5)."""
    with writer(ctx) as session:
        row = session.get(models.Operation, op_id)
        if row is None:
            return None
        if row.state in ('DONE', 'ERROR') and values.get('state') not in (
                None, 'DONE', 'ERROR'):
            # A late progress report after completion changes nothing.
            return row.as_dict()
        for k, v in values.items():
            setattr(row, k, v)
        row.updated_at = now()
        session.flush()
        return row.as_dict()


def operation_take_status(ctx, op_id, rec):
    """A terminal's answer to ``status`` taken into the operation row.

    DONE or ERROR with its result and error, or RUNNING; the row, or None
    for an answer that says nothing of the operation (UNKNOWN,
    INTERRUPTED: the caller starts it again).
    """
    if rec.get('state') in ('DONE', 'ERROR'):
        return operation_report(ctx, op_id, state=rec['state'],
                                result=rec.get('result'),
                                error=rec.get('error'))
    if rec.get('state') == 'RUNNING':
        return operation_report(ctx, op_id, state='RUNNING')
    return None


def utcfromiso(text):
    if text is None:
        return None
    if isinstance(text, datetime.datetime):
        return text.replace(tzinfo=None)
    return datetime.datetime.fromisoformat(
        text.rstrip('Z')).replace(tzinfo=None)
