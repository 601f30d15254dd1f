"""Service processes of the mini-cloud: started, failed and stopped by pid."""

import functools
import os
import sys
import time
from unittest import mock

import fixtures
import testtools

from fedex_sandbox.services import base
from fedex_sandbox.services import ports
from lsrp import exception


class TestService(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = self.useFixture(fixtures.TempDir()).path

    def service(self, code, **kw):
        return base.Service('svc', [sys.executable, '-c', code],
                            os.path.join(self.dir, 'run'),
                            os.path.join(self.dir, 'log'),
                            # comm is the name exec'd, not a symlink's target.
                            marker='-c', **kw)

    def test_failed_start_names_service_and_log_tail(self):
        svc = self.service('print("cannot open the database"); exit(3)',
                           ready=lambda: False, start_timeout=10)
        e = self.assertRaises(exception.ServiceFailed, svc.ensure)
        self.assertIn('svc exited while starting', str(e))
        self.assertIn('cannot open the database', str(e))
        self.assertIn(svc.out_file, str(e))

    def test_started_then_stopped_by_pid(self):
        svc = self.service('import time; time.sleep(60)')
        self.assertTrue(svc.ensure())
        pid = svc.pid()
        self.assertIsNotNone(pid)
        self.assertFalse(svc.ensure(), 'a running service was restarted')
        self.assertEqual(pid, svc.stop())
        self.assertIsNone(svc.pid())
        self.assertFalse(os.path.exists(svc.pidfile))

    def test_ours_as_soon_as_started(self):
        """start() returns once /proc shows the new command line."""
        svc = self.service('import time; time.sleep(60)')
        seen = []
        real = base.processes.read_cmdline

        def exec_not_done_yet(pid):
            # The first look finds the arguments not laid out yet.
            seen.append(pid)
            return [] if len(seen) == 1 else real(pid)
        with mock.patch.object(base.processes, 'read_cmdline',
                               exec_not_done_yet):
            pid = svc.start()
        self.addCleanup(svc.stop)
        self.assertGreaterEqual(len(seen), 2)
        self.assertEqual(pid, svc.pid())

    def test_a_stranger_behind_the_pid_file_is_not_ours(self):
        svc = self.service('pass')
        os.makedirs(os.path.dirname(svc.pidfile))
        with open(svc.pidfile, 'w') as f:
            f.write('%d\n' % os.getppid())
        self.assertIsNone(svc.pid())
        self.assertIsNone(svc.stop())

    def test_a_stop_group_is_stopped_together(self):
        """Processes that ignore SIGTERM, one group: one timeout, not three."""
        svcs = []
        for i in range(3):
            flag = os.path.join(self.dir, 'ignoring-%d' % i)
            ignore = ('import signal, time; signal.signal(signal.SIGTERM, '
                      'signal.SIG_IGN); open(%r, "w"); time.sleep(60)' % flag)
            svc = base.Service(
                'svc-%d' % i, [sys.executable, '-c', ignore],
                os.path.join(self.dir, 'run'), os.path.join(self.dir, 'log'),
                marker='-c', stop_timeout=3, stop_group='computes',
                ready=functools.partial(os.path.exists, flag))
            svc.ensure()
            svcs.append(svc)
        pids = [svc.pid() for svc in svcs]

        class Set(base.ServiceSet):
            def services(self):
                return svcs
        begin = time.monotonic()
        stopped = Set().stop_services()
        # One timeout (3 s) and not three (9 s), with room for a busy CI.
        self.assertLess(time.monotonic() - begin, 6)
        self.assertEqual(sorted(zip(['svc-2', 'svc-1', 'svc-0'],
                                    reversed(pids))), sorted(stopped))
        for svc, pid in zip(svcs, pids):
            self.assertFalse(svc.is_ours(pid), 'pid %d still running' % pid)


class TestPorts(testtools.TestCase):

    def test_every_port_is_in_the_sandbox_service_range(self):
        offsets = list(ports.PORTS.values())
        self.assertEqual(len(offsets), len(set(offsets)), 'a port is shared')
        for name, offset in ports.PORTS.items():
            self.assertTrue(200 <= offset < 1000, name)
        last = ports.migration_range(9)[1]
        self.assertLess(last, 600)


class TestGuestRing(testtools.TestCase):

    def test_ticks_are_read_in_counter_order_and_gaps_measured(self):
        from fedex_sandbox.services import guest
        from fedex_sandbox.services import guest_reader
        ring = bytearray(guest.SLOTS * guest.SLOT)
        for n, up in ((5, 1.00), (6, 1.02), (7, 1.50), (8, 1.52)):
            slot = n % guest.SLOTS
            # As the guest's dd writes it: the line, NULs to the slot's end.
            rec = ('FEDEXTICK %d %.2f\n' % (n, up)).encode()
            ring[slot * guest.SLOT:(slot + 1) * guest.SLOT] = \
                rec.ljust(guest.SLOT, b'\0')
        ticks = guest_reader.parse_ring(bytes(ring))
        self.assertEqual([5, 6, 7, 8], [t.counter for t in ticks])
        self.assertAlmostEqual(
            0.48, guest_reader.GuestReader.largest_guest_gap(ticks))
        self.assertEqual([], guest_reader.parse_ring(bytes(4096)))

    def test_command_line_sets_dirtying_and_period(self):
        from fedex_sandbox.services import guest
        self.assertEqual(guest.BASE_CMDLINE, guest.cmdline())
        self.assertEqual(guest.BASE_CMDLINE + ' fedex_dirty_mb_s=20 '
                         'fedex_tick_ms=20', guest.cmdline(20, tick_ms=20))
        init = guest.init_script()
        self.assertIn('tick_ms=%d\n' % guest.PERIOD_MS, init)
        self.assertIn('usleep $((tick_ms * 1000))', init)


class TestNeutronStandIn(testtools.TestCase):

    def call(self, method, path):
        from fedex_sandbox.services import neutron_stub
        import json
        out = {}

        def start_response(status, headers):
            out['status'] = status
        body = b''.join(neutron_stub.application(
            {'REQUEST_METHOD': method, 'PATH_INFO': path}, start_response))
        return out['status'], json.loads(body)

    def test_reads_answer_empty_collections(self):
        self.assertEqual(('200 OK', {'ports': []}),
                         self.call('GET', '/v2.0/ports'))
        self.assertEqual(('200 OK', {'networks': []}),
                         self.call('GET', '/v2.0/networks.json'))

    def test_writes_are_refused_loudly(self):
        status, body = self.call('POST', '/v2.0/ports')
        self.assertEqual('501 Not Implemented', status)
        self.assertIn('--nic none', body['NeutronError']['message'])
