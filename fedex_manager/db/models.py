"""SQLAlchemy models of the manager's records.

The manager's own tables; taskflow's persistence tables (logbooks,
flowdetails, atomdetails) live in the same database, created by taskflow's
migrations from ``fedex-manage db sync``. Events are append-only: the ORM
refuses to update or delete one.
"""

import datetime
import uuid

import sqlalchemy as sa
from sqlalchemy import event as sa_event
from sqlalchemy import orm

from lsrp import exception


def _uuid():
    return str(uuid.uuid4())


def _now():
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


class Base(orm.DeclarativeBase):

    def as_dict(self):
        out = {}
        for c in self.__table__.columns:
            v = getattr(self, c.key)
            if isinstance(v, datetime.datetime):
                v = v.isoformat() + 'Z'
            out[c.key] = v
        return out


class TimestampMixin(object):
    created_at = sa.Column(sa.DateTime, default=_now, nullable=False)
    updated_at = sa.Column(sa.DateTime, default=_now, onupdate=_now,
                           nullable=False)


class Site(TimestampMixin, Base):
    """A site: one Ceph cluster and where its hosts belong in Nova."""
    __tablename__ = 'sites'
    id = sa.Column(sa.String(36), primary_key=True, default=_uuid)
    name = sa.Column(sa.String(255), nullable=False, unique=True)
    ceph_conf = sa.Column(sa.String(1024))
    ceph_keyring = sa.Column(sa.String(1024))
    ceph_client = sa.Column(sa.String(64), default='admin')
    availability_zone = sa.Column(sa.String(255))
    aggregate = sa.Column(sa.String(255))


class Terminal(TimestampMixin, Base):
    """A terminal: the machine at a site that devices are plugged into."""
    __tablename__ = 'terminals'
    id = sa.Column(sa.String(36), primary_key=True, default=_uuid)
    name = sa.Column(sa.String(255), nullable=False, unique=True)
    site_id = sa.Column(sa.String(36), sa.ForeignKey('sites.id'),
                        nullable=False)
    rpc_topic = sa.Column(sa.String(255), nullable=False)
    lsrp_address = sa.Column(sa.String(255))
    capacity_bytes = sa.Column(sa.BigInteger, default=0)
    slots = sa.Column(sa.Integer, default=0)
    state = sa.Column(sa.String(32), nullable=False, default='UNKNOWN')
    last_heartbeat = sa.Column(sa.DateTime)
    info = sa.Column(sa.JSON)


class Migration(TimestampMixin, Base):
    """One request: move these servers and their images to a site."""
    __tablename__ = 'migrations'
    id = sa.Column(sa.String(36), primary_key=True, default=_uuid)
    name = sa.Column(sa.String(255))
    project_id = sa.Column(sa.String(64), index=True)
    user_id = sa.Column(sa.String(64))
    state = sa.Column(sa.String(32), nullable=False, index=True)
    failed_in = sa.Column(sa.String(32))
    last_error = sa.Column(sa.Text)
    source_site_id = sa.Column(sa.String(36), sa.ForeignKey('sites.id'),
                               nullable=False)
    dest_site_id = sa.Column(sa.String(36), sa.ForeignKey('sites.id'),
                             nullable=False)
    source_host = sa.Column(sa.String(255))
    dest_host = sa.Column(sa.String(255))
    source_terminal_id = sa.Column(sa.String(36),
                                   sa.ForeignKey('terminals.id'))
    dest_terminal_id = sa.Column(sa.String(36), sa.ForeignKey('terminals.id'))
    # rate_cap (bytes/s), rate_schedule [{days, from, to, rate_cap}],
    # downtime_budget (s), cutover_window {start, end}, cutover
    # ('automatic'|'approved'), retention_days, parity, threshold_bytes...
    options = sa.Column(sa.JSON, nullable=False, default=dict)
    cutover_approved = sa.Column(sa.Boolean, nullable=False, default=False)
    base_snapshot = sa.Column(sa.String(255))
    last_snapshot = sa.Column(sa.String(255))
    bytes_total = sa.Column(sa.BigInteger, nullable=False, default=0)
    bytes_done = sa.Column(sa.BigInteger, nullable=False, default=0)
    rate = sa.Column(sa.Float)
    eta_seconds = sa.Column(sa.Float)
    rounds = sa.Column(sa.Integer, nullable=False, default=0)
    last_round_bytes = sa.Column(sa.BigInteger)
    # The jobboard job running this migration's current phase.
    job_id = sa.Column(sa.String(36))
    generation = sa.Column(sa.Integer, nullable=False, default=0)
    finished_at = sa.Column(sa.DateTime)

    # Lists page by (created_at, id) or (updated_at, id), newest first.
    __table_args__ = (
        sa.Index('ix_migrations_created_at_id', 'created_at', 'id'),
        sa.Index('ix_migrations_updated_at_id', 'updated_at', 'id'),
    )

    servers = orm.relationship('MigrationServer', lazy='selectin',
                               cascade='all, delete-orphan')
    volumes = orm.relationship('MigrationVolume', lazy='selectin',
                               cascade='all, delete-orphan')


class MigrationServer(Base):
    __tablename__ = 'migration_servers'
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    migration_id = sa.Column(sa.String(36), sa.ForeignKey('migrations.id'),
                             nullable=False, index=True)
    # ?server= finds its migrations by it.
    server_id = sa.Column(sa.String(64), nullable=False, index=True)
    name = sa.Column(sa.String(255))
    state = sa.Column(sa.String(32))
    # Its guest's memory at the cutover: the dirty rate nova_fedex measured
    # and the manager's forecast and verdict on it
    # (fedex_manager.actions.cutover.convergence).
    convergence = sa.Column(sa.JSON)


class MigrationVolume(Base):
    """An RBD image of the migration: a server's disk, a volume, an image."""
    __tablename__ = 'migration_volumes'
    id = sa.Column(sa.Integer, primary_key=True, autoincrement=True)
    migration_id = sa.Column(sa.String(36), sa.ForeignKey('migrations.id'),
                             nullable=False, index=True)
    server_id = sa.Column(sa.String(64))
    volume_id = sa.Column(sa.String(64))
    kind = sa.Column(sa.String(16), nullable=False, default='volume')
    source_image = sa.Column(sa.String(512), nullable=False)
    dest_image = sa.Column(sa.String(512), nullable=False)
    size_bytes = sa.Column(sa.BigInteger, nullable=False, default=0)
    shipment_id = sa.Column(sa.String(36), sa.ForeignKey('shipments.id'))
    digest = sa.Column(sa.String(128))


class Shipment(TimestampMixin, Base):
    """Devices on the road: a migration's seed, or blank ones going home."""
    __tablename__ = 'shipments'
    id = sa.Column(sa.String(36), primary_key=True, default=_uuid)
    name = sa.Column(sa.String(255), nullable=False, unique=True)
    # 'seed': devices carrying migrations' images to their destination;
    # 'return': wiped devices going back to their home terminal (no data,
    # no key; fedex_manager.return_trip).
    kind = sa.Column(sa.String(16), nullable=False, default='seed',
                     server_default='seed')
    state = sa.Column(sa.String(32), nullable=False, index=True)
    source_site_id = sa.Column(sa.String(36), sa.ForeignKey('sites.id'))
    dest_site_id = sa.Column(sa.String(36), sa.ForeignKey('sites.id'))
    source_terminal_id = sa.Column(sa.String(36),
                                   sa.ForeignKey('terminals.id'))
    dest_terminal_id = sa.Column(sa.String(36), sa.ForeignKey('terminals.id'))
    carrier = sa.Column(sa.String(64), nullable=False, default='manual')
    tracking_number = sa.Column(sa.String(128), index=True)
    key_ref = sa.Column(sa.String(255))
    manifest_digest = sa.Column(sa.String(128))
    seal_digest = sa.Column(sa.String(128))
    parity = sa.Column(sa.Integer, nullable=False, default=1)
    last_carrier_seq = sa.Column(sa.Integer, nullable=False, default=0)
    last_error = sa.Column(sa.Text)
    base_snapshot = sa.Column(sa.String(255))

    devices = orm.relationship('Device', lazy='selectin',
                               order_by='Device.slot')


class Device(TimestampMixin, Base):
    __tablename__ = 'devices'
    id = sa.Column(sa.String(36), primary_key=True, default=_uuid)
    serial = sa.Column(sa.String(128), nullable=False, unique=True)
    state = sa.Column(sa.String(32), nullable=False, index=True)
    capacity_bytes = sa.Column(sa.BigInteger, nullable=False, default=0)
    terminal_id = sa.Column(sa.String(36), sa.ForeignKey('terminals.id'))
    # Where it was registered: the courier brings it back there once wiped.
    home_terminal_id = sa.Column(sa.String(36),
                                 sa.ForeignKey('terminals.id'))
    slot = sa.Column(sa.Integer)
    # Where the terminal sees the device (a mount point or block device).
    path = sa.Column(sa.String(1024))
    shipment_id = sa.Column(sa.String(36), sa.ForeignKey('shipments.id'),
                            index=True)
    index_in_set = sa.Column(sa.Integer)


class Operation(TimestampMixin, Base):
    """A terminal operation, idempotent by its id (the flow makes it)."""
    __tablename__ = 'operations'
    id = sa.Column(sa.String(255), primary_key=True)
    migration_id = sa.Column(sa.String(36), index=True)
    terminal = sa.Column(sa.String(255), nullable=False)
    kind = sa.Column(sa.String(32), nullable=False)
    state = sa.Column(sa.String(16), nullable=False, default='PENDING')
    bytes_done = sa.Column(sa.BigInteger, nullable=False, default=0)
    bytes_total = sa.Column(sa.BigInteger, nullable=False, default=0)
    rate = sa.Column(sa.Float)
    result = sa.Column(sa.JSON)
    error = sa.Column(sa.Text)
    attempts = sa.Column(sa.Integer, nullable=False, default=0)


class Plan(Base):
    """A ship-or-WAN plan as computed: its inputs and its result."""
    __tablename__ = 'plans'
    id = sa.Column(sa.String(36), primary_key=True, default=_uuid)
    name = sa.Column(sa.String(255))
    project_id = sa.Column(sa.String(64), index=True)
    user_id = sa.Column(sa.String(64))
    created_at = sa.Column(sa.DateTime, default=_now, nullable=False)
    # What a list shows without reading the result.
    recommended = sa.Column(sa.String(16))
    vms = sa.Column(sa.Integer, nullable=False, default=0)
    # The request body, the parsed inputs and the planner's answer.
    request = sa.Column(sa.JSON, nullable=False)
    inputs = sa.Column(sa.JSON, nullable=False)
    result = sa.Column(sa.JSON, nullable=False)

    __table_args__ = (
        sa.Index('ix_plans_created_at_id', 'created_at', 'id'),
    )


class Event(Base):
    """Append-only: state changes, custody, tracking, progress, errors."""
    __tablename__ = 'events'
    id = sa.Column(sa.BigInteger().with_variant(sa.Integer, 'sqlite'),
                   primary_key=True, autoincrement=True)
    created_at = sa.Column(sa.DateTime, default=_now, nullable=False,
                           index=True)
    # When it happened (a carrier scan may arrive later than it happened).
    occurred_at = sa.Column(sa.DateTime)
    resource_type = sa.Column(sa.String(16), nullable=False)
    resource_id = sa.Column(sa.String(64), nullable=False, index=True)
    migration_id = sa.Column(sa.String(36), index=True)
    kind = sa.Column(sa.String(16), nullable=False)
    from_state = sa.Column(sa.String(32))
    to_state = sa.Column(sa.String(32))
    message = sa.Column(sa.Text)
    actor = sa.Column(sa.String(255))
    location = sa.Column(sa.String(255))
    details = sa.Column(sa.JSON)


@sa_event.listens_for(Event, 'before_update')
@sa_event.listens_for(Event, 'before_delete')
def _append_only(mapper, connection, target):
    raise exception.ManagerError(
        reason='event %s: events are append-only' % target.id)
