"""Stored ship-or-WAN plans (POST /v1/plans keeps what it computed).

Revision ID: 0004
Revises: 0003
"""

from alembic import op
import sqlalchemy as sa

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None


def upgrade():
    op.create_table(
        'plans',
        sa.Column('id', sa.String(length=36), nullable=False),
        sa.Column('name', sa.String(length=255), nullable=True),
        sa.Column('project_id', sa.String(length=64), nullable=True),
        sa.Column('user_id', sa.String(length=64), nullable=True),
        sa.Column('created_at', sa.DateTime(), nullable=False),
        sa.Column('recommended', sa.String(length=16), nullable=True),
        sa.Column('vms', sa.Integer(), nullable=False),
        sa.Column('request', sa.JSON(), nullable=False),
        sa.Column('inputs', sa.JSON(), nullable=False),
        sa.Column('result', sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint('id'))
    with op.batch_alter_table('plans') as batch_op:
        batch_op.create_index(batch_op.f('ix_plans_project_id'),
                              ['project_id'], unique=False)
        batch_op.create_index('ix_plans_created_at_id',
                              ['created_at', 'id'], unique=False)
