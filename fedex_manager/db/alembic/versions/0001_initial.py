"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-24 05:23:49.005915
"""

from alembic import op
import sqlalchemy as sa


revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'events',
        sa.Column('id',
                  sa.BigInteger().with_variant(sa.Integer(), 'sqlite'),
                  autoincrement=True, nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('occurred_at', sa.DateTime(), nullable=True),
        sa.Column('resource_type', sa.String(length=16), nullable=False),
        sa.Column('resource_id', sa.String(length=64), nullable=False),
        sa.Column('migration_id', sa.String(length=36), nullable=True),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('from_state', sa.String(length=32), nullable=True),
        sa.Column('to_state', sa.String(length=32), nullable=True),
        sa.Column('message', sa.Text(), nullable=True),
        sa.Column('actor', sa.String(length=255), nullable=True),
        sa.Column('location', sa.String(length=255), nullable=True),
        sa.Column('details', sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('events', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_events_created_at'), ['created_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_events_migration_id'), ['migration_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_events_resource_id'), ['resource_id'], unique=False)

    op.create_table(
        'operations',
        sa.Column('id', sa.String(length=64), nullable=False),
        sa.Column('migration_id', sa.String(length=36), nullable=True),
        sa.Column('terminal', sa.String(length=255), nullable=False),
        sa.Column('kind', sa.String(length=32), nullable=False),
        sa.Column('state', sa.String(length=16), nullable=False),
        sa.Column('bytes_done', sa.BigInteger(), nullable=False),
        sa.Column('bytes_total', sa.BigInteger(), nullable=False),
        sa.Column('rate', sa.Float(), nullable=True),
        sa.Column('result', sa.JSON(), nullable=True),
        sa.Column('error', sa.Text(), nullable=True),
        sa.Column('attempts', sa.Integer(), nullable=False),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('operations', schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f('ix_operations_migration_id'),
            ['migration_id'], unique=False)

    op.create_table(
        'sites',
        sa.Column('id', sa.String(length=36), nullable=False),
        sa.Column('name', sa.String(length=255), nullable=False),
        sa.Column('ceph_conf', sa.String(length=1024), nullable=True),
        sa.Column('ceph_keyring', sa.String(length=1024), nullable=True),
        sa.Column('ceph_client', sa.String(length=64), nullable=True),
        sa.Column('availability_zone', sa.String(length=255), nullable=True),
        sa.Column('aggregate', sa.String(length=255), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('name')
    )
    op.create_table(
        'terminals',
        sa.Column('id', sa.String(length=36), nullable=False),
        sa.Column('name', sa.String(length=255), nullable=False),
        sa.Column('site_id', sa.String(length=36), nullable=False),
        sa.Column('rpc_topic', sa.String(length=255), nullable=False),
        sa.Column('lsrp_address', sa.String(length=255), nullable=True),
        sa.Column('capacity_bytes', sa.BigInteger(), nullable=True),
        sa.Column('slots', sa.Integer(), nullable=True),
        sa.Column('state', sa.String(length=32), nullable=False),
        sa.Column('last_heartbeat', sa.DateTime(), nullable=True),
        sa.Column('info', sa.JSON(), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['site_id'], ['sites.id'], ),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('name')
    )
    op.create_table(
        'migrations',
        sa.Column('id', sa.String(length=36), nullable=False),
        sa.Column('name', sa.String(length=255), nullable=True),
        sa.Column('project_id', sa.String(length=64), nullable=True),
        sa.Column('user_id', sa.String(length=64), nullable=True),
        sa.Column('state', sa.String(length=32), nullable=False),
        sa.Column('failed_in', sa.String(length=32), nullable=True),
        sa.Column('last_error', sa.Text(), nullable=True),
        sa.Column('source_site_id', sa.String(length=36), nullable=False),
        sa.Column('dest_site_id', sa.String(length=36), nullable=False),
        sa.Column('source_host', sa.String(length=255), nullable=True),
        sa.Column('dest_host', sa.String(length=255), nullable=True),
        sa.Column('source_terminal_id', sa.String(length=36), nullable=True),
        sa.Column('dest_terminal_id', sa.String(length=36), nullable=True),
        sa.Column('options', sa.JSON(), nullable=False),
        sa.Column('cutover_approved', sa.Boolean(), nullable=False),
        sa.Column('base_snapshot', sa.String(length=255), nullable=True),
        sa.Column('last_snapshot', sa.String(length=255), nullable=True),
        sa.Column('bytes_total', sa.BigInteger(), nullable=False),
        sa.Column('bytes_done', sa.BigInteger(), nullable=False),
        sa.Column('rate', sa.Float(), nullable=True),
        sa.Column('eta_seconds', sa.Float(), nullable=True),
        sa.Column('rounds', sa.Integer(), nullable=False),
        sa.Column('last_round_bytes', sa.BigInteger(), nullable=True),
        sa.Column('job_id', sa.String(length=36), nullable=True),
        sa.Column('generation', sa.Integer(), nullable=False),
        sa.Column('finished_at', sa.DateTime(), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['dest_site_id'], ['sites.id'], ),
        sa.ForeignKeyConstraint(['dest_terminal_id'], ['terminals.id'], ),
        sa.ForeignKeyConstraint(['source_site_id'], ['sites.id'], ),
        sa.ForeignKeyConstraint(['source_terminal_id'], ['terminals.id'], ),
        sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('migrations', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_migrations_project_id'), ['project_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_migrations_state'), ['state'], unique=False)

    op.create_table(
        'shipments',
        sa.Column('id', sa.String(length=36), nullable=False),
        sa.Column('name', sa.String(length=255), nullable=False),
        sa.Column('state', sa.String(length=32), nullable=False),
        sa.Column('source_site_id', sa.String(length=36), nullable=True),
        sa.Column('dest_site_id', sa.String(length=36), nullable=True),
        sa.Column('source_terminal_id', sa.String(length=36), nullable=True),
        sa.Column('dest_terminal_id', sa.String(length=36), nullable=True),
        sa.Column('carrier', sa.String(length=64), nullable=False),
        sa.Column('tracking_number', sa.String(length=128), nullable=True),
        sa.Column('key_ref', sa.String(length=255), nullable=True),
        sa.Column('manifest_digest', sa.String(length=128), nullable=True),
        sa.Column('seal_digest', sa.String(length=128), nullable=True),
        sa.Column('parity', sa.Integer(), nullable=False),
        sa.Column('last_carrier_seq', sa.Integer(), nullable=False),
        sa.Column('last_error', sa.Text(), nullable=True),
        sa.Column('base_snapshot', sa.String(length=255), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['dest_site_id'], ['sites.id'], ),
        sa.ForeignKeyConstraint(['dest_terminal_id'], ['terminals.id'], ),
        sa.ForeignKeyConstraint(['source_site_id'], ['sites.id'], ),
        sa.ForeignKeyConstraint(['source_terminal_id'], ['terminals.id'], ),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('name')
    )
    with op.batch_alter_table('shipments', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_shipments_state'), ['state'], unique=False)
        batch_op.create_index(
            batch_op.f('ix_shipments_tracking_number'),
            ['tracking_number'], unique=False)

    op.create_table(
        'devices',
        sa.Column('id', sa.String(length=36), nullable=False),
        sa.Column('serial', sa.String(length=128), nullable=False),
        sa.Column('state', sa.String(length=32), nullable=False),
        sa.Column('capacity_bytes', sa.BigInteger(), nullable=False),
        sa.Column('terminal_id', sa.String(length=36), nullable=True),
        sa.Column('slot', sa.Integer(), nullable=True),
        sa.Column('path', sa.String(length=1024), nullable=True),
        sa.Column('shipment_id', sa.String(length=36), nullable=True),
        sa.Column('index_in_set', sa.Integer(), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('updated_at', sa.DateTime(), nullable=False),
        sa.ForeignKeyConstraint(['shipment_id'], ['shipments.id'], ),
        sa.ForeignKeyConstraint(['terminal_id'], ['terminals.id'], ),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('serial')
    )
    with op.batch_alter_table('devices', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_devices_shipment_id'), ['shipment_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_devices_state'), ['state'], unique=False)

    op.create_table(
        'migration_servers',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('migration_id', sa.String(length=36), nullable=False),
        sa.Column('server_id', sa.String(length=64), nullable=False),
        sa.Column('name', sa.String(length=255), nullable=True),
        sa.Column('state', sa.String(length=32), nullable=True),
        sa.ForeignKeyConstraint(['migration_id'], ['migrations.id'], ),
        sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('migration_servers', schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f('ix_migration_servers_migration_id'),
            ['migration_id'], unique=False)

    op.create_table(
        'migration_volumes',
        sa.Column('id', sa.Integer(), autoincrement=True, nullable=False),
        sa.Column('migration_id', sa.String(length=36), nullable=False),
        sa.Column('server_id', sa.String(length=64), nullable=True),
        sa.Column('volume_id', sa.String(length=64), nullable=True),
        sa.Column('kind', sa.String(length=16), nullable=False),
        sa.Column('source_image', sa.String(length=512), nullable=False),
        sa.Column('dest_image', sa.String(length=512), nullable=False),
        sa.Column('size_bytes', sa.BigInteger(), nullable=False),
        sa.Column('shipment_id', sa.String(length=36), nullable=True),
        sa.Column('digest', sa.String(length=128), nullable=True),
        sa.ForeignKeyConstraint(['migration_id'], ['migrations.id'], ),
        sa.ForeignKeyConstraint(['shipment_id'], ['shipments.id'], ),
        sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('migration_volumes', schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f('ix_migration_volumes_migration_id'),
            ['migration_id'], unique=False)
