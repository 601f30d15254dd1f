"""The lsrp command's answers to bad input, without any service."""

import os
import subprocess
import sys

import fixtures
import testtools


class TestCli(testtools.TestCase):

    def lsrp(self, *args):
        work = self.useFixture(fixtures.TempDir()).path
        return subprocess.run(
            [sys.executable, '-m', 'lsrp.cli', '--shipment-key_dir',
             os.path.join(work, 'keys'), '--shipment-state_dir',
             os.path.join(work, 'state')] + list(args),
            capture_output=True, text=True, timeout=60)

    def test_remote_import_names_what_is_missing(self):
        result = self.lsrp('import', '--device', '/nonexistent',
                           '--remote', '127.0.0.1:1', '--tls-ca', 'ca.pem')
        self.assertEqual(2, result.returncode)
        self.assertIn('needs --server-name, --tls-cert, --tls-key',
                      result.stderr)

    def test_catchup_names_what_is_missing(self):
        # Every flag parsed (--server is not taken for the [server] group,
        # --name for the command's name); then the missing TLS files named.
        result = self.lsrp('catchup', '--shipment-id', 's1', '--base', 'b',
                           '--server', '127.0.0.1:1', '--server-name', 't-b',
                           '--name', 't-a', 'vms/x')
        self.assertEqual(2, result.returncode, result.stderr)
        self.assertIn('terminal at 127.0.0.1:1 needs --tls-ca, --tls-cert, '
                      '--tls-key', result.stderr)

    def test_verify_of_no_device(self):
        result = self.lsrp('verify', '--device', '/nonexistent')
        self.assertEqual(2, result.returncode)
        self.assertIn('none of the devices', result.stderr)
