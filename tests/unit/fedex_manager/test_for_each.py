"""common.for_each: a wave's members told to Nova and Cinder a few at once."""

import threading
import time

import testtools

from fedex_manager.flows.tasks import common


class TestForEach(testtools.TestCase):

    def test_a_few_at_once_and_all_done(self):
        running, most, done = [0], [0], []
        lock = threading.Lock()

        def call(item):
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.05)
            with lock:
                running[0] -= 1
                done.append(item)
        common.for_each(call, range(10), at_once=3)
        self.assertEqual(list(range(10)), sorted(done))
        self.assertEqual(3, most[0])

    def test_the_first_error_after_every_call_ended(self):
        done = []

        def call(item):
            if item in (1, 3):
                raise ValueError('member %d' % item)
            time.sleep(0.1)
            done.append(item)
        e = self.assertRaises(ValueError, common.for_each, call, range(6))
        self.assertEqual('member 1', str(e))
        # The others ran to their end: none left running behind the error.
        self.assertEqual([0, 2, 4, 5], sorted(done))

    def test_one_item_in_this_thread(self):
        seen = []
        common.for_each(lambda x: seen.append(threading.current_thread()),
                        ['only'])
        self.assertEqual([threading.current_thread()], seen)
