"""Where a kept round may resume: the acknowledged offset of its streams."""

import testtools

from lsrp.server import service


class TestFrontier(testtools.TestCase):

    def session(self, *streams):
        shared = service.SharedSession('vms/d', sink=object(), shipment='s')
        for stream in streams:
            shared.attach(stream)
        return shared

    def test_the_slowest_stream_sets_the_offset(self):
        shared = self.session('a', 'b')
        shared.started(0)
        shared.acked['a'] = 8 << 20
        shared.acked['b'] = 3 << 20
        self.assertEqual(3 << 20, shared.frontier())

    def test_a_stream_without_acks_holds_it_at_the_start(self):
        shared = self.session('a')
        shared.started(5 << 20)       # this session itself resumed at 5 MiB
        shared.attach('b')
        shared.acked['a'] = 9 << 20
        self.assertEqual(5 << 20, shared.frontier())

    def test_a_failed_request_makes_it_unknown(self):
        shared = self.session('a')
        shared.started(0)
        shared.acked['a'] = 1 << 20
        shared.failed = True
        self.assertIsNone(shared.frontier())
        shared.started(0)             # the next snapshot starts clean
        self.assertEqual(0, shared.frontier())

    def test_a_new_snapshot_in_the_session_starts_over(self):
        shared = self.session('a')
        shared.started(0)
        shared.acked['a'] = 7 << 20
        shared.started(0)
        self.assertEqual(0, shared.frontier())
