"""Indexes for the lists: migrations by time, migration servers by server.

Revision ID: 0003
Revises: 0002
"""

from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('migrations') as batch_op:
        batch_op.create_index('ix_migrations_created_at_id',
                              ['created_at', 'id'], unique=False)
        batch_op.create_index('ix_migrations_updated_at_id',
                              ['updated_at', 'id'], unique=False)
    with op.batch_alter_table('migration_servers') as batch_op:
        batch_op.create_index(batch_op.f('ix_migration_servers_server_id'),
                              ['server_id'], unique=False)
