"""The migrations panels, with fedex-api replaced by mocks of the
dashboard's API module (fedex_dashboard.api.fedex)."""

from unittest import mock

from django import urls

from fedex_dashboard.api import fedex
from fedex_dashboard.content.migrations import forms as m_forms
from tests.horizon import base

API = 'fedex_dashboard.api.fedex.'
INDEX = urls.reverse_lazy('horizon:project:fedex_migrations:index')
CREATE = urls.reverse_lazy('horizon:project:fedex_migrations:create')


# POST /v1/plans' forecast of a request: server a (1 GiB disk, 512 MiB of
# memory) and b, whose guest dirties memory faster than the link.
FORECAST = {
    'kind': 'forecast', 'recommended': 'wan', 'break_even_vms': None,
    'catch_up': {'rounds': 3, 'converges': True},
    'wan': {'way': 'wan', 'total_time': 163.8, 'expected_pause': 0.514,
            'wan_bytes': 1.5 * 1024 ** 3, 'devices': 0, 'shipments': 0},
    'fedex': {'way': 'fedex', 'total_time': 86594.3, 'expected_pause': 1.281,
              'wan_bytes': 1.5 * 1024 ** 3, 'devices': 3, 'shipments': 1},
    'servers': [
        {'server_id': 'a', 'allocated_bytes': 1024 ** 3,
         'memory_bytes': 512 * 1024 ** 2, 'dirty_rate': 1e6,
         'memory_copy_seconds': 46.7, 'pause_seconds': 1.281,
         'converges': True},
        {'server_id': 'b', 'allocated_bytes': 1024 ** 3,
         'memory_bytes': 512 * 1024 ** 2, 'dirty_rate': 25e6,
         'memory_copy_seconds': None, 'pause_seconds': None,
         'converges': False}],
    'assumes': {
        'expected_pause': 'Server a: 512 MiB of memory (flavor m1.mini). '
                          'Memory dirtied at 0.95 MiB/s: a default '
                          '([planner] default_dirty_rate), not measured.',
        'devices': '3 device(s) per shipment (parity 1), 8.00 GiB of data '
                   'each on term-a blank devices.',
        'catch_up': 'Rounds until the next would send 8.00 MiB or less '
                    '(threshold_bytes), at most 10 (max_rounds).'},
    'warnings': ['server b will not converge: its guest dirties memory at '
                 '200.00 Mbit/s, the link carries 100.00 Mbit/s']}


def detail(ident, ns='project'):
    return urls.reverse('horizon:%s:fedex_migrations:detail' % ns,
                        args=[ident])


@mock.patch(API + 'site_list', return_value=base.SITES)
class ProjectMigrationsTests(base.TestCase):

    @mock.patch(API + 'migration_list')
    def test_index_lists_own_migrations_with_progress(self, m_list, _sites):
        m_list.return_value = [
            base.migration('m-1'),
            base.migration('m-2', 'READY_FOR_CUTOVER',
                           allowed_actions=['abort', 'approve_cutover'])]
        res = self.client.get(INDEX)
        self.assertTemplateUsed(res, 'horizon/common/_data_table_view.html')
        m_list.assert_called_once_with(mock.ANY, all_projects=False,
                                       state=None)
        table = res.context['migrations_table']
        self.assertEqual(['m-1', 'm-2'], [m['id'] for m in table.data])
        html = res.content.decode()
        self.assertIn('site-a \u2192 site-b', html)
        self.assertIn('40.0%', html)
        self.assertIn('12.0 MiB/s', html)
        self.assertIn('8m 20s', html)          # ETA of 500 s
        # In the catch-up: the round, what it sent, the next round's ETA.
        self.assertIn('round 3: 50.0 MiB', html)
        self.assertIn('next round ETA 8m 20s', html)
        # Only the migration ready for cutover offers the approval.
        self.assertIn('migrations__row_m-2__action_approve_cutover', html)
        self.assertNotIn('migrations__row_m-1__action_approve_cutover', html)
        self.assertIn('migrations__row_m-1__action_abort', html)
        self.assertNotIn('migrations__row_m-1__action_retry', html)
        # A moving row is polled, a settled one is not.
        rows = {r.datum['id']: r for r in table.get_rows()}
        self.assertIsNone(rows['m-1'].status)
        self.assertTrue(rows['m-2'].status)
        self.assertIn('ajax-update', html)

    @mock.patch(API + 'migration_list', return_value=[])
    def test_state_filter_goes_to_the_api(self, m_list, _sites):
        self.client.post(INDEX, {'migrations__filter__q_field': 'state',
                                 'migrations__filter__q': 'catching_up'},
                         follow=True)
        m_list.assert_called_with(mock.ANY, all_projects=False,
                                  state='CATCHING_UP')

    @mock.patch(API + 'migration_list')
    def test_unknown_state_filter_is_refused(self, m_list, _sites):
        res = self.client.post(INDEX, {
            'migrations__filter__q_field': 'state',
            'migrations__filter__q': 'flying'}, follow=True)
        m_list.assert_not_called()
        self.assertMessageCount(res, error=1)
        self.assertIn('is not a migration state',
                      ''.join(str(m) for m in res.context['messages']))

    @mock.patch(API + 'migration_list')
    def test_api_down_is_a_message_saying_what_to_do(self, m_list, _sites):
        m_list.side_effect = fedex.FedexAPIError('Unable to list migrations')
        res = self.client.get(INDEX)
        self.assertEqual([], res.context['migrations_table'].data)
        text = ''.join(str(m) for m in res.context['messages'])
        self.assertIn('Unable to list migrations', text)
        self.assertIn('fedex-api did not answer', text)

    @mock.patch(API + 'migration_action')
    @mock.patch(API + 'migration_list')
    def test_approve_cutover(self, m_list, m_action, _sites):
        m_list.return_value = [base.migration(
            'm-2', 'READY_FOR_CUTOVER',
            allowed_actions=['abort', 'approve_cutover'])]
        res = self.client.post(INDEX, {
            'action': 'migrations__approve_cutover__m-2'})
        self.assertRedirectsNoFollow(res, str(INDEX))
        m_action.assert_called_once_with(mock.ANY, 'm-2', 'approve_cutover')

    @mock.patch(API + 'migration_action')
    @mock.patch(API + 'migration_list')
    def test_abort_gives_a_reason(self, m_list, m_action, _sites):
        m_list.return_value = [base.migration('m-1')]
        self.client.post(INDEX, {'action': 'migrations__abort__m-1'})
        m_action.assert_called_once_with(
            mock.ANY, 'm-1', 'abort',
            reason='aborted from the dashboard by test_user')

    @mock.patch(API + 'migration_action')
    @mock.patch(API + 'migration_list')
    def test_forbidden_action_shows_the_api_reason(self, m_list, m_action,
                                                   _sites):
        m_list.return_value = [base.migration('m-1')]
        m_action.side_effect = fedex.FedexAPIError(
            'Unable to abort migration m-1', 403,
            ['policy does not allow fedex:migration:abort'])
        res = self.client.post(INDEX, {'action': 'migrations__abort__m-1'},
                               follow=True)
        text = ''.join(str(m) for m in res.context['messages'])
        self.assertIn('policy does not allow fedex:migration:abort', text)
        self.assertIn('Your role does not allow this', text)

    @mock.patch(API + 'migration_list')
    def test_last_event_column_from_the_lists_summary(self, m_list, _sites):
        m_list.return_value = [
            base.migration('m-1', last_event=base.round_event(12, 2, 5 << 20)),
            base.migration('m-2', last_event='cutover approved'),
            base.migration('m-3', last_error='export failed: no space')]
        html = self.client.get(INDEX).content.decode()
        self.assertIn('round 2: 5242880 bytes changed', html)
        self.assertIn('cutover approved', html)
        self.assertIn('export failed: no space', html)

    @mock.patch(API + 'migration_get')
    def test_row_update_polls_one_migration(self, m_get, _sites):
        m_get.return_value = base.migration(
            'm-1', progress={'bytes_total': 100, 'bytes_done': 100,
                             'percent': 100.0, 'rate': None,
                             'eta_seconds': 0, 'rounds': 4},
            events=[{'id': 9, 'message': 'round 4 sent 1 MiB'}])
        res = self.client.get(INDEX, {'action': 'row_update',
                                      'table': 'migrations',
                                      'obj_id': 'm-1'},
                              HTTP_X_REQUESTED_WITH='XMLHttpRequest')
        m_get.assert_called_once_with(mock.ANY, 'm-1')
        html = res.content.decode()
        self.assertIn('100.0%', html)
        self.assertIn('round 4 sent 1 MiB', html)

    @mock.patch(API + 'device_list')
    @mock.patch(API + 'shipment_get')
    @mock.patch(API + 'event_list')
    @mock.patch(API + 'migration_get')
    def test_detail_tabs(self, m_get, m_events, m_ship, m_devices, _sites):
        m_get.return_value = base.migration(
            'm-1', events=list(reversed(base.events()[:2])),
            shipments=[{'id': 's-1', 'name': 'ship-1', 'state': 'DELIVERED',
                        'carrier': 'fedex', 'tracking_number': '7712'}])
        m_events.return_value = base.events()
        m_ship.return_value = {
            'id': 's-1', 'name': 'ship-1', 'state': 'DELIVERED',
            'carrier': 'fedex', 'tracking_number': '7712',
            'events': [{'message': 'carrier: deliver', 'location': 'site B',
                        'created_at': '2026-11-24T05:05:00'}]}
        m_devices.return_value = [{'id': 'd-1', 'serial': 'SN-42',
                                   'state': 'DELIVERED',
                                   'capacity_bytes': 2 * 1024 ** 4}]
        res = self.client.get(detail('m-1'))
        self.assertTemplateUsed(res, 'horizon/common/_detail.html')
        html = res.content.decode()
        # Overview: the timeline up to the current phase.
        self.assertIn('<strong>CATCHING_UP</strong>', html)
        self.assertIn('fedex-phase-done', html)
        self.assertIn('fedex-phase-pending', html)
        # Shipment: carrier, tracking number, devices, custody.
        self.assertIn('7712', html)
        self.assertIn('SN-42', html)
        self.assertIn('2.0 TiB', html)
        self.assertIn('carrier: deliver', html)
        m_devices.assert_called_once_with(mock.ANY, shipment='s-1')
        # Catch-up: three rounds converging under the 64 MiB threshold.
        self.assertEqual(3, html.count('class="fedex-round"'))
        self.assertIn('class="fedex-threshold"', html)
        self.assertIn('cutover threshold 64.0 MiB', html)
        self.assertIn('fill="#5cb85c"', html)   # round 3 under threshold

    @mock.patch(API + 'wave_get')
    @mock.patch(API + 'event_list', return_value=[])
    @mock.patch(API + 'migration_get')
    def test_wave_tab_a_row_per_server(self, m_get, _events, m_wave,
                                       _sites):
        m_get.return_value = base.migration('m-1', wave='wave-7')
        server = {'migration_id': 'm-1', 'name': 'wave-7-1',
                  'server_id': 'srv-a', 'state': 'COMPLETED',
                  'progress': {'percent': 100.0, 'eta_seconds': None},
                  'cutovers': [{'started_at': '2026-11-27T18:00:00Z',
                                'ended_at': '2026-11-27T18:00:41Z',
                                'outcome': 'COMPLETED', 'seconds': 41.0}],
                  'waiting': None}
        m_wave.return_value = {
            'id': 'wave-7', 'state': 'READY_FOR_CUTOVER',
            'max_parallel_cutovers': 2, 'device_bytes': 60 * 1024 ** 2,
            'progress': {'percent': 97.0, 'servers': 2, 'completed': 1,
                         'cutting_over': 0, 'eta_seconds': 95},
            'servers': [server, dict(
                server, migration_id='m-2', name='wave-7-2',
                server_id='srv-b', state='READY_FOR_CUTOVER',
                progress={'percent': 94.0, 'eta_seconds': 12},
                cutovers=[], waiting='1 server(s) of wave wave-7 cutting '
                'over (m-3), its max_parallel_cutovers = 1')]}
        res = self.client.get(detail('m-1'))
        html = res.content.decode()
        m_wave.assert_called_once_with(mock.ANY, 'wave-7')
        self.assertIn('id="wave_servers"', html)
        self.assertIn('srv-b', html)
        self.assertIn('COMPLETED (41s)', html)
        self.assertIn('its max_parallel_cutovers = 1', html)
        self.assertIn('1m 35s', html)           # the wave's ETA
        self.assertIn('60.0 MiB', html)         # on the devices

    @mock.patch(API + 'migration_get')
    def test_detail_of_a_missing_migration_goes_back(self, m_get, _sites):
        m_get.side_effect = fedex.FedexAPIError(
            'Unable to show migration nope', 404, ['migration nope not found'])
        res = self.client.get(detail('nope'))
        self.assertRedirectsNoFollow(res, str(INDEX))

    @mock.patch(API + 'migration_create')
    @mock.patch(API + 'plan_forecast')
    def test_preview_forecasts_this_request(self, m_plan, m_create, _sites):
        m_plan.return_value = FORECAST
        res = self.client.post(CREATE, {
            'servers': 'a, b\nc', 'source_site': 'site-a',
            'dest_site': 'site-b', 'cutover': 'approved', 'rate_cap': 10,
            'write_mib': 1, 'preview': '1'})
        m_create.assert_not_called()
        # The request itself, as Create would send it: fedex-api reads the
        # servers' disks and memory, the link, the courier, the devices.
        m_plan.assert_called_once_with(
            mock.ANY, {'servers': ['a', 'b', 'c'], 'source_site': 'site-a',
                       'dest_site': 'site-b',
                       'options': {'cutover': 'approved',
                                   'rate_cap': 10 * 1024 ** 2}},
            write_rate=1024 ** 2)
        html = res.content.decode()
        self.assertIn('class="fedex-recommended">wan<', html)
        self.assertIn('2m 43s', html)               # WAN only, total
        self.assertIn('1d 0h', html)                # FedEx, total
        self.assertIn('1.5 GiB', html)              # 1 GiB disk + 512 MiB
        self.assertNotIn('509.5 GiB', html)
        self.assertIn('0.51 s', html)               # pause, WAN only
        self.assertIn('1.28 s', html)               # pause, FedEx
        # Every figure says what it assumes.
        self.assertIn('Server a: 512 MiB of memory (flavor m1.mini).', html)
        self.assertIn('Memory dirtied at 0.95 MiB/s: a default', html)
        self.assertIn('3 device(s) per shipment (parity 1)', html)
        self.assertIn('Catch-up rounds', html)
        self.assertIn('at most 10 (max_rounds)', html)
        # Per server: its memory copy and pause; b never converges.
        self.assertIn('class="table table-condensed fedex-plan-servers"',
                      html)
        self.assertIn('46s', html)                  # a's memory copy
        self.assertIn('never converges', html)
        self.assertIn('class="danger"', html)
        self.assertIn('fedex-plan-warning', html)
        self.assertIn('server b will not converge', html)

    def test_plan_rows_of_a_fleet_plan(self, _sites):
        rows = m_forms.plan_rows({
            'wan': {'total_time': 9 * 86400, 'expected_pause': 1.0,
                    'wan_bytes': 500 * 1024 ** 3, 'devices': 0, 'cost': 5.0},
            'fedex': {'total_time': 2 * 86400, 'expected_pause': 1.0,
                      'wan_bytes': 20 * 1024 ** 3, 'devices': 2,
                      'cost': 90.0}})
        self.assertEqual(('Total time', '9d 0h', '2d 0h', ''), tuple(
            str(x) for x in rows[0]))
        self.assertEqual(('Expected pause', '1.00 s', '1.00 s', ''), tuple(
            str(x) for x in rows[1]))
        self.assertEqual([], m_forms.server_rows({}))

    @mock.patch(API + 'migration_create')
    def test_create(self, m_create, _sites):
        m_create.return_value = base.migration('m-9', 'REQUESTED')
        res = self.client.post(CREATE, {
            'name': 'wave-1', 'servers': 'a b', 'source_site': 'site-a',
            'dest_site': 'site-b', 'cutover': 'automatic',
            'downtime_budget': 2, 'rate_cap': 10, 'threshold_mib': 0.25,
            'max_rounds': 500})
        self.assertNoFormErrors(res)
        self.assertRedirectsNoFollow(res, str(INDEX))
        m_create.assert_called_once_with(
            mock.ANY, ['a', 'b'], 'site-a', 'site-b', name='wave-1',
            options={'cutover': 'automatic', 'downtime_budget': 2,
                     'rate_cap': 10 * 1024 ** 2,
                     'threshold_bytes': 256 * 1024, 'max_rounds': 500})
        # Whole numbers, as fedex-api's option check wants them.
        options = m_create.call_args[1]['options']
        self.assertIsInstance(options['downtime_budget'], int)
        self.assertIsInstance(options['threshold_bytes'], int)

    @mock.patch(API + 'migration_create')
    def test_create_refused_by_preflight_keeps_the_form(self, m_create,
                                                        _sites):
        m_create.side_effect = fedex.FedexAPIError(
            'Unable to create the migration', 409,
            ['site site-b has no terminal; register one',
             'server a has a vTPM'])
        res = self.client.post(CREATE, {
            'servers': 'a', 'source_site': 'site-a', 'dest_site': 'site-b',
            'cutover': 'approved'})
        self.assertEqual(200, res.status_code)
        text = ''.join(str(m) for m in res.context['messages'])
        self.assertIn('site site-b has no terminal; register one', text)
        self.assertIn('server a has a vTPM', text)

    @mock.patch(API + 'migration_create')
    def test_same_site_twice_is_a_form_error(self, m_create, _sites):
        res = self.client.post(CREATE, {
            'servers': 'a', 'source_site': 'site-a', 'dest_site': 'site-a',
            'cutover': 'approved'})
        self.assertFormErrors(
            res, 1, 'Source and destination are the same site: choose '
            'another destination.')
        m_create.assert_not_called()


class PanelVisibilityTests(base.TestCase):

    def _setup_test_data(self):
        super()._setup_test_data()
        self.service_catalog = [s for s in self.service_catalog
                                if s['type'] != 'vm-shipping']

    @mock.patch(API + 'migration_list')
    def test_no_panel_without_fedex_api_in_the_catalog(self, m_list):
        res = self.client.get(INDEX)
        self.assertNotEqual(200, res.status_code)
        m_list.assert_not_called()


@mock.patch(API + 'site_list', return_value=base.SITES)
class AdminMigrationsTests(base.AdminTestCase):

    @mock.patch(API + 'migration_list')
    def test_admin_sees_every_project(self, m_list, _sites):
        m_list.return_value = [base.migration('m-1', project_id='p-other')]
        res = self.client.get(urls.reverse(
            'horizon:admin:fedex_migrations:index'))
        m_list.assert_called_once_with(mock.ANY, all_projects=True,
                                       state=None)
        self.assertIn('p-other', res.content.decode())
        self.assertIn(detail('m-1', 'admin'), res.content.decode())
