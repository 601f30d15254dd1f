from alembic import autogenerate
from alembic import migration as alembic_migration
import sqlalchemy as sa

from fedex_manager.db import api as db
from fedex_manager.db import migration
from fedex_manager.db import models
from tests.unit.fedex_manager import base


class TestSchema(base.DBTestCase):

    def test_migrations_match_models(self):
        with db.get_engine().connect() as conn:
            ctx = alembic_migration.MigrationContext.configure(
                conn, opts={'version_table': 'fedex_alembic_version'})
            diff = autogenerate.compare_metadata(ctx, models.Base.metadata)
        taskflow = ('logbooks', 'flowdetails', 'atomdetails',
                    'alembic_version')
        ours = [d for d in diff if not (
            (d[0] == 'remove_table' and d[1].name in taskflow) or
            (d[0] == 'remove_index' and d[1].table.name in taskflow))]
        self.assertEqual([], ours)

    def test_sync_is_idempotent_and_has_taskflow_tables(self):
        migration.upgrade()
        self.assertEqual('0006', migration.version())
        names = sa.inspect(db.get_engine()).get_table_names()
        for t in ('migrations', 'shipments', 'devices', 'events', 'sites',
                  'terminals', 'logbooks', 'flowdetails', 'atomdetails'):
            self.assertIn(t, names)
