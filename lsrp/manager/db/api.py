"""Database access of the manager: enginefacade, one function per need.

Every state change goes through :func:`transition`, which asks the state
machine, updates the row only if it is still in the state it was read in
(compare and swap: two conductors never both move it), and appends the
event in the same transaction.
"""

import datetime
import threading

from oslo_config import cfg
from oslo_db import exception as db_exc
from oslo_db import options as db_options
from oslo_db.sqlalchemy import enginefacade
from oslo_db.sqlalchemy import utils as db_utils
import sqlalchemy as sa

from lsrp import exception
from lsrp.manager import context as context_mod
from lsrp.manager.db import models
from lsrp.manager import states

CONF = cfg.CONF
_LOCK = threading.Lock()
_CTX = None

MODELS = {'site': models.Site, 'terminal': models.Terminal,
          'migration': models.Migration, 'shipment': models.Shipment,
          'device': models.Device, 'event': models.Event,
          'operation': models.Operation}


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
        ctx.configure(connection=connection, sqlite_fk=True,
                      max_retries=5)
        _CTX = ctx
        return ctx


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
        row = session.execute(sa.select(model).where(
            model.name == ident)).scalar_one_or_none()
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
        return _dict(_get(session, kind, row.id))


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


def volumes_update(ctx, migration_id, values):
    with writer(ctx) as session:
        session.execute(sa.update(models.MigrationVolume).where(
            models.MigrationVolume.migration_id == migration_id
        ).values(**values))


def devices_of(ctx, shipment_id):
    return list_(ctx, 'device', {'shipment_id': shipment_id},
                 sort_key='index_in_set', sort_dir='asc')


# --- operations (terminal work, idempotent by id) -----------------------------

def operation_start(ctx, op_id, migration_id, terminal, kind):
    """Record operation ``op_id`` (once); returns it as a dict."""
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


def utcfromiso(text):
    if text is None:
        return None
    if isinstance(text, datetime.datetime):
        return text.replace(tzinfo=None)
    return datetime.datetime.fromisoformat(
        text.rstrip('Z')).replace(tzinfo=None)
