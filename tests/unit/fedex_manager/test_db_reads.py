"""The API's hot reads (a list, a show): what they return and how few
statements and round trips they cost."""

from unittest import mock

import fixtures
import sqlalchemy as sa
import testtools

from lsrp import exception
from fedex_manager import actions
from fedex_manager.db import api as db
from tests.unit.fedex_manager import test_actions


class TestReads(test_actions.ActionsTestCase):

    def statements(self):
        """SQL statements run from now on, as a list that grows."""
        seen = []

        def record(conn, cursor, statement, *args):
            word = statement.split(None, 1)[0].upper()
            if word != 'BEGIN':  # oslo.db's own for SQLite
                seen.append(word)
        engine = db.get_engine()
        sa.event.listen(engine, 'before_cursor_execute', record)
        self.addCleanup(sa.event.remove, engine, 'before_cursor_execute',
                        record)
        return seen

    def test_list_is_one_select_with_servers_and_last_event(self):
        first = self.create(n_servers=3, name='wave')
        quiet = self.create(name='quiet')
        db.add_event(self.ctx, 'migration', first['id'], 'progress',
                     'round 1: 5 bytes', migration_id=first['id'])
        db.add_event(self.ctx, 'migration', first['id'], 'progress',
                     'round 2: 3 bytes', migration_id=first['id'])
        # Another migration's newer event is not this one's.
        db.add_event(self.ctx, 'migration', quiet['id'], 'state',
                     'cutover approved', migration_id=quiet['id'])
        seen = self.statements()
        page = actions.migration_list(self.ctx, sort_key='name',
                                      sort_dir='desc')
        self.assertEqual(['SELECT'], seen)
        wave = {m['name']: m for m in page}['wave']
        self.assertEqual(['vm0', 'vm1', 'vm2'],
                         [s['server_id'] for s in wave['servers']])
        self.assertEqual(['server_id', 'name', 'state'],
                         list(wave['servers'][0]))
        self.assertEqual(6, wave['image_count'])
        last = wave['last_event']
        self.assertEqual(('progress', 'round 2: 3 bytes'),
                         (last['kind'], last['message']))
        self.assertTrue(last['created_at'].endswith('Z'))
        self.assertEqual('cutover approved',
                         {m['name']: m for m in page}['quiet'][
                             'last_event']['message'])
        # A marker costs no statement of its own; a missing one is named.
        del seen[:]
        page2 = actions.migration_list(self.ctx, sort_key='name',
                                       sort_dir='desc', limit=1,
                                       marker=page[0]['id'])
        self.assertEqual(['SELECT'], seen)
        self.assertEqual([page[1]['id']], [m['id'] for m in page2])
        e = self.assertRaises(exception.InvalidInput,
                              actions.migration_list, self.ctx,
                              marker='no-such-id')
        self.assertIn('marker', str(e))

    def test_migration_without_events_or_servers(self):
        m = self.create()
        with db.writer(self.ctx) as session:
            # Not through the ORM: events are append-only there.
            session.execute(sa.delete(db.models.Event.__table__))
            session.execute(sa.delete(db.models.MigrationServer.__table__))
        listed, = actions.migration_list(self.ctx)
        self.assertEqual(m['id'], listed['id'])
        self.assertIsNone(listed['last_event'])
        self.assertEqual([], listed['servers'])

    def test_cut_json_of_servers_is_read_again(self):
        self.create(n_servers=2)
        with mock.patch.object(db, '_rows_of', return_value=None):
            listed, = actions.migration_list(self.ctx)
        self.assertEqual(['vm0', 'vm1'],
                         [s['server_id'] for s in listed['servers']])
        self.assertIsNone(db._rows_of('[{"id": 1, "server_id"', ('id',)))
        self.assertEqual([{'n': 'a'}, {'n': 'b'}], db._rows_of(
            '[{"id": 9, "n": "b"}, {"id": 2, "n": "a"}]', ('n',)))

    def test_show_in_four_selects(self):
        m = self.create(n_servers=2, name='by-name')
        for i in range(3):
            db.add_event(self.ctx, 'migration', m['id'], 'progress',
                         'round %d' % i, migration_id=m['id'])
        seen = self.statements()
        shown = actions.migration_show(self.ctx, 'by-name', events_limit=2)
        self.assertEqual(['SELECT'] * 5, seen)  # by id, by name, then 3
        self.assertEqual(m['id'], shown['id'])
        self.assertEqual(['vm0', 'vm1'],
                         [s['server_id'] for s in shown['servers']])
        self.assertEqual(4, len(shown['volumes']))
        self.assertEqual(['round 2', 'round 1'],
                         [e['message'] for e in shown['events']])
        self.assertEqual('round 2', shown['last_event']['message'])
        self.assertEqual([], shown['shipments'])
        self.assertNotIn('image_count', shown)
        del seen[:]
        actions.migration_show(self.ctx, m['id'], events_limit=2)
        self.assertEqual(['SELECT'] * 4, seen)


class TestIdlePing(testtools.TestCase):
    """A pooled connection is pinged before use only after sitting idle.

    On a pooled engine made as oslo.db makes MySQL's (pre-ping on); the
    unit tests' SQLite engines have no pool.
    """

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.engine = sa.create_engine('sqlite:///%s/x.sqlite' % tmp,
                                       poolclass=sa.pool.QueuePool,
                                       pool_pre_ping=True)
        self.addCleanup(self.engine.dispose)
        db._ping_when_idle(self.engine)
        self.pings = []
        real = self.engine.dialect.do_ping
        self.useFixture(fixtures.MockPatchObject(
            self.engine.dialect, 'do_ping',
            side_effect=lambda c: self.pings.append(c) or real(c)))

    def use(self, times=3):
        for _ in range(times):
            with self.engine.connect() as conn:
                self.assertEqual(1, conn.execute(sa.text('SELECT 1'))
                                 .scalar())

    def test_recently_used_connection_is_not_pinged(self):
        self.assertFalse(self.engine.pool._pre_ping)
        self.use()
        self.assertEqual([], self.pings)

    def test_idle_connection_is_pinged(self):
        self.useFixture(fixtures.MockPatchObject(db, 'IDLE_PING_SECONDS', 0))
        self.use()
        # Not the new connection of the first use: the two after it.
        self.assertEqual(2, len(self.pings))

    def test_dead_idle_connection_is_replaced(self):
        self.use(1)
        first = self.engine.pool.checkedin()
        self.useFixture(fixtures.MockPatchObject(db, 'IDLE_PING_SECONDS', 0))
        self.engine.dialect.do_ping.side_effect = Exception('gone away')
        # The request itself succeeds, on a new connection.
        self.use(1)
        self.assertEqual(1, first)
        self.assertEqual(1, self.engine.dialect.do_ping.call_count)
