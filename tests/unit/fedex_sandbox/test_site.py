import os
import socket
from unittest import mock

import fixtures
import testtools

from fedex_sandbox import sandbox
from fedex_sandbox import site
from lsrp import exception


class TestSiteLayout(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path

    def test_sites_do_not_share_ports(self):
        sb = sandbox.Sandbox(self.root, base_port=20000)
        a, b = sb.sites

        def ports(s):
            return {s.mon_v1, s.mon_v2} | set(range(s.bind_min,
                                                    s.bind_max + 1))
        self.assertEqual(set(), ports(a) & ports(b))
        self.assertEqual((20000, 20001), (a.mon_v2, a.mon_v1))
        self.assertEqual(20100, b.mon_v2)

    def test_ports_in_the_ephemeral_range_are_refused(self):
        ranges = self.useFixture(fixtures.TempDir()).join('range')
        with open(ranges, 'w') as f:
            f.write('32768\t60999\n')
        real = sandbox.ephemeral_ports
        self.useFixture(fixtures.MockPatch(
            'fedex_sandbox.sandbox.ephemeral_ports', lambda: real(ranges)))
        e = self.assertRaises(exception.PortsEphemeral,
                              sandbox.Sandbox(self.root,
                                              base_port=32000)._check_ports)
        self.assertIn('32000-33999', str(e))
        self.assertIn('of at most 30768', str(e))
        sandbox.Sandbox(self.root, base_port=30000)._check_ports()
        sandbox.Sandbox(self.root, base_port=61000)._check_ports()

    def test_conf_names_only_files_of_the_site(self):
        s = site.SandboxSite(self.root, 'site-a', 0, 20000, 8)
        os.makedirs(s.dir)
        s.write_conf('f00d')
        with open(s.conf) as f:
            text = f.read()
        self.assertIn('fsid = f00d', text)
        self.assertIn('[v2:127.0.0.1:20000,v1:127.0.0.1:20001]', text)
        self.assertIn('bluestore_block_size = %d' % (8 << 30), text)
        for line in text.splitlines():
            if line.startswith('/') or '= /' in line:
                self.assertIn(s.dir, line)

    def test_port_in_use_names_port_and_holder(self):
        s = site.SandboxSite(self.root, 'site-a', 0, 0, 8)
        with socket.socket() as sock:
            sock.bind(('127.0.0.1', 0))
            sock.listen()
            port = sock.getsockname()[1]
            s.mon_v2 = port
            e = self.assertRaises(exception.PortInUse, s.check_ports,
                                  {'mon.a': None})
        self.assertIn('port %d' % port, str(e))
        self.assertIn('by pid %d' % os.getpid(), str(e))

    def test_disk_full(self):
        sb = sandbox.Sandbox(self.root, min_free_mib=1 << 40)
        with mock.patch.object(site, 'check_programs'):
            e = self.assertRaises(exception.DiskFull, sb.up)
        self.assertIn(self.root, str(e))

    def test_missing_program_names_package(self):
        with mock.patch('shutil.which', return_value=None):
            e = self.assertRaises(exception.PackageMissing,
                                  site.check_programs)
        self.assertIn('apt-get install -y', str(e))

    def test_env_names_conf_and_keyring(self):
        s = site.SandboxSite(self.root, 'site-b', 1, 20000)
        names = dict(s.env())
        self.assertEqual(s.conf, names['FEDEX_SITE_B_CONF'])
        self.assertEqual(s.keyring, names['FEDEX_SITE_B_KEYRING'])


class TestBasePort(testtools.TestCase):
    """The base port: environment, else remembered, else the default."""

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        self.useFixture(fixtures.EnvironmentVariable(
            'FEDEX_SANDBOX_BASE_PORT'))

    def test_default_then_remembered(self):
        self.assertEqual(13300, sandbox.Sandbox(self.root).base_port)
        sandbox.Sandbox(self.root, base_port=24000)._remember()
        self.assertEqual(24000, sandbox.Sandbox(self.root).base_port)
        self.assertEqual(24100, sandbox.Sandbox(self.root).sites[1].mon_v2)

    def test_environment_wins(self):
        sandbox.Sandbox(self.root, base_port=24000)._remember()
        self.useFixture(fixtures.EnvironmentVariable(
            'FEDEX_SANDBOX_BASE_PORT', '26000'))
        self.assertEqual(26000, sandbox.Sandbox(self.root).base_port)

    def test_wan_links_differ_between_sandboxes(self):
        a = sandbox.Sandbox(self.root, base_port=24000)
        b = sandbox.Sandbox(self.root, base_port=26000)
        self.assertNotEqual(a.wan_number(1), b.wan_number(1))
        self.assertRaises(exception.SandboxError, a.wan_number, 16)
        self.assertRaises(exception.SandboxError, a.port, 2000)
