"""Rows of any kind by name: get, create, update, delete, list.

ORM sessions of the enginefacade; a row leaves as a dict (a migration
with its servers and images, a shipment with its devices: loaded by
``selectin``, one query per relationship for a whole list).
"""

from oslo_db import exception as db_exc
import sqlalchemy as sa

from fedex_manager.db import engine
from fedex_manager.db import events
from fedex_manager.db import models
from fedex_manager.db import pagination
from lsrp import exception

MODELS = {'site': models.Site, 'terminal': models.Terminal,
          'migration': models.Migration, 'shipment': models.Shipment,
          'device': models.Device, 'event': models.Event,
          'operation': models.Operation, 'plan': models.Plan}


def get_row(session, kind, ident, by_name=True):
    """The ORM row of ``kind`` by id, else by name (or a device's serial)."""
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


def as_dict(row):
    out = row.as_dict()
    if isinstance(row, models.Migration):
        out['servers'] = [s.as_dict() for s in row.servers]
        out['volumes'] = [v.as_dict() for v in row.volumes]
    if isinstance(row, models.Shipment):
        out['devices'] = [d.as_dict() for d in row.devices]
    return out


def get(ctx, kind, ident):
    with engine.reader(ctx) as session:
        return as_dict(get_row(session, kind, ident))


def create(ctx, kind, values, event_message=None):
    with engine.writer(ctx) as session:
        row = MODELS[kind](**values)
        session.add(row)
        try:
            session.flush()
        except db_exc.DBDuplicateEntry as e:
            raise exception.Conflict(kind=kind, id=values.get(
                'name') or values.get('serial') or values.get('id'),
                reason='exists already (%s)' % ', '.join(e.columns))
        if event_message:
            events.record(session, ctx, kind, row.id, 'state', None,
                          getattr(row, 'state', None), event_message,
                          migration_id=row.id if kind == 'migration'
                          else None)
        return as_dict(row)


def update(ctx, kind, ident, values):
    with engine.writer(ctx) as session:
        row = get_row(session, kind, ident)
        if 'state' in values:
            raise exception.ManagerError(
                reason='%s %s: state changes go through transition()'
                % (kind, ident))
        for k, v in values.items():
            setattr(row, k, v)
        session.flush()
        return as_dict(row)


def delete(ctx, kind, ident):
    with engine.writer(ctx) as session:
        session.delete(get_row(session, kind, ident))


def list_(ctx, kind, filters=None, limit=None, marker=None,
          sort_key='created_at', sort_dir='desc'):
    """Rows of ``kind`` matching ``filters``; paginated by ``marker`` id."""
    model = MODELS[kind]
    table = model.__table__
    pagination.check_sort(table, kind, sort_key, sort_dir)
    query = pagination.where(sa.select(model), table, kind, filters)
    query = pagination.paginate(query, table, sort_key, sort_dir, marker,
                                limit)
    with engine.reader(ctx) as session:
        rows = session.execute(query).scalars().all()
        pagination.check_marker(session, table, kind, marker, rows)
        return [as_dict(r) for r in rows]


def devices_of(ctx, shipment_id):
    return list_(ctx, 'device', {'shipment_id': shipment_id},
                 sort_key='index_in_set', sort_dir='asc')
