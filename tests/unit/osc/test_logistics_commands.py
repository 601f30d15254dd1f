"""``openstack fedex device create|delete|return``, ``terminal
create|show``, ``site create|list|show``: parsed as an operator types
them, run against fedex-api in process; ``-f json`` keeps the types."""

import configparser
import importlib
import json
import os

from osc_lib import exceptions

from fedex_manager import return_trip
from nova_fedex.osc.v1 import logistics
from tests.unit.osc import test_osc

run = test_osc.run
SETUP_CFG = os.path.join(os.path.dirname(__file__), '..', '..', '..',
                         'setup.cfg')


def as_json(cmd_cls, app, argv):
    """What ``-f json`` prints, parsed."""
    cmd = cmd_cls(app, None)
    app.stdout.seek(0)
    app.stdout.truncate()
    cmd.run(cmd.get_parser('openstack fedex').parse_args(
        argv + ['-f', 'json']))
    return json.loads(app.stdout.getvalue())


class TestDeviceCommands(test_osc.InProcess):

    def test_create_return_list_delete(self):
        cols, row = run(logistics.CreateDevice, self.app_, [
            'SN-5', '--terminal', 'term-a', '--capacity', '1000',
            '--slot', '3', '--path', '/slots-a/SN-5'])
        d = dict(zip(cols, row))
        self.assertEqual(('BLANK', 'term-a', None),
                         (d['state'], d['home_terminal'], d['return_trip']))
        # Plugged in at term-b (after a trip), then sent home.
        shown = as_json(logistics.CreateDevice, self.app_, [
            'SN-5', '--terminal', 'term-b', '--capacity', '1000'])
        self.assertEqual(1000, shown['capacity_bytes'])
        err = self.assertRaises(exceptions.CommandError, run,
                                logistics.ReturnDevice, self.app_,
                                ['SN-5', 'SN-0', 'SN-404'])
        self.assertIn('at its home terminal term-a already', str(err))
        self.assertIn('SN-404 does not exist', str(err))
        return_trip.send_home(self.ctx)
        rows = as_json(logistics.ListDevice, self.app_,
                       ['--home-terminal', 'term-a', '--state', 'RETURNING'])
        self.assertEqual(['SN-5'], [r['serial'] for r in rows])
        trip = rows[0]['return_trip']
        self.assertEqual(('SEALED', 'term-b', 'term-a'),
                         (trip['state'], trip['from'], trip['to']))
        cols, rows = run(logistics.ListDevice, self.app_, ['--state',
                                                           'RETURNING'])
        text = dict(zip(cols, rows[0]))['return_trip'].human_readable()
        self.assertEqual('%s SEALED term-b -> term-a' % trip['name'], text)
        cols, row = run(logistics.ShowDevice, self.app_, ['SN-5'])
        self.assertIn('going home to term-a', dict(zip(cols, row))['events'])
        err = self.assertRaises(exceptions.CommandError, run,
                                logistics.DeleteDevice, self.app_,
                                ['SN-1', 'SN-5'])
        self.assertIn('is RETURNING', str(err))
        # The other one was retired all the same.
        self.assertEqual(['SN-0'], [d['serial'] for d in
                                    self.client.devices.list(
                                        terminal='term-a')])
        kinds = as_json(logistics.ListShipment, self.app_, ['--kind',
                                                            'return'])
        self.assertEqual(1, len(kinds))


class TestTerminalAndSiteCommands(test_osc.InProcess):

    def test_create_list_show(self):
        cols, row = run(logistics.CreateSite, self.app_, [
            'site-c', '--availability-zone', 'az-c', '--ceph-conf',
            '/etc/ceph/c.conf'])
        self.assertEqual('az-c', dict(zip(cols, row))['availability_zone'])
        names = [r['name'] for r in as_json(logistics.ListSite, self.app_,
                                            [])]
        self.assertEqual(['site-a', 'site-b', 'site-c'], names)
        shown = as_json(logistics.ShowSite, self.app_, ['site-c'])
        self.assertEqual('/etc/ceph/c.conf', shown['ceph_conf'])
        t = as_json(logistics.CreateTerminal, self.app_, [
            'term-c', '--site', 'site-c', '--slots', '4',
            '--lsrp-address', '10.0.0.3:7000'])
        self.assertEqual(4, t['slots'])
        shown = as_json(logistics.ShowTerminal, self.app_, ['term-c'])
        self.assertEqual(('10.0.0.3:7000', 'UNKNOWN'),
                         (shown['lsrp_address'], shown['health']))

    def test_entry_points_name_these_commands(self):
        cfg = configparser.ConfigParser()
        cfg.read(SETUP_CFG)
        points = dict(line.split(' = ') for line in cfg['entry_points'][
            'openstack.fedex.v1'].strip().splitlines())
        for name in ('device_create', 'device_delete', 'device_return',
                     'terminal_create', 'terminal_show', 'site_create',
                     'site_list', 'site_show'):
            module, cls = points['fedex_' + name].split(':')
            self.assertTrue(hasattr(importlib.import_module(module), cls),
                            name)
