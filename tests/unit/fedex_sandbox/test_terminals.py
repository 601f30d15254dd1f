"""Each terminal of a sandbox has its own conf, state and key directories."""

import os

import fixtures
from oslo_config import cfg
import testtools

from fedex_sandbox import sandbox as sandbox_mod
from lsrp import opts


class TestTerminalConfs(testtools.TestCase):

    def load(self, path):
        conf = cfg.ConfigOpts()
        conf.register_opts(opts.ceph_opts, group='ceph')
        conf.register_opts(opts.shipment_opts, group='shipment')
        conf.register_opts(opts.server_opts, group='server')
        conf(['--config-file', path], default_config_files=[])
        return conf

    def test_two_terminals_share_nothing_and_stay_in_the_sandbox(self):
        root = self.useFixture(fixtures.TempDir()).path
        sb = sandbox_mod.Sandbox(root, base_port=22000)
        sb._write_terminal_confs()
        a, b = (self.load(sb.terminal_conf(s)) for s in ('site-a', 'site-b'))
        self.assertEqual((22300, 22301), (a.server.port, b.server.port))
        self.assertEqual(('terminal-site-a', 'terminal-site-b'),
                         (a.server.name, b.server.name))
        self.assertEqual(('site-a', 'site-b'),
                         (a.ceph.site_name, b.ceph.site_name))
        dirs = [c.shipment.state_dir for c in (a, b)] + [
            c.shipment.key_dir for c in (a, b)]
        self.assertEqual(4, len(set(dirs)))
        for d in dirs:
            self.assertTrue(d.startswith(root + os.sep), d)
            self.assertTrue(os.path.isdir(d))
            self.assertEqual(0o700, os.stat(d).st_mode & 0o777)
        self.assertEqual(sb.site('site-b').conf, b.ceph.conf_file)
