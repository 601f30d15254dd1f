"""jobs.post: the post lock is held from the generation bump to the post."""

import contextlib

from lsrp.manager.db import api as db
from lsrp.manager import jobs
from tests.unit.lsrp.manager import test_actions


class HoldingPoster(object):
    """Records, at each post, whether the hold was held then."""

    def __init__(self, hold_error=None):
        self.held, self.posts, self.hold_error = False, [], hold_error

    @contextlib.contextmanager
    def hold(self, migration_id):
        if self.hold_error:
            raise self.hold_error
        self.held = True
        try:
            yield
        finally:
            self.held = False

    def __call__(self, migration_id, phase, generation):
        self.posts.append((phase, generation, self.held))
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
