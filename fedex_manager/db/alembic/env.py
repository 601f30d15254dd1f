"""Alembic environment of the manager's schema.

Our version table is ``fedex_alembic_version``: taskflow's persistence
tables live in the same database with their own ``alembic_version``.
"""

from alembic import context
import sqlalchemy as sa

from fedex_manager.db import models

VERSION_TABLE = 'fedex_alembic_version'


def run_migrations_online():
    config = context.config
    connection = config.attributes.get('connection')
    if connection is not None:
        _run(connection)
        return
    engine = sa.create_engine(config.get_main_option('sqlalchemy.url'))
    with engine.connect() as connection:
        _run(connection)


def _run(connection):
    context.configure(connection=connection,
                      target_metadata=models.Base.metadata,
                      version_table=VERSION_TABLE,
                      render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


run_migrations_online()
