"""The API's hot reads (a list, a show): what they return and how few
statements they cost; keyset pagination; the idle ping."""

from unittest import mock

import fixtures
import sqlalchemy as sa
import testtools

from fedex_manager.actions import migrations
from fedex_manager.db import api as db
from fedex_manager.db import idle_ping
from fedex_manager.db import models
from lsrp import exception
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

    def test_list_is_two_selects_with_servers_and_last_event(self):
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
        page = migrations.migration_list(self.ctx, sort_key='name',
                                         sort_dir='desc')
        # The page, then its servers (not a query per migration).
        self.assertEqual(['SELECT', 'SELECT'], seen)
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
        page2 = migrations.migration_list(self.ctx, sort_key='name',
                                          sort_dir='desc', limit=1,
                                          marker=page[0]['id'])
        self.assertEqual(['SELECT', 'SELECT'], seen)
        self.assertEqual([page[1]['id']], [m['id'] for m in page2])
        e = self.assertRaises(exception.InvalidInput,
                              migrations.migration_list, self.ctx,
                              marker='no-such-id')
        self.assertIn('marker', str(e))

    def test_migration_without_events_or_servers(self):
        m = self.create()
        with db.writer(self.ctx) as session:
            # Not through the ORM: events are append-only there.
            session.execute(sa.delete(models.Event.__table__))
            session.execute(sa.delete(models.MigrationServer.__table__))
        listed, = migrations.migration_list(self.ctx)
        self.assertEqual(m['id'], listed['id'])
        self.assertIsNone(listed['last_event'])
        self.assertEqual([], listed['servers'])

    def test_show_in_five_selects(self):
        m = self.create(n_servers=2, name='by-name')
        for i in range(3):
            db.add_event(self.ctx, 'migration', m['id'], 'progress',
                         'round %d' % i, migration_id=m['id'])
        seen = self.statements()
        shown = migrations.migration_show(self.ctx, 'by-name',
                                          events_limit=2)
        self.assertEqual(['SELECT'] * 6, seen)  # by id, by name, then 4
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
        migrations.migration_show(self.ctx, m['id'], events_limit=2)
        self.assertEqual(['SELECT'] * 5, seen)


class TestPagination(test_actions.ActionsTestCase):
    """Every list pages alike, NULL sort keys included."""

    def pages(self, list_, limit=2, **kw):
        """Every page of ``list_`` in turn, each item's id."""
        out, marker = [], None
        while True:
            page = [m['id'] for m in list_(self.ctx, limit=limit,
                                           marker=marker, **kw)]
            out += page
            if len(page) < limit:
                return out
            marker = page[-1]

    def test_pages_by_a_nullable_key(self):
        made = [self.create(name=n) for n in
                ('b', None, 'a', None, 'b', 'c', None)]
        for sort_dir in ('asc', 'desc'):
            whole = [m['id'] for m in migrations.migration_list(
                self.ctx, sort_key='name', sort_dir=sort_dir)]
            self.assertEqual(sorted(m['id'] for m in made), sorted(whole))
            # Nameless ones first ascending, last descending.
            names = [{m['id']: m['name'] for m in made}[i] for i in whole]
            self.assertEqual([None] * 3, names[:3] if sort_dir == 'asc'
                             else names[-3:])
            for limit in (1, 2, 3):
                self.assertEqual(whole, self.pages(
                    migrations.migration_list, limit, sort_key='name',
                    sort_dir=sort_dir))
                # The ORM lists of any kind page the same way.
                self.assertEqual(whole, self.pages(
                    lambda ctx, **kw: db.list_(ctx, 'migration', **kw),
                    limit, sort_key='name', sort_dir=sort_dir))

    def test_generic_list_marker(self):
        self.create()
        self.assertEqual([], db.list_(
            self.ctx, 'migration', marker=db.list_(
                self.ctx, 'migration')[0]['id']))
        for sort_key in ('created_at', 'name', 'id'):
            e = self.assertRaises(exception.InvalidInput, db.list_,
                                  self.ctx, 'site', marker='no-such-site',
                                  sort_key=sort_key)
            self.assertIn('no site no-such-site', str(e))
        e = self.assertRaises(exception.InvalidInput, db.list_, self.ctx,
                              'site', sort_key='nope')
        self.assertIn('sort_key', str(e))

    def test_events_page_by_id_past_any_marker(self):
        m = self.create()
        for i in range(3):
            db.add_event(self.ctx, 'migration', m['id'], 'progress',
                         'round %d' % i, migration_id=m['id'])
        ids = [e['id'] for e in db.events(self.ctx,
                                          {'migration_id': m['id']})]
        self.assertEqual(sorted(ids), ids)
        self.assertEqual(ids[2:], [e['id'] for e in db.events(
            self.ctx, {'migration_id': m['id']}, marker=ids[1])])
        self.assertEqual(ids[:1][::-1], [e['id'] for e in db.events(
            self.ctx, {'migration_id': m['id']}, marker=ids[1],
            sort_dir='desc')])
        # An event id is its own key: no row need have it.
        self.assertEqual(ids, [e['id'] for e in db.events(
            self.ctx, {'migration_id': m['id']}, marker=0)])


class TestIdlePing(testtools.TestCase):
    """A pooled connection is pinged before use only after sitting idle.

    On a pooled engine asking for pre-ping as oslo.db's MySQL engines do,
    with the plugin named in its URL as :func:`db.configure` names it;
    the unit tests' SQLite engines from oslo.db have no pool.
    """

    def setUp(self):
        super().setUp()
        tmp = self.useFixture(fixtures.TempDir()).path
        self.engine = sa.create_engine(
            'sqlite:///%s/x.sqlite?plugin=%s' % (tmp, idle_ping.NAME),
            poolclass=sa.pool.QueuePool, pool_pre_ping=True)
        self.addCleanup(self.engine.dispose)
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
        # Neither by the plugin nor by SQLAlchemy's pre-ping.
        self.use()
        self.assertEqual([], self.pings)

    def test_idle_connection_is_pinged(self):
        self.useFixture(fixtures.MockPatchObject(
            idle_ping, 'IDLE_PING_SECONDS', 0))
        self.use()
        # Not the new connection of the first use: the two after it.
        self.assertEqual(2, len(self.pings))

    def test_dead_idle_connection_is_replaced(self):
        self.use(1)
        first = self.engine.pool.checkedin()
        self.useFixture(fixtures.MockPatchObject(
            idle_ping, 'IDLE_PING_SECONDS', 0))
        self.engine.dialect.do_ping.side_effect = Exception('gone away')
        # The request itself succeeds, on a new connection.
        self.use(1)
        self.assertEqual(1, first)
        self.assertEqual(1, self.engine.dialect.do_ping.call_count)

    def test_configure_names_the_plugin(self):
        """oslo.db's engine asks for pre-ping; the plugin takes it off."""
        tmp = self.useFixture(fixtures.TempDir()).path
        seen = []
        real = idle_ping.IdlePingPlugin.handle_pool_kwargs

        def spy(plugin, pool_cls, pool_args):
            seen.append(pool_args.get('pre_ping'))
            real(plugin, pool_cls, pool_args)
            seen.append(pool_args.get('pre_ping'))
        with mock.patch.object(idle_ping.IdlePingPlugin,
                               'handle_pool_kwargs', spy):
            db.configure('sqlite:///%s/y.sqlite' % tmp)
        self.addCleanup(db.get_engine().dispose)
        self.assertEqual([True, False], seen)
        self.assertNotIn('plugin', db.get_engine().url.query)
