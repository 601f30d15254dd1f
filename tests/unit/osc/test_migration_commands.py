"""``openstack fedex migration set`` and ``migration event list``, and what
``-f json`` prints: typed values, while the table stays as it was."""

import json

from osc_lib import exceptions

from fedexclient import exceptions as fedex_exc
from nova_fedex.osc.v1 import migration
from tests.unit.osc import test_osc


def output(cmd_cls, app, argv, name='openstack fedex'):
    """What the command prints, through cliff's own formatters."""
    app.stdout.seek(0)
    app.stdout.truncate()
    cmd = cmd_cls(app, None)
    cmd.run(cmd.get_parser(name).parse_args(argv))
    return app.stdout.getvalue()


class MigrationCase(test_osc.InProcess):

    def setUp(self):
        super().setUp()
        _, row = test_osc.run(migration.CreateMigration, self.app_, [
            '--server', 'vm1', '--image', 'vm1=vms/vm1_disk',
            '--image', 'vm1=volumes/volume-v1', '--source-site', 'site-a',
            '--site', 'site-b'])
        self.mid = row[0]

    def set(self, *argv):
        return test_osc.run(migration.SetMigration, self.app_,
                            [self.mid] + list(argv))


class TestSet(MigrationCase):

    def test_name_and_options(self):
        self.assertIsNone(self.set(
            '--name', 'wave-1', '--rate-cap', '5000000', '--downtime-budget',
            '20', '--cutover', 'automatic', '--cutover-window',
            '01:00-05:00', '--rate-schedule', 'mon-fri@08:00-18:00=1000000',
            '--rate-schedule', '12:00-13:00=0'))
        m = self.client.migrations.get(self.mid)
        self.assertEqual('wave-1', m['name'])
        options = m['options']
        self.assertEqual((5000000, 20, 'automatic',
                          {'start': '01:00', 'end': '05:00'}),
                         (options['rate_cap'], options['downtime_budget'],
                          options['cutover'], options['cutover_window']))
        self.assertEqual([{'days': 'mon-fri', 'start': '08:00',
                           'end': '18:00', 'rate_cap': 1000000},
                          {'start': '12:00', 'end': '13:00', 'rate_cap': 0}],
                         options['rate_schedule'])
        # Given alone, an option leaves the others as they are.
        self.set('--rate-cap', '0')
        options = self.client.migrations.get(self.mid)['options']
        self.assertEqual((0, 20), (options['rate_cap'],
                                   options['downtime_budget']))

    def test_clear_window_and_schedule(self):
        self.set('--cutover-window', '01:00-05:00', '--rate-schedule',
                 '08:00-18:00=1')
        self.set('--no-cutover-window', '--no-rate-schedule')
        options = self.client.migrations.get(self.mid)['options']
        self.assertEqual((None, []), (options['cutover_window'],
                                      options['rate_schedule']))

    def test_refusals(self):
        self.assertIn('nothing to set', str(self.assertRaises(
            exceptions.CommandError, self.set)))
        self.assertIn('not both', str(self.assertRaises(
            exceptions.CommandError, self.set, '--cutover-window',
            '01:00-02:00', '--no-cutover-window')))
        self.assertIn('[DAYS@]HH:MM-HH:MM=BYTES/S', str(self.assertRaises(
            exceptions.CommandError, self.set, '--rate-schedule',
            'mon-fri 08:00')))
        # fedex-api checks the values against the options' schema.
        err = self.assertRaises(fedex_exc.BadRequest, self.set,
                                '--cutover-window', '25:00-26:00')
        self.assertIn('cutover_window', str(err))
        err = self.assertRaises(fedex_exc.NotFound, test_osc.run,
                                migration.SetMigration, self.app_,
                                ['nope', '--rate-cap', '1'])
        self.assertIn('HTTP 404', str(err))


class TestEventList(MigrationCase):

    def test_the_trail_oldest_first(self):
        self.set('--rate-cap', '1000')
        cols, rows = test_osc.run(migration.ListMigrationEvent, self.app_,
                                  [self.mid])
        self.assertEqual(migration.EVENT_COLUMNS, cols)
        events = [dict(zip(cols, r)) for r in rows]
        self.assertTrue(events[0]['message'].startswith('requested'))
        self.assertEqual(sorted(e['id'] for e in events),
                         [e['id'] for e in events])
        self.assertIn('updated: rate_cap=1000', events[-1]['message'])
        cols, rows = test_osc.run(migration.ListMigrationEvent, self.app_,
                                  [self.mid, '--type', 'config', '--long'])
        config, = [dict(zip(cols, r)) for r in rows]
        self.assertEqual('config', config['kind'])
        self.assertIn('details', cols)
        cols, rows = test_osc.run(migration.ListMigrationEvent, self.app_,
                                  [self.mid, '--limit', '1', '--sort-dir',
                                   'desc'])
        self.assertEqual([events[-1]['id']], [r[0] for r in rows])
        cols, rows = test_osc.run(migration.ListMigrationEvent, self.app_,
                                  [self.mid, '--until', '2000-01-01T00:00:00'])
        self.assertEqual([], list(rows))

    def test_json(self):
        shown = json.loads(output(migration.ListMigrationEvent, self.app_,
                                  [self.mid, '--long', '-f', 'json']))
        self.assertIsInstance(shown[0]['id'], int)
        self.assertTrue(shown[0]['message'].startswith('requested'))


class TestTypedOutput(MigrationCase):
    """-f json: numbers, lists and objects; the table: as before."""

    def test_show_json(self):
        shown = json.loads(output(migration.ShowMigration, self.app_,
                                  [self.mid, '--events', '-f', 'json']))
        self.assertEqual(['vm1'], shown['servers'])
        self.assertEqual(['vms/vm1_disk', 'volumes/volume-v1'],
                         shown['images'])
        self.assertEqual({'percent': None, 'bytes_done': 0,
                          'bytes_total': 0}, shown['progress'])
        self.assertEqual(0, shown['rounds'])
        self.assertIs(False, shown['cutover_approved'])
        self.assertEqual(['abort'], shown['allowed_actions'])
        self.assertEqual([], shown['shipments'])
        self.assertTrue(any(e['message'].startswith('requested')
                            for e in shown['events']), shown['events'])

    def test_list_json(self):
        listed = json.loads(output(migration.ListMigration, self.app_,
                                   ['--long', '-f', 'json']))
        self.assertEqual([(self.mid, ['vm1'], 2)],
                         [(m['id'], m['servers'], m['images'])
                          for m in listed])

    def test_table_as_before(self):
        table = output(migration.ShowMigration, self.app_, [self.mid])
        rows = {line.split('|')[1].strip(): line.split('|')[2].strip()
                for line in table.splitlines() if line.startswith('|')}
        self.assertEqual(('vm1', 'vms/vm1_disk,volumes/volume-v1', '-',
                          'abort', ''),
                         (rows['servers'], rows['images'], rows['progress'],
                          rows['allowed_actions'], rows['shipments']))
        # -f value writes the typed value, as for OSC's own commands.
        value = output(migration.ShowMigration, self.app_,
                       [self.mid, '-f', 'value', '-c', 'servers'])
        self.assertEqual("['vm1']", value.strip())
