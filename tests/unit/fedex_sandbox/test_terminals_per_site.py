"""``fedex-sandbox up --terminals-per-site N``: more terminals at each site.

Their configs, ports, certificates, slots and services; the count is
remembered; the first terminals stay as they were. (The manager spreading
migrations over them, with their agents running: the functional test
tests/functional/manager/test_terminals_per_site.py.)
"""

import argparse
import os
from unittest import mock

import fixtures
from oslo_config import cfg
import testtools

from fedex_manager.agent import agent
from fedex_sandbox import cli
from fedex_sandbox import manager as manager_mod
from fedex_sandbox import sandbox as sandbox_mod
from fedex_sandbox.services import base as services_base
from lsrp import exception

BASE = 22000


class ManagerLayerTestCase(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.root = self.useFixture(fixtures.TempDir()).path
        self.sb = sandbox_mod.Sandbox(self.root, base_port=BASE)
        self.sb._make_pki()

    def layer(self):
        """A new layer: what a later command on the sandbox makes."""
        return manager_mod.SandboxManager(self.sb)

    def load(self, path):
        # What lsrp-agent reads.
        conf = cfg.ConfigOpts()
        agent.register_opts(conf)
        conf(['--config-file', path], default_config_files=[])
        return conf


class TestCount(ManagerLayerTestCase):

    def test_one_terminal_per_site_by_default(self):
        layer = self.layer()
        self.assertEqual(1, layer.terminals_per_site)
        self.assertEqual(['fedex-conductor', 'lsrp-agent-site-a',
                          'lsrp-agent-site-b'],
                         [s.name for s in layer.services()])
        self.assertEqual(['terminal-site-a', 'terminal-site-b'],
                         layer.terminal_names())

    def test_the_count_is_remembered_for_later_commands(self):
        self.layer().set_terminals_per_site(2)
        layer = self.layer()
        self.assertEqual(2, layer.terminals_per_site)
        self.assertEqual(['fedex-conductor', 'lsrp-agent-site-a',
                          'lsrp-agent-site-b', 'lsrp-agent-site-a-2',
                          'lsrp-agent-site-b-2'],
                         [s.name for s in layer.services()])
        self.assertEqual(['terminal-site-a', 'terminal-site-b',
                          'terminal-site-a-2', 'terminal-site-b-2'],
                         layer.terminal_names())

    def test_a_count_the_ports_cannot_hold_is_refused(self):
        for bad in (0, manager_mod.MAX_TERMINALS_PER_SITE + 1):
            e = self.assertRaises(exception.SandboxError,
                                  self.layer().set_terminals_per_site, bad)
            self.assertIn('%d terminals per site' % bad, str(e))
        self.assertEqual(1, self.layer().terminals_per_site)

    def test_every_terminal_port_is_the_sandboxs_and_forwarded(self):
        from fedex_sandbox import wan
        layer = self.layer()
        n = manager_mod.MAX_TERMINALS_PER_SITE
        offsets = [layer.terminal_port(site, i) - BASE
                   for i in range(1, n + 1) for site in manager_mod.SITES]
        self.assertEqual(len(offsets), len(set(offsets)))
        lo, hi = wan.TERMINAL_PORT_RANGES[0]
        for offset in offsets:
            self.assertTrue(lo <= offset <= hi, offset)
        self.assertNotIn(sandbox_mod.DEMO_PORT, offsets)


class TestConfigs(ManagerLayerTestCase):

    def test_two_per_site_share_nothing_and_the_first_stay_the_same(self):
        layer = self.layer()
        layer.write_confs()
        work = layer.dep.work
        before = {s: open(os.path.join(work, 'agent-%s.conf' % s)).read()
                  for s in manager_mod.SITES}
        layer.set_terminals_per_site(2)
        layer = self.layer()
        layer._prepare_terminals()
        changed = layer.write_confs()
        # The first terminals' configs are untouched: no restart.
        self.assertEqual(sorted(os.path.join(work, 'agent-%s-2.conf' % s)
                                for s in manager_mod.SITES), sorted(changed))
        for s in manager_mod.SITES:
            self.assertEqual(before[s], open(os.path.join(
                work, 'agent-%s.conf' % s)).read())
        confs = {name: self.load(os.path.join(
            work, 'agent-%s.conf' % name[len('terminal-'):]))
            for name in layer.terminal_names()}
        self.assertEqual({'terminal-site-a': BASE + 300,
                          'terminal-site-b': BASE + 301,
                          'terminal-site-a-2': BASE + 310,
                          'terminal-site-b-2': BASE + 311},
                         {n: c.server.port for n, c in confs.items()})
        for name, c in confs.items():
            self.assertEqual(name, c.agent.name)
            self.assertEqual(name, c.server.name)
            self.assertEqual(name[len('terminal-'):len('terminal-site-a')],
                             c.agent.site)
            self.assertEqual('127.0.0.1:%d' % c.server.port,
                             c.agent.lsrp_address)
            # Its own certificate, signed by the sandbox's CA.
            self.assertEqual(os.path.join(self.sb.pki, name + '.pem'),
                             c.server.tls_cert)
            self.assertTrue(os.path.exists(c.server.tls_cert))
            self.assertTrue(os.path.exists(c.server.tls_key))
        for field in (lambda c: c.agent.slots_dir,
                      lambda c: c.shipment.state_dir,
                      lambda c: c.shipment.key_dir,
                      lambda c: c.server.tls_cert):
            self.assertEqual(4, len({field(c) for c in confs.values()}))

    def test_site_a_terminals_get_blank_devices(self):
        layer = self.layer()
        layer.set_terminals_per_site(3)
        layer._prepare_terminals()
        d = layer.dep
        for n in (2, 3):
            blank = os.listdir(d.slots_dir('site-a', n))
            self.assertEqual(manager_mod.DEVICES_PER_SITE, len(blank))
            for serial in blank:
                self.assertTrue(serial.startswith('usb-site-a-%d-' % n))
                self.assertEqual([], os.listdir(os.path.join(
                    d.slots_dir('site-a', n), serial)))
            self.assertEqual([], os.listdir(d.slots_dir('site-b', n)))
        # A later up makes no more: wiped devices come back home.
        layer._prepare_terminals()
        self.assertEqual(manager_mod.DEVICES_PER_SITE,
                         len(os.listdir(d.slots_dir('site-a', 2))))


class TestUp(ManagerLayerTestCase):

    def setUp(self):
        super().setUp()
        self.running = set()

        def pid(svc):
            return 4242 if svc.name in self.running else None

        def start(svc):
            self.running.add(svc.name)

        def stop(svc):
            if svc.name in self.running:
                self.running.discard(svc.name)
                return 4242
        for name, fn in (('pid', pid), ('start', start), ('stop', stop)):
            self.useFixture(fixtures.MockPatchObject(
                services_base.Service, name, autospec=True, side_effect=fn))
        self.db = self.useFixture(fixtures.MockPatchObject(
            manager_mod, 'db')).mock
        # Configured already (the schema and the sites of a first up).
        layer = self.layer()
        os.makedirs(layer.run_dir)
        open(layer.marker, 'w').close()

    def test_more_terminals_start_and_fewer_stop(self):
        self.assertEqual('started', self.layer().up()['lsrp-agent-site-a'])
        result = self.layer().up(terminals_per_site=2)
        self.assertEqual({'fedex-conductor': 'running',
                          'lsrp-agent-site-a': 'running',
                          'lsrp-agent-site-b': 'running',
                          'lsrp-agent-site-a-2': 'started',
                          'lsrp-agent-site-b-2': 'started'}, result)
        # A later up without the flag: two per site still.
        self.assertEqual('running', self.layer().up()['lsrp-agent-site-b-2'])
        self.assertEqual(5, len(self.layer().status()))
        self.db.get.return_value = {'id': 't-id'}
        result = self.layer().up(terminals_per_site=1)
        self.assertEqual('stopped (fewer terminals per site)',
                         result['lsrp-agent-site-a-2'])
        self.assertEqual({'fedex-conductor', 'lsrp-agent-site-a',
                          'lsrp-agent-site-b'}, self.running)
        # Their heartbeats forgotten: no new migration goes to them.
        self.assertEqual([mock.call(mock.ANY, 'terminal', 't-id',
                                    {'last_heartbeat': None})] * 2,
                         self.db.update.call_args_list)
        # down and destroy stop those the sandbox runs now.
        self.assertEqual(3, len(self.layer().down()))
        self.assertEqual(set(), self.running)


class TestFlag(testtools.TestCase):

    def test_up_passes_the_count_to_the_layers(self):
        layer = mock.Mock()
        layer.up.return_value = {}
        sb = mock.Mock(sites=[])
        sb.up.return_value = {}
        conf = self.useFixture(fixtures.MockPatchObject(cli, 'CONF')).mock
        self.useFixture(fixtures.MockPatchObject(
            cli.layers_mod, 'layers', return_value=[('manager', layer)]))
        conf.command = mock.Mock(openstack=False, terminals_per_site=2)
        cli.do_up(sb)
        layer.up.assert_called_once_with(terminals_per_site=2)
        # Not given (or a command without the flag: demo): as remembered.
        layer.reset_mock()
        conf.command = mock.Mock(openstack=False, terminals_per_site=None)
        cli.do_up(sb)
        layer.up.assert_called_once_with()

    def test_a_bad_count_stops_before_anything_starts(self):
        for bad in ('0', 'two', str(manager_mod.MAX_TERMINALS_PER_SITE + 1)):
            self.assertRaises(argparse.ArgumentTypeError,
                              cli._terminals_per_site, bad)
        self.assertEqual(2, cli._terminals_per_site('2'))
