"""Schema upgrades: ours (alembic) and taskflow's persistence tables."""

import os

from alembic import command
from alembic import config as alembic_config
from alembic import migration as alembic_migration
import sqlalchemy as sa
from taskflow.persistence.backends.sqlalchemy import migration as tf_migration

from fedex_manager.db import api

ALEMBIC_DIR = os.path.join(os.path.dirname(__file__), 'alembic')


def _config(connection=None):
    cfg = alembic_config.Config()
    cfg.set_main_option('script_location', ALEMBIC_DIR)
    cfg.attributes['connection'] = connection
    return cfg


def upgrade(revision='head'):
    """Bring the manager's tables and taskflow's to ``revision``."""
    engine = api.get_engine()
    with engine.begin() as connection:
        command.upgrade(_config(connection), revision)
    with engine.begin() as connection:
        tf_migration.db_sync(connection)


def version():
    engine = api.get_engine()
    with engine.connect() as connection:
        ctx = alembic_migration.MigrationContext.configure(
            connection, opts={'version_table': 'fedex_alembic_version'})
        return ctx.get_current_revision()


def autogenerate(message, url):
    """Developer helper: write a new revision from the models' changes."""
    cfg = _config()
    cfg.set_main_option('sqlalchemy.url', url)
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        cfg.attributes['connection'] = connection
        command.revision(cfg, message=message, autogenerate=True)
