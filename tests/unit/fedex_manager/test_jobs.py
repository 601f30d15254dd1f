"""jobs.post: the post lock is held from the generation bump to the post."""

import contextlib

from fedex_manager.actions import migrations
from fedex_manager.db import api as db
from fedex_manager import jobs
from lsrp import exception
from tests.unit.fedex_manager import test_actions


class HoldingPoster(object):
    """Records, at each post, whether the hold was held then."""

    def __init__(self, hold_error=None):
        self.held, self.posts, self.hold_error = 0, [], hold_error
        self.log = []

    @contextlib.contextmanager
    def hold(self, migration_id):
        if self.hold_error:
            raise self.hold_error
        self.log.append(('hold', migration_id))
        self.held += 1
        try:
            yield
        finally:
            self.held -= 1

    def __call__(self, migration_id, phase, generation):
        self.log.append(('post', migration_id))
        self.posts.append((phase, generation, self.held > 0))
        return 'job-%d' % len(self.posts)


class TestPost(test_actions.ActionsTestCase):

    def setUp(self):
        super().setUp()
        self.m = self.create(start=False)
        self.poster = HoldingPoster()
        jobs.set_poster(self.poster)

    def gen(self):
        return db.get(self.ctx, 'migration', self.m['id'])['generation']

    def test_post_under_hold(self):
        self.assertEqual('job-1', jobs.post(self.ctx, self.m['id'],
                                            'prepare'))
        self.assertEqual([('prepare', self.gen(), True)], self.poster.posts)

    def test_only_if_false_posts_nothing_and_keeps_generation(self):
        before = self.gen()
        seen = []
        self.assertIsNone(jobs.post(
            self.ctx, self.m['id'], 'prepare',
            only_if=lambda row: seen.append(self.poster.held) and False))
        self.assertEqual([True], seen)   # judged under the hold
        self.assertEqual([], self.poster.posts)
        self.assertEqual(before, self.gen())

    def test_hold_lost_sweeper_waits_facade_records(self):
        self.poster.hold_error = RuntimeError('ConnectionLoss')
        before = self.gen()
        # The sweeper cannot be sure: it posts nothing, bumps nothing.
        self.assertIsNone(jobs.post(self.ctx, self.m['id'], 'prepare',
                                    only_if=lambda row: True))
        self.assertEqual(before, self.gen())
        # The facade's state change stands; the post is left to a sweep.
        self.assertIsNone(jobs.post(self.ctx, self.m['id'], 'prepare'))
        self.assertEqual(before + 1, self.gen())
        self.assertEqual([], self.poster.posts)
        said = [e['message'] for e in db.events(
            self.ctx, {'migration_id': self.m['id'], 'kind': 'job'})]
        self.assertIn('could not be posted (ConnectionLoss)', said[-1])


class TestCreateHolds(test_actions.ActionsTestCase):
    """A new migration's post lock is taken before its row exists."""

    def setUp(self):
        super().setUp()
        self.poster = HoldingPoster()
        jobs.set_poster(self.poster)
        real = self.poster.hold

        @contextlib.contextmanager
        def hold(migration_id):
            # No sweeper can see the row before the lock is held.
            self.assertRaises(exception.NotFound, db.get, self.ctx,
                              'migration', migration_id)
            with real(migration_id):
                yield
        self.poster.hold = hold

    def test_create(self):
        m = self.create()
        self.assertEqual([('hold', m['id']), ('post', m['id'])],
                         self.poster.log)
        self.assertEqual([('prepare', 1, True)], self.poster.posts)

    def test_wave_in_one_shipment_holds_all_until_all_are_posted(self):
        made = migrations.migrations_create(self.ctx, [
            {'servers': [{'server_id': 'w%d' % i,
                          'volumes': ['vms/w%d' % i]}],
             'source_site': 'site-a', 'dest_site': 'site-b'}
            for i in range(3)], one_shipment=True)
        ids = [m['id'] for m in made]
        want = [('hold', i) for i in ids] + [('post', i) for i in ids]
        self.assertEqual(want, self.poster.log)
        self.assertEqual([True] * 3, [p[2] for p in self.poster.posts])
