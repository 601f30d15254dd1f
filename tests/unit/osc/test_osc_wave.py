"""``openstack fedex wave ...`` against fedex-api in process."""

import functools
import io
from unittest import mock

import fixtures
from osc_lib import exceptions
import testtools

from fedex_manager.db import api as db
from fedexclient import exceptions as fedex_exc
from nova_fedex.osc.v1 import migration
from nova_fedex.osc.v1 import server_migrate
from nova_fedex.osc.v1 import wave
from tests.unit.osc import test_osc

STEPS = ('snapshot', 'export', 'seal', 'ship', 'deliver', 'import',
         'catch_up', 'converge')


class TestWaveCommands(test_osc.InProcess):

    def create(self, *extra):
        argv = ['--source-site', 'site-a', '--site', 'site-b']
        for i in range(3):
            argv += ['--server', 'vm%d' % i,
                     '--image', 'vm%d=vms/vm%d_disk' % (i, i)]
        cols, row = test_osc.run(wave.CreateWave, self.app_,
                                 argv + list(extra))
        return dict(zip(cols, row))

    def test_create_show_list_cutover_abort(self):
        w = self.create('--name', 'rack-1', '--max-parallel-cutovers', '1',
                        '--cutover', 'approved')
        self.assertEqual(('rack-1', 'REQUESTED', 1),
                         (w['id'], w['state'], w['max_parallel_cutovers']))
        servers = w['servers'].machine_readable()
        self.assertEqual(['vm0', 'vm1', 'vm2'],
                         [s['server_id'] for s in servers])
        # A line per server in the table.
        self.assertEqual(3, len(w['servers'].human_readable().splitlines()))
        cols, rows = test_osc.run(wave.ListWave, self.app_, [])
        self.assertEqual([('rack-1', 'REQUESTED')],
                         [(r[0], r[1]) for r in rows])
        # The wave's servers are migrations of their own, each naming it.
        m = self.client.migrations.get(servers[0]['migration_id'])
        self.assertEqual('rack-1', m['wave'])
        cols, row = test_osc.run(wave.CutoverWave, self.app_, ['rack-1'])
        shown = dict(zip(cols, row))['servers'].machine_readable()
        self.assertEqual([True] * 3, [s['cutover_approved'] for s in shown])
        cols, row = test_osc.run(wave.AbortWave, self.app_,
                                 ['rack-1', '--reason', 'test'])
        self.assertEqual({'ABORTING': 3},
                         dict(zip(cols, row))['states'].machine_readable())

    def test_another_projects_wave_is_not_found(self):
        from fedexclient import client as fedex_client
        w = self.create('--name', 'rack-2')
        other = fedex_client.Client(
            session=test_osc.InProcessSession(self.app, roles='member,reader',
                                              project='p2'),
            endpoint='http://fedex.example/')
        self.assertRaises(fedex_exc.NotFound, other.waves.get, w['id'])
        self.assertRaises(fedex_exc.NotFound, other.waves.cutover, w['id'])
        self.assertEqual([], other.waves.list())
        reader = fedex_client.Client(
            session=test_osc.InProcessSession(self.app, roles='reader'),
            endpoint='http://fedex.example/')
        self.assertEqual('rack-2', reader.waves.get('rack-2')['id'])
        self.assertRaises(fedex_exc.Forbidden, reader.waves.abort, 'rack-2')

    def test_wait_prints_every_server_and_ends_when_all_wait(self):
        w = self.create('--cutover', 'approved')
        ids = [s['migration_id'] for s in w['servers'].machine_readable()]
        steps = iter([(mid, step) for step in STEPS for mid in ids])

        def step(_seconds):
            mid, ev = next(steps)
            db.transition(self.ctx, 'migration', mid, ev)
        clock = mock.Mock()
        clock.sleep.side_effect = step
        out = io.StringIO()
        shown = wave.follow(self.client, w['id'], out=out, clock=clock)
        self.assertEqual('READY_FOR_CUTOVER', shown['state'])
        text = out.getvalue()
        self.assertIn('wave %s READY_FOR_CUTOVER' % w['id'], text)
        for i in range(3):
            self.assertIn('  vm%d READY_FOR_CUTOVER' % i, text)
            self.assertIn('  vm%d CATCHING_UP' % i, text)

    def test_wait_names_a_failed_server(self):
        w = self.create('--cutover', 'approved')
        ids = [s['migration_id'] for s in w['servers'].machine_readable()]
        for mid in ids:
            for ev in STEPS:
                db.transition(self.ctx, 'migration', mid, ev)
        db.transition(self.ctx, 'migration', ids[1], 'abort')
        db.transition(self.ctx, 'migration', ids[1], 'aborted')
        err = self.assertRaises(exceptions.CommandError, wave.follow,
                                self.client, w['id'], out=io.StringIO(),
                                clock=mock.Mock())
        self.assertIn('server vm1 ABORTED', str(err))

    def test_cutover_wait_ctrl_c_stops_following_only(self):
        w = self.create('--cutover', 'approved')
        out = io.StringIO()
        clock = mock.Mock()
        clock.sleep.side_effect = KeyboardInterrupt
        self.useFixture(fixtures.MockPatchObject(
            wave, 'follow',
            functools.partial(wave.follow, out=out, clock=clock)))
        cols, row = test_osc.run(wave.CutoverWave, self.app_,
                                 ['--wait', '--wait-interval', '0.5',
                                  w['id']])
        clock.sleep.assert_called_once_with(0.5)
        self.assertTrue(out.getvalue().startswith(
            'wave %s REQUESTED | 3 servers' % w['id']), out.getvalue())
        self.assertIn('stopped following wave %s; it goes on (openstack '
                      'fedex wave show %s)' % (w['id'], w['id']),
                      out.getvalue())
        # The cutovers were approved all the same.
        shown = dict(zip(cols, row))['servers'].machine_readable()
        self.assertEqual([True] * 3, [s['cutover_approved'] for s in shown])

    def test_a_bad_server_makes_nothing(self):
        err = self.assertRaises(
            fedex_exc.BadRequest, test_osc.run, wave.CreateWave, self.app_,
            ['--source-site', 'site-a', '--site', 'site-b',
             '--server', 'vm0', '--image', 'vm0=vms/vm0_disk',
             '--server', 'vm1', '--image', 'vm1=vms/bad name'])
        self.assertIn('servers', str(err))
        self.assertEqual([], self.client.waves.list())
        self.assertEqual([], self.client.migrations.list())


class TestWaitArgs(testtools.TestCase):
    """Every command that follows takes the same hidden --wait-interval."""

    COMMANDS = ((migration.CreateMigration, ['--site', 'site-b']),
                (wave.CreateWave, ['--site', 'site-b', '--server', 'vm0']),
                (wave.ShowWave, ['w']),
                (wave.CutoverWave, ['w']),
                (server_migrate.FedexMigrateServer, ['vm0']))

    def test_wait_and_its_hidden_interval(self):
        for cls, argv in self.COMMANDS:
            parser = cls(mock.Mock(), None).get_parser('openstack')
            text = parser.format_help()
            self.assertIn('--wait ', text, cls.__name__)
            self.assertNotIn('--wait-interval', text, cls.__name__)
            args = parser.parse_args(argv)
            self.assertEqual((False, 2.0), (args.wait, args.wait_interval),
                             cls.__name__)
            args = parser.parse_args(
                argv + ['--wait', '--wait-interval', '0.5'])
            self.assertEqual((True, 0.5), (args.wait, args.wait_interval),
                             cls.__name__)
