"""Longer operation ids (migration, kind, shipment and terminal names).

Revision ID: 0002
Revises: 0001
"""

from alembic import op
import sqlalchemy as sa

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('operations') as batch_op:
        batch_op.alter_column('id', existing_type=sa.String(length=64),
                              type_=sa.String(length=255),
                              existing_nullable=False)
