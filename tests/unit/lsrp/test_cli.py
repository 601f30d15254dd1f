"""The lsrp command's answers to bad input, without any service."""

import io
import json
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


# ``lsrp`` with the cluster and the importer replaced: what the answer
# names, without Ceph.
FAKE_IMPORT = """
import sys
from unittest import mock

from lsrp import cli


class Cluster(object):
    def __init__(self, conffile, keyring=None, site=None, **kw):
        self.conffile, self.site = conffile, site
        self.fsid = 'fsid-of-' + conffile.split('/')[-2]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


class Importer(object):
    def __init__(self, cluster, *args, **kw):
        pass

    def run(self, devices, expect_digest=None):
        return ['vms/disk0']


with mock.patch.object(cli, 'Cluster', Cluster), mock.patch.object(
        cli.importer_mod, 'Importer', Importer):
    sys.exit(cli.main(sys.argv[1:]))
"""


class TestSiteNamed(testtools.TestCase):
    """The answer names the cluster written to, not a default site."""

    def lsrp(self, *args, config=None):
        work = self.useFixture(fixtures.TempDir()).path
        argv = [sys.executable, '-c', FAKE_IMPORT, '--shipment-key_dir',
                os.path.join(work, 'keys'), '--shipment-state_dir',
                os.path.join(work, 'state')]
        if config:
            path = os.path.join(work, 'lsrp.conf')
            with open(path, 'w') as f:
                f.write(config)
            argv += ['--config-file', path]
        result = subprocess.run(argv + list(args), capture_output=True,
                                text=True, timeout=60)
        self.assertEqual(0, result.returncode, result.stderr)
        return result.stdout

    def test_ceph_conf_alone_names_its_cluster(self):
        out = self.lsrp('import', '--device', '/d0', '--ceph-conf',
                        '/etc/ceph/site-b/ceph.conf')
        self.assertEqual('imported at cluster fsid-of-site-b '
                         '(/etc/ceph/site-b/ceph.conf): vms/disk0\n', out)

    def test_configured_site_is_not_given_to_another_cluster(self):
        config = ('[ceph]\nsite_name = site-a\n'
                  'conf_file = /etc/ceph/site-a/ceph.conf\n')
        out = self.lsrp('import', '--device', '/d0', '--ceph-conf',
                        '/etc/ceph/site-b/ceph.conf', config=config)
        self.assertNotIn('site-a', out)
        self.assertIn('fsid-of-site-b', out)
        # The configured cluster keeps its configured name.
        self.assertEqual('imported at site-a: vms/disk0\n',
                         self.lsrp('import', '--device', '/d0',
                                   config=config))

    def test_site_flag_names_it(self):
        out = self.lsrp('import', '--device', '/d0', '--ceph-conf',
                        '/etc/ceph/b/ceph.conf', '--site', 'site-b',
                        '--progress', 'json')
        self.assertEqual({'event': 'imported', 'images': ['vms/disk0'],
                          'site': 'site-b', 'fsid': 'fsid-of-b'},
                         json.loads(out))


class TestExitCodes(testtools.TestCase):
    """The documented exit codes hold for what a remote terminal answers."""

    def run_failing(self, error):
        from lsrp import cli

        def command(args):
            raise error
        self.useFixture(fixtures.MonkeyPatch(
            'lsrp.cli.COMMANDS', {'catchup': command}))
        args = type('Args', (), {'name': 'catchup'})()
        stderr = io.StringIO()
        self.useFixture(fixtures.MonkeyPatch('sys.stderr', stderr))
        code = cli.run_command(args)
        return code, stderr.getvalue()

    def test_remote_digest_mismatch_is_a_verification_failure(self):
        from lsrp import exception
        for code in ('DIGEST_MISMATCH', 'BASE_DIFFERS'):
            exit_code, text = self.run_failing(exception.RemoteError(
                peer='terminal-b at 127.0.0.1:1', request='REPLICATION_START',
                code=code, reason='LSRP protocol error %s: vms/x@s1 differs'
                % code))
            self.assertEqual(3, exit_code)
            self.assertEqual(
                'lsrp catchup: verification failed: terminal-b at '
                '127.0.0.1:1 refused REPLICATION_START: %s: vms/x@s1 differs'
                '\n' % code, text)

    def test_other_refusals_and_lost_peers_are_errors(self):
        from lsrp import exception
        for error in (exception.RemoteError(
                peer='p', request='INIT_SESSION', code='NOT_ALLOWED',
                reason='no'), ConnectionResetError(),
                exception.TerminalUnreachable(peer='p', reason='down')):
            exit_code, text = self.run_failing(error)
            self.assertEqual(2, exit_code)
            self.assertEqual(1, len(text.splitlines()), text)
            self.assertTrue(text.startswith('lsrp catchup: error: '), text)
