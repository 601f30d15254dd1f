"""A wave's members told to Nova and Cinder a few at once (common)."""

import threading
import time
from unittest import mock

import testtools

from fedex_manager.flows.tasks import common


class TestForEach(testtools.TestCase):

    def test_a_few_at_once_and_every_outcome_in_order(self):
        running, most = [0], [0]
        lock = threading.Lock()

        def call(item):
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.05)
            with lock:
                running[0] -= 1
            return item * 10
        out = common.for_each(call, range(10), at_once=3)
        self.assertEqual([(i * 10, None) for i in range(10)], out)
        self.assertEqual(3, most[0])

    def test_errors_are_handed_back_after_every_call_ended(self):
        done = []

        def call(item):
            if item in (1, 3):
                raise ValueError('member %d' % item)
            time.sleep(0.1)
            done.append(item)
        out = common.for_each(call, range(6))
        # The others ran to their end: none left running behind the error.
        self.assertEqual([0, 2, 4, 5], sorted(done))
        self.assertEqual([None, 'member 1', None, 'member 3', None, None],
                         [e and str(e) for _, e in out])
        e = self.assertRaises(ValueError, common.first_error, out)
        self.assertEqual('member 1', str(e))

    def test_one_item_in_this_thread(self):
        seen = []
        common.for_each(lambda x: seen.append(threading.current_thread()),
                        ['only'])
        self.assertEqual([threading.current_thread()], seen)


class TestLockMembers(testtools.TestCase):
    """Each member locked has its event, whatever the others' outcome."""

    def test_a_failed_lock_leaves_the_others_recorded(self):
        members = [{'id': 'm%d' % i, 'dest_site_id': 's',
                    'servers': [{'server_id': 'srv%d' % i}]}
                   for i in range(3)]

        def lock(server_ids, why):
            if server_ids == ['srv1']:
                raise RuntimeError('Nova answered 500')
            return {server_ids[0]: 'locked'}
        events = []
        with mock.patch.object(common.nova_lock, 'enabled',
                               return_value=True), \
                mock.patch.object(common.nova_lock, 'lock', lock), \
                mock.patch.object(common.db, 'get',
                                  return_value={'name': 'site-b'}), \
                mock.patch.object(common.db, 'add_event',
                                  lambda ctx, kind, mid, *a, **k:
                                  events.append((mid, threading.current_thread()))):
            out = common.lock_members(None, members)
        self.assertEqual(['m0', 'm2'], sorted(mid for mid, _ in events))
        # Recorded by the caller's thread (SQLite: one writer).
        self.assertEqual({threading.current_thread()}, {t for _, t in events})
        self.assertEqual('Nova answered 500', str(out[1][1]))
        self.assertRaises(RuntimeError, common.first_error, out)
