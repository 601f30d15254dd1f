"""Devices' homes and return consignments (the devices' trip home).

``devices.home_terminal_id``: the terminal a device was registered at,
where the courier brings it back once wiped; ``shipments.kind``: 'seed'
(a migration's devices) or 'return' (wiped devices going home).

Devices registered before this revision get as home the terminal their
registration event names ('registered at <terminal>'), else the one they
are at: devices of earlier migrations that stayed BLANK at the
destination go home too.

Revision ID: 0005
Revises: 0004
"""

from alembic import op
import sqlalchemy as sa

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None

REGISTERED = 'registered at '


def upgrade():
    with op.batch_alter_table('shipments') as batch_op:
        batch_op.add_column(sa.Column('kind', sa.String(length=16),
                                      nullable=False, server_default='seed'))
    with op.batch_alter_table('devices') as batch_op:
        batch_op.add_column(sa.Column('home_terminal_id',
                                      sa.String(length=36), nullable=True))
        batch_op.create_foreign_key('fk_devices_home_terminal_id',
                                    'terminals', ['home_terminal_id'], ['id'])
    _homes(op.get_bind())


def _homes(conn):
    """Each device's home: where its registration event says, or where it is."""
    devices = sa.table('devices', sa.column('id'), sa.column('terminal_id'),
                       sa.column('home_terminal_id'))
    terminals = sa.table('terminals', sa.column('id'), sa.column('name'))
    events = sa.table('events', sa.column('id'), sa.column('resource_type'),
                      sa.column('resource_id'), sa.column('from_state'),
                      sa.column('message'))
    ids = {name: ident for ident, name in conn.execute(
        sa.select(terminals.c.id, terminals.c.name))}
    first = {}
    for device_id, message in conn.execute(
            sa.select(events.c.resource_id, events.c.message).where(
                events.c.resource_type == 'device',
                events.c.from_state.is_(None),
                events.c.message.like(REGISTERED + '%')).order_by(
                events.c.id)):
        first.setdefault(device_id, message[len(REGISTERED):])
    for device_id, terminal_id in conn.execute(
            sa.select(devices.c.id, devices.c.terminal_id)).fetchall():
        home = ids.get(first.get(device_id)) or terminal_id
        if home:
            conn.execute(sa.update(devices).where(
                devices.c.id == device_id).values(home_terminal_id=home))
