"""Servers' memory at the cutover: dirty rate, forecast, verdict.

``migration_servers.convergence`` (JSON): what nova_fedex measured of the
guest before its memory copy and the manager's forecast of the copy and
the pause, with the means it chose (pre-copy, auto-converge) or why it
refused.

Revision ID: 0006
Revises: 0005
"""

from alembic import op
import sqlalchemy as sa

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table('migration_servers') as batch_op:
        batch_op.add_column(sa.Column('convergence', sa.JSON(),
                                      nullable=True))
