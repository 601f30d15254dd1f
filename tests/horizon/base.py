"""Horizon's test case with fedex-api in the user's catalog, and sample
API objects shaped like fedex-api's answers."""

import copy

from openstack_dashboard.test import helpers

FEDEX_SERVICE = {
    'type': 'vm-shipping', 'name': 'fedex', 'endpoints_links': [],
    'endpoints': [
        {'region': 'RegionOne', 'interface': i,
         'url': 'http://fedex.example.com:8780'}
        for i in ('admin', 'internal', 'public')]}

SITES = [{'id': 'site-a-id', 'name': 'site-a'},
         {'id': 'site-b-id', 'name': 'site-b'}]


def migration(ident='m-1', state='CATCHING_UP', **kw):
    m = {
        'id': ident, 'name': 'web-%s' % ident, 'state': state,
        'project_id': '1', 'user_id': '1',
        'source_site_id': 'site-a-id', 'dest_site_id': 'site-b-id',
        'servers': [{'server_id': 'srv-%s' % ident, 'name': 'web01'}],
        'progress': {'bytes_total': 10 * 1024 ** 3,
                     'bytes_done': 4 * 1024 ** 3, 'percent': 40.0,
                     'rate': 12 * 1024 ** 2, 'eta_seconds': 500,
                     'rounds': 3, 'last_round_bytes': 50 * 1024 ** 2},
        'allowed_actions': ['abort'],
        'options': {'cutover': 'approved', 'threshold_bytes': 64 * 1024 ** 2},
        'cutover_approved': False, 'last_error': None,
        'created_at': '2026-11-24T05:00:00', 'updated_at': None,
        'shipments': [], 'events': [],
    }
    m.update(kw)
    return m


def events():
    return [
        {'id': 1, 'kind': 'state', 'from_state': None,
         'to_state': 'REQUESTED', 'message': 'requested',
         'created_at': '2026-11-24T05:00:00', 'details': {}},
        {'id': 2, 'kind': 'state', 'from_state': 'IMPORTING',
         'to_state': 'CATCHING_UP', 'message': 'imported',
         'created_at': '2026-11-24T05:10:00', 'details': {}},
    ] + [round_event(10 + r, r, b) for r, b in (
        (1, 900 * 1024 ** 2), (2, 200 * 1024 ** 2), (3, 50 * 1024 ** 2))]


def round_event(ident, number, changed):
    """A catch-up round's event as the manager writes it.

    fedex_manager.flows.tasks.rounds.one_round: kind ``progress``, its message, and
    the terminal's report as details (fedex_manager.agent.ops._round).
    """
    wire = changed * 3 // 4
    return {'id': ident, 'kind': 'progress',
            'created_at': '2026-11-24T05:1%d:00' % number,
            'message': 'round %d: %d bytes changed, %d on the wire in 4.0 s; '
                       'next about %d' % (number, changed, wire, changed // 4),
            'details': {'round': number, 'snapshot': 'ship-1-r%d' % number,
                        'changed_bytes': changed, 'wire_bytes': wire,
                        'seconds': 4.0, 'wire_rate': wire / 4.0,
                        'estimate': changed // 4}}


class TestCase(helpers.TestCase):

    def _setup_test_data(self):
        super()._setup_test_data()
        self.service_catalog = copy.deepcopy(self.service_catalog) + [
            FEDEX_SERVICE]


class AdminTestCase(helpers.BaseAdminViewTests):

    def _setup_test_data(self):
        super()._setup_test_data()
        self.service_catalog = copy.deepcopy(self.service_catalog) + [
            FEDEX_SERVICE]
