"""Pid-file handling with real processes (``sleep``), no Ceph needed."""

import os
import subprocess
import time

import fixtures
import testtools

from fedex_sandbox import processes
from lsrp import exception


class TestDaemon(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(fixtures.FakeLogger())   # expected warnings
        self.dir = self.useFixture(fixtures.TempDir()).path
        self.conf = os.path.join(self.dir, 'ceph.conf')
        open(self.conf, 'w').close()
        # 'sleep <n> <conf>' is not valid for sleep; use a shell so that our
        # conf path shows up in the command line like a daemon's -c <conf>.
        self.daemon = processes.Daemon(
            'site-x', 'mon.a', ['/bin/sh', '-c', 'sleep 30', 'sh',
                                self.conf],
            self.conf, self.dir, os.path.join(self.dir, 'mon.a.log'))

    def _foreign(self):
        proc = subprocess.Popen(['sleep', '30'])
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        # NOTE: between fork and exec the child's /proc entry shows this
        # Python (or, on a loaded machine, an empty command line): wait
        # until it is really 'sleep 30', so that the test checks the
        # daemon's handling of a foreign process and not the race.
        deadline = time.monotonic() + 30
        while processes.read_cmdline(proc.pid) != ['sleep', '30']:
            if time.monotonic() > deadline or proc.poll() is not None:
                self.fail('sleep 30 (pid %d) did not start: %r' % (
                    proc.pid, processes.read_cmdline(proc.pid)))
            time.sleep(0.01)
        return proc

    def test_start_records_pid_and_stop_ends_it(self):
        pid = self.daemon.start()
        self.assertEqual(pid, self.daemon.pid())
        self.assertEqual(pid, self.daemon.stop(timeout=5))
        self.assertIsNone(self.daemon.pid())
        self.assertFalse(os.path.exists(self.daemon.pidfile))
        self.assertIsNone(processes.read_cmdline(pid))

    def test_no_pidfile_means_not_running(self):
        self.assertIsNone(self.daemon.pid())
        self.assertIsNone(self.daemon.stop())

    def test_foreign_pid_is_never_signalled(self):
        other = self._foreign()
        with open(self.daemon.pidfile, 'w') as f:
            f.write('%d\n' % other.pid)
        e = self.assertRaises(exception.NotOurProcess, self.daemon.stop)
        self.assertIn(str(other.pid), str(e))
        self.assertIn('sleep 30', str(e))
        self.assertIn(self.daemon.pidfile, str(e))
        self.assertIsNone(other.poll(), 'the foreign process was touched')

    def test_dead_pid_is_stale(self):
        other = self._foreign()
        other.kill()
        other.wait()
        with open(self.daemon.pidfile, 'w') as f:
            f.write('%d\n' % other.pid)
        self.assertIsNone(self.daemon.pid())

    def test_check_alive_names_log(self):
        with open(self.daemon.log_file, 'w') as f:
            f.write('first\nbind failed: address in use\n')
        e = self.assertRaises(exception.DaemonFailed, self.daemon.check_alive)
        self.assertIn('mon.a exited', str(e))
        self.assertIn(self.daemon.log_file, str(e))
        self.assertIn('address in use', str(e))
