"""The sandbox's faults, on sandboxes of their own.

These tests start extra sandboxes in their own directories and port
ranges, so that breaking them never disturbs the shared one. The whole
life cycle of a third two-site sandbox is in tests/sandbox (by hand).
"""

import os
import socket
import subprocess
import sys

import fixtures
import testtools

from fedex_sandbox import sandbox as sandbox_mod
from lsrp import exception
from tests.functional import base


def cli(root, port, *args, env=None):
    """Run the real ``fedex-sandbox`` console script."""
    exe = os.path.join(os.path.dirname(sys.executable), 'fedex-sandbox')
    return subprocess.run([exe, '--sandbox-dir', root, '--sandbox-base_port',
                           str(port)] + list(args),
                          capture_output=True, text=True, env=env)


class TestSandboxFaults(testtools.TestCase):

    PORT = base.BASE_PORT + 1400

    def setUp(self):
        super().setUp()
        self.root = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                 'sb')

    def test_port_in_use_is_named_and_nothing_runs(self):
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(('127.0.0.1', self.PORT))
            sock.listen()
            result = cli(self.root, self.PORT, 'up')
        self.assertEqual(2, result.returncode)
        self.assertIn('port %d' % self.PORT, result.stderr)
        self.assertIn('in use by pid %d' % os.getpid(), result.stderr)
        sb = sandbox_mod.Sandbox(self.root, base_port=self.PORT)
        self.addCleanup(sb.destroy)
        for site in sb.sites:
            self.assertEqual([], [d.name for d in site.daemons()
                                  if d.pid() is not None])

    def test_missing_package_is_named(self):
        env = dict(os.environ, PATH=os.path.dirname(sys.executable))
        result = cli(self.root, self.PORT, 'up', env=env)
        self.assertEqual(2, result.returncode)
        self.assertIn('is not installed', result.stderr)
        self.assertIn('apt-get install', result.stderr)

    def test_disk_full_is_named(self):
        result = cli(self.root, self.PORT, '--sandbox-min_free_mib',
                     str(1 << 40), 'up')
        self.assertEqual(2, result.returncode)
        self.assertIn('MiB free in %s' % self.root, result.stderr)

    def test_status_of_nothing(self):
        result = cli(self.root, self.PORT, 'status')
        self.assertEqual(1, result.returncode)
        self.assertEqual(2, result.stdout.count('NOT CREATED'))

    def test_daemon_exit_names_daemon_and_log(self):
        sb = sandbox_mod.Sandbox(self.root, base_port=self.PORT)
        self.addCleanup(sb.destroy)
        site = sb.site('site-a')
        # Break the monitor's store after a good bootstrap: it must say so.
        sb.up()
        sb.down()
        with open(os.path.join(site.dir, 'mon', 'store.db', 'CURRENT'),
                  'w') as f:
            f.write('garbage\n')
        e = self.assertRaises(exception.DaemonFailed, sb.up)
        self.assertIn('mon.a', str(e))
        self.assertIn(site.log_dir, str(e))
