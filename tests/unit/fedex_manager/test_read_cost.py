"""What keeps a list and a show cheap as the tables grow, and that the
cheaper paths answer as the plain ones did."""

from unittest import mock

import sqlalchemy as sa

from fedex_manager.actions import migrations
from fedex_manager.actions import progress
from fedex_manager.db import api as db
from fedex_manager.db import models
from fedex_manager import policy
from fedex_manager import states
from tests.unit.fedex_manager.api import test_api
from tests.unit.fedex_manager import test_actions


class TestPageIsARange(test_actions.ActionsTestCase):

    def plan_of_next_page(self, sort_key, sort_dir):
        """SQLite's plan of the page after a marker, one line per step."""
        seen = []

        def record(conn, cursor, statement, params, *args):
            if statement.lstrip().upper().startswith('SELECT'):
                seen.append((statement, params))
        engine = db.get_engine()
        sa.event.listen(engine, 'before_cursor_execute', record)
        self.addCleanup(sa.event.remove, engine, 'before_cursor_execute',
                        record)
        first = migrations.migration_list(self.ctx, limit=2,
                                          sort_key=sort_key,
                                          sort_dir=sort_dir)
        del seen[:]
        migrations.migration_list(self.ctx, limit=2, marker=first[-1]['id'],
                                  sort_key=sort_key, sort_dir=sort_dir)
        statement, params = seen[0]
        with engine.connect() as conn:
            return [r[-1] for r in conn.exec_driver_sql(
                'EXPLAIN QUERY PLAN ' + statement, params)]

    def test_next_page_is_a_range_not_a_scan_to_the_marker(self):
        for _ in range(5):
            self.create()
        for sort_key in ('created_at', 'updated_at'):
            for sort_dir, op in (('desc', '<'), ('asc', '>')):
                plan = self.plan_of_next_page(sort_key, sort_dir)
                self.assertIn(
                    'SEARCH migrations USING INDEX ix_migrations_%s_id '
                    '(%s%s?)' % (sort_key, sort_key, op), plan,
                    (sort_key, sort_dir))

    def pages(self, limit, **kw):
        out, marker = [], None
        while True:
            page = [m['id'] for m in migrations.migration_list(
                self.ctx, limit=limit, marker=marker, **kw)]
            out += page
            if len(page) < limit:
                return out
            marker = page[-1]

    def test_pages_cover_ties_of_the_sort_key(self):
        made = [self.create(name=n)['id'] for n in
                ('b', None, 'a', 'b', None, 'c', 'a')]
        # Three share one creation time: the marker's own time is still
        # on the next page (the bound is <=, the id decides).
        with db.writer(self.ctx) as session:
            session.execute(sa.update(models.Migration.__table__).where(
                models.Migration.id.in_(made[1:4])).values(
                created_at=db.utcfromiso('2026-01-01T00:00:00Z')))
        for sort_key in ('created_at', 'updated_at', 'name', 'state', 'id'):
            for sort_dir in ('asc', 'desc'):
                whole = [m['id'] for m in migrations.migration_list(
                    self.ctx, sort_key=sort_key, sort_dir=sort_dir)]
                self.assertEqual(sorted(made), sorted(whole))
                for limit in (1, 2, 3):
                    self.assertEqual(whole, self.pages(
                        limit, sort_key=sort_key, sort_dir=sort_dir),
                        (sort_key, sort_dir, limit))


class TestShowStatementsBuiltOnce(test_actions.ActionsTestCase):

    def test_events_limit_is_a_parameter_of_each_show(self):
        m = self.create(name='named')
        first = db.events(self.ctx, {'migration_id': m['id']})
        for i in range(4):
            db.add_event(self.ctx, 'migration', m['id'], 'progress',
                         'round %d' % i, migration_id=m['id'])
        total = len(first) + 4
        for ident in (m['id'], 'named'):
            for limit, last in ((1, 'round 3'), (3, 'round 1'),
                                (20, first[0]['message'])):
                shown = migrations.migration_show(self.ctx, ident,
                                                  events_limit=limit)
                self.assertEqual(m['id'], shown['id'])
                self.assertEqual(min(limit, total), len(shown['events']))
                self.assertEqual(last, shown['events'][-1]['message'])
            self.assertEqual([], migrations.migration_show(
                self.ctx, ident, events_limit=0)['events'])

    def test_show_of_another_migration_is_its_own(self):
        a = self.create(n_servers=2)
        b = self.create(n_servers=1)
        for m, n in ((a, 2), (b, 1)):
            shown = migrations.migration_show(self.ctx, m['id'])
            self.assertEqual(m['id'], shown['id'])
            self.assertEqual(n, len(shown['servers']))
            self.assertEqual(2 * n, len(shown['volumes']))
            self.assertEqual({m['id']}, {v['migration_id']
                                         for v in shown['volumes']})


class TestAllowedActions(test_actions.ActionsTestCase):

    def annotate(self, state, approved=False):
        return progress.annotate({
            'state': state, 'cutover_approved': approved, 'bytes_total': 0,
            'bytes_done': 0, 'options': {}})['allowed_actions']

    def test_what_each_state_allows(self):
        self.assertEqual(['abort', 'approve_cutover'],
                         self.annotate(states.READY_FOR_CUTOVER))
        # The same state once approved: not the answer kept for the first.
        self.assertEqual(['abort'],
                         self.annotate(states.READY_FOR_CUTOVER, True))
        self.assertEqual(['abort', 'reship', 'seed_over_wan'],
                         self.annotate(states.IN_TRANSIT))
        self.assertEqual(['delete'], self.annotate(states.CLEANED))
        self.assertIn('retry', self.annotate(states.FAILED))

    def test_each_answer_is_the_callers_own(self):
        mine = self.annotate(states.IN_TRANSIT)
        mine.append('scribbled')
        self.assertNotIn('scribbled', self.annotate(states.IN_TRANSIT))


class TestCrossProjectShow(test_api.Fixture):

    def test_one_policy_check_for_another_projects_show(self):
        self.terminals()
        self.devices()
        theirs = self.create(project='p2')
        real = policy.authorize
        with mock.patch.object(policy, 'authorize',
                               side_effect=real) as checks:
            got = self.call('GET', '/v1/migrations/%s' % theirs['id'],
                            roles=test_api.ADMIN, status=200)
        self.assertEqual(theirs['id'], got.json['migration']['id'])
        self.assertEqual(1, checks.call_count)
        # Its writes are still checked against their own rule.
        self.call('GET', '/v1/migrations/%s' % theirs['id'],
                  roles=test_api.MEMBER, status=404)
        self.call('PATCH', '/v1/migrations/%s' % theirs['id'],
                  {'rate_cap': 5}, roles=test_api.READER, project='p2',
                  status=403)
