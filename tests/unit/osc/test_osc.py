"""The OSC plugin: commands parsed as users type them, run against
fedex-api in process (its real handlers, policy and SQLite database)."""

import io
import json
import logging
import os
from unittest import mock
import urllib.parse

from cliff import commandmanager
import fixtures
from keystoneauth1 import session as ks_session
from openstackclient.compute.v2 import server as osc_server
from osc_lib import exceptions
import testtools
import webob

from fedexclient import client as fedex_client
from fedexclient import exceptions as fedex_exc
from nova_fedex.osc import plugin
from nova_fedex.osc.v1 import common
from nova_fedex.osc.v1 import migration
from nova_fedex.osc.v1 import plan as plan_cmd
from nova_fedex.osc.v1 import server_migrate
from tests.unit.fedex_manager.api import test_api


class InProcessSession(ks_session.Session):
    """A keystoneauth session that calls the WSGI app directly."""

    def __init__(self, app, roles='admin,member,reader', project='p1'):
        super().__init__()
        self.app, self.roles, self.project = app, roles, project

    def request(self, url, method, json=None, params=None, headers=None,
                raise_exc=True, endpoint_override=None, **kwargs):
        path = urllib.parse.urlsplit(endpoint_override).path.rstrip('/')
        path += urllib.parse.urlsplit(url).path
        if params:
            path += '?' + urllib.parse.urlencode(params)
        req = webob.Request.blank(path, method=method)
        req.headers.update(headers or {})
        req.headers.update({'X-Project-Id': self.project,
                            'X-User-Id': 'u1', 'X-Roles': self.roles})
        if json is not None:
            req.body = _json.dumps(json).encode()
            req.content_type = 'application/json'
        return Response(req.get_response(self.app))


_json = json


class Response(object):
    """The bits of a requests.Response the client reads."""

    def __init__(self, resp):
        self.status_code = resp.status_int
        self.content = resp.body
        self.text = resp.text
        self.reason = resp.status
        self.headers = resp.headers

    def json(self):
        return _json.loads(self.content)


class App(object):
    """What a command needs of OSC's app."""

    def __init__(self, fedex, compute=None):
        self.client_manager = mock.Mock(fedex=fedex, compute=compute)
        self.stdout = io.StringIO()
        self.stderr = io.StringIO()
        self.options = mock.Mock()


def run(cmd_cls, app, argv, name='openstack fedex'):
    cmd = cmd_cls(app, None)
    parsed = cmd.get_parser(name).parse_args(argv)
    return cmd.take_action(parsed)


class InProcess(test_api.Fixture):
    """Sites, terminals up, devices; a client of the in-process API."""

    def setUp(self):
        super().setUp()
        self.terminals()
        self.devices()
        self.client = fedex_client.Client(
            session=InProcessSession(self.app),
            endpoint='http://fedex.example/')
        self.app_ = App(self.client)


class TestCommands(InProcess):

    def test_create_list_show_abort_delete(self):
        cols, row = run(migration.CreateMigration, self.app_, [
            '--server', 'vm1', '--image', 'vm1=vms/vm1_disk',
            '--source-site', 'site-a', '--site', 'site-b',
            '--rate-cap', '1000000', '--cutover', 'approved'])
        m = dict(zip(cols, row))
        self.assertEqual('REQUESTED', m['state'])
        self.assertEqual(['vms/vm1_disk'], m['images'].machine_readable())
        self.assertEqual('approved', m['cutover'])
        cols, rows = run(migration.ListMigration, self.app_, [])
        self.assertEqual([m['id']], [r[0] for r in rows])
        cols, row = run(migration.ShowMigration, self.app_,
                        [m['id'], '--events'])
        self.assertIn('requested',
                      dict(zip(cols, row))['events'].human_readable())
        cols, row = run(migration.AbortMigration, self.app_,
                        [m['id'], '--reason', 'test'])
        self.assertEqual('ABORTING', dict(zip(cols, row))['state'])
        err = self.assertRaises(exceptions.CommandError, run,
                                migration.DeleteMigration, self.app_,
                                [m['id']])
        self.assertIn('HTTP 409', str(err))
        self.assertIn('ABORTING', str(err))

    def test_detached_volume_on_its_own(self):
        vid = '77e2a1f0-0000-4000-8000-000000000001'
        cols, row = run(migration.CreateMigration, self.app_, [
            '--volume', vid, '--source-site', 'site-a', '--site', 'site-b',
            '--cutover', 'automatic'])
        m = dict(zip(cols, row))
        self.assertEqual('REQUESTED', m['state'])
        self.assertEqual('volumes/volume-%s' % vid,
                         m['images'].human_readable())
        # Without Cinder to ask (no [nova] credentials here), the source
        # site must be given.
        err = self.assertRaises(fedex_exc.BadRequest, run,
                                migration.CreateMigration, self.app_,
                                ['--volume', vid, '--site', 'site-b'])
        self.assertIn('source_site is required', str(err))
        err = self.assertRaises(exceptions.CommandError, run,
                                migration.CreateMigration, self.app_,
                                ['--site', 'site-b'])
        self.assertIn('give --server or --volume', str(err))

    def test_preflight_reasons_reach_the_user(self):
        err = self.assertRaises(
            fedex_exc.Conflict, run, migration.CreateMigration,
            self.app_, ['--server', 'vm1', '--image', 'vm1=vms/x',
                        '--source-site', 'site-a', '--site', 'nowhere'])
        self.assertIn('fedex-api: HTTP 409: dest_site: no site nowhere',
                      str(err))

    def test_image_for_unknown_server(self):
        err = self.assertRaises(
            exceptions.CommandError, run, migration.CreateMigration,
            self.app_, ['--server', 'vm1', '--image', 'vm2=vms/x',
                        '--source-site', 'site-a', '--site', 'site-b'])
        self.assertIn('vm2', str(err))

    def test_wait_follows_and_ctrl_c_stops_following_only(self):
        _, row = run(migration.CreateMigration, self.app_, [
            '--server', 'vm1', '--image', 'vm1=vms/vm1_disk',
            '--source-site', 'site-a', '--site', 'site-b'])
        mid = row[0]
        out = io.StringIO()
        clock = mock.Mock()
        clock.sleep.side_effect = KeyboardInterrupt
        m = common.follow(self.client, mid, out=out, clock=clock)
        self.assertEqual('REQUESTED', m['state'])
        self.assertIn('stopped following migration %s; it goes on' % mid,
                      out.getvalue())
        # The migration was only looked at.
        self.assertEqual('REQUESTED', self.client.migrations.get(mid)['state'])

    def test_wait_ends_at_ready_for_cutover(self):
        from fedex_manager.db import api as db
        _, row = run(migration.CreateMigration, self.app_, [
            '--server', 'vm1', '--image', 'vm1=vms/vm1_disk',
            '--source-site', 'site-a', '--site', 'site-b'])
        mid = row[0]
        steps = iter(('snapshot', 'export', 'seal', 'ship', 'deliver',
                      'import', 'catch_up', 'converge'))
        clock = mock.Mock()
        clock.sleep.side_effect = lambda s: db.transition(
            self.ctx, 'migration', mid, next(steps))
        out = io.StringIO()
        m = common.follow(self.client, mid, out=out, clock=clock)
        self.assertEqual('READY_FOR_CUTOVER', m['state'])
        lines = out.getvalue().splitlines()
        self.assertEqual(9, len(lines), lines)
        self.assertIn('CATCHING_UP', lines[-2])

    def test_plan_table_and_plot(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'plan.png')
        cols, row = run(plan_cmd.CreatePlan, self.app_, [
            '--vm', 'size=50GB,count=1000', '--wan-bandwidth', '155Mbit/s',
            '--transit-time', '12h', '--plot', path])
        got = dict(zip(cols, row))
        self.assertEqual('fedex', got['recommended'])
        self.assertEqual('29.9 d', got['wan_total'])
        with open(path, 'rb') as f:
            self.assertEqual(b'\x89PNG\r\n\x1a\n', f.read(8))
        self.assertGreater(os.path.getsize(path), 10000)
        self.assertRaises(exceptions.CommandError, plan_cmd.parse_vm,
                          'colour=red')

    def test_plan_list_and_show(self):
        cols, row = run(plan_cmd.CreatePlan, self.app_, [
            '--name', 'dc-move', '--vm', 'size=50GB,count=1000',
            '--wan-bandwidth', '44.76Mbit/s', '--transit-time', '12h'])
        made = dict(zip(cols, row))
        cols, rows = run(plan_cmd.ListPlan, self.app_, [])
        listed = [dict(zip(cols, r)) for r in rows]
        self.assertEqual([(made['id'], 'dc-move', 1000, 'fedex')],
                         [(p['id'], p['name'], p['vms'], p['recommended'])
                          for p in listed])
        self.assertTrue(listed[0]['wan_total_time'].endswith(' d'))
        cols, row = run(plan_cmd.ShowPlan, self.app_, ['dc-move'])
        shown = dict(zip(cols, row))
        self.assertEqual(made['wan_total'], shown['wan_total'])
        self.assertEqual(made['id'], shown['id'])
        self.assertIn('44.76Mbit/s', shown['request'])
        run(plan_cmd.DeletePlan, self.app_, ['dc-move'])
        cols, rows = run(plan_cmd.ListPlan, self.app_, [])
        self.assertEqual([], list(rows))
        err = self.assertRaises(exceptions.CommandError, run,
                                plan_cmd.DeletePlan, self.app_, ['dc-move'])
        self.assertIn('HTTP 404', str(err))


class TestNovaLookups(InProcess):
    """Images, source and destination sites found through Nova."""

    def compute(self, status='ACTIVE', task_state=None):
        server = mock.Mock(id='5e1d', status=status, task_state=task_state,
                           availability_zone='az-a',
                           attached_volumes=[{'id': 'v77'}])
        compute = mock.Mock()
        compute.find_server.return_value = server
        compute.services.return_value = [
            mock.Mock(host='b-h1', availability_zone='az-b'),
            mock.Mock(host='a-h1', availability_zone='az-a')]
        return compute

    def test_server_migrate_fedex_with_host(self):
        app = App(self.client, self.compute())
        cmd = server_migrate.FedexMigrateServer(app, None)
        args = cmd.get_parser('openstack server migrate').parse_args(
            ['--live', '--fedex', '--host', 'b-h1', 'web-1'])
        cmd.take_action(args)
        mid = app.stdout.getvalue().split()[2]
        m = self.client.migrations.get(mid)
        self.assertEqual(['vms/5e1d_disk', 'volumes/volume-v77'],
                         [v['source_image'] for v in m['volumes']])
        self.assertEqual([(None, 'disk'), ('v77', 'volume')],
                         [(v['volume_id'], v['kind']) for v in m['volumes']])
        self.assertEqual('b-h1', m['dest_host'])
        sites = {s['id']: s['name'] for s in self.client.sites.list()}
        self.assertEqual(('site-a', 'site-b'), (sites[m['source_site_id']],
                                                sites[m['dest_site_id']]))

    def test_refuses_what_the_cutover_cannot_move(self):
        app = App(self.client, self.compute(status='SHUTOFF',
                                            task_state='migrating'))
        err = self.assertRaises(
            exceptions.CommandError, run, migration.CreateMigration, app,
            ['--server', 'web-1', '--site', 'site-b'])
        self.assertIn('is SHUTOFF, not ACTIVE', str(err))
        self.assertIn('busy (migrating)', str(err))
        self.assertEqual([], self.client.migrations.list())

    def test_host_in_no_site(self):
        app = App(self.client, self.compute())
        err = self.assertRaises(
            exceptions.CommandError, run, migration.CreateMigration, app,
            ['--server', 'web-1', '--host', 'c-h9'])
        self.assertIn('no nova-compute on host c-h9', str(err))


class TestServerMigrate(testtools.TestCase):
    """``openstack server migrate``: built-in without --fedex."""

    def parse(self, argv):
        cmd = server_migrate.FedexMigrateServer(App(None), None)
        return cmd, cmd.get_parser('openstack server migrate').parse_args(
            argv)

    def test_live_abbreviation_and_fedex(self):
        _, args = self.parse(['--live', '--fedex', '--site', 'site-b', 'vm'])
        self.assertTrue(args.live_migration)
        self.assertTrue(args.fedex)
        _, args = self.parse(['--live-migration', '--fedex', '--host', 'h2',
                              'vm'])
        self.assertEqual('h2', args.host)

    def test_without_fedex_is_the_builtin(self):
        cmd, args = self.parse(['--live-migration', '--host', 'h2', 'vm'])
        with mock.patch.object(osc_server.MigrateServer, 'take_action',
                               return_value='builtin') as parent:
            self.assertEqual('builtin', cmd.take_action(args))
        parent.assert_called_once_with(args)

    def test_fedex_needs_live_and_a_destination(self):
        cmd, args = self.parse(['--fedex', '--site', 'b', 'vm'])
        self.assertIn('--live-migration', str(self.assertRaises(
            exceptions.CommandError, cmd.take_action, args)))
        cmd, args = self.parse(['--live', '--fedex', 'vm'])
        self.assertIn('--host or --site', str(self.assertRaises(
            exceptions.CommandError, cmd.take_action, args)))
        cmd, args = self.parse(['--live', '--site', 'b', 'vm'])
        self.assertIn('go with --fedex', str(self.assertRaises(
            exceptions.CommandError, cmd.take_action, args)))

    def test_our_command_replaces_the_builtin_without_a_warning(self):
        logs = self.useFixture(fixtures.FakeLogger(level=logging.WARNING))
        mgr = commandmanager.CommandManager('openstack.nothing')
        mgr.load_commands('openstack.compute.v2')
        mgr.load_commands('openstack.fedex.v1')
        cls, name, _ = mgr.find_command(['server', 'migrate'])
        self.assertEqual('server migrate', name)
        self.assertIs(server_migrate.FedexMigrateServer, cls.load()
                      if hasattr(cls, 'load') else cls)
        self.assertEqual('', logs.output)
        self.assertIsNotNone(plugin.make_client)

    def test_the_filter_hides_only_our_duplicate(self):
        logger = logging.getLogger('cliff.commandmanager')
        ours = [f for f in logger.filters
                if isinstance(f, plugin._OurOverrideIsNotABug)]
        self.assertEqual(1, len(ours))
        # Without it, cliff warns about our override on every command.
        logger.removeFilter(ours[0])
        self.addCleanup(logger.addFilter, ours[0])
        logs = self.useFixture(fixtures.FakeLogger(level=logging.WARNING))
        mgr = commandmanager.CommandManager('openstack.nothing')
        mgr.load_commands('openstack.compute.v2')
        mgr.load_commands('openstack.fedex.v1')
        self.assertIn("duplicate implementations of the 'server migrate'",
                      logs.output)
        # Any other duplicate still shows with it.
        logger.addFilter(ours[0])
        logger.warning('found duplicate implementations of the %(name)r '
                       'command in the following modules: %(modules)s',
                       {'name': 'server list', 'modules': 'a, b'})
        self.assertIn("'server list'", logs.output)
