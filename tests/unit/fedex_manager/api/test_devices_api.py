"""Devices registered, sent home and retired; sites and terminals
registered: the routes, their schemas and their admin-only rules."""

from fedex_manager.db import api as db
from fedex_manager import return_trip
from tests.unit.fedex_manager.api import test_api

ADMIN, MEMBER, READER, SERVICE = (test_api.ADMIN, test_api.MEMBER,
                                  test_api.READER, test_api.SERVICE)


class TestDevices(test_api.Fixture):

    def setUp(self):
        super().setUp()
        self.terminals()
        self.devices()
        # SN-0 plugged in at term-b after a trip: away from its home.
        self.call('POST', '/v1/devices', {
            'serial': 'SN-0', 'capacity_bytes': 1 << 30,
            'terminal': 'term-b', 'slot': 5, 'path': '/slots-b/SN-0'},
            status=201)

    def device(self, ident, roles=ADMIN):
        return self.call('GET', '/v1/devices/%s' % ident, roles=roles,
                         status=200).json['device']

    def test_registered_with_its_home(self):
        d = self.call('POST', '/v1/devices', {
            'serial': 'SN-7', 'capacity_bytes': 5, 'terminal': 'term-b'},
            status=201).json['device']
        self.assertEqual(('BLANK', 'term-b', 'term-b', None), (
            d['state'], d['terminal'], d['home_terminal'],
            d['return_trip']))
        d = self.device('SN-0')
        self.assertEqual(('term-b', 'term-a'),
                         (d['terminal'], d['home_terminal']))
        listed = self.call('GET', '/v1/devices?home_terminal=term-a',
                           status=200).json['devices']
        self.assertEqual(['SN-0', 'SN-1'], sorted(x['serial']
                                                  for x in listed))
        self.assertEqual({'term-a'}, {x['home_terminal'] for x in listed})
        for roles in (MEMBER, READER, SERVICE):
            self.call('POST', '/v1/devices', {
                'serial': 'SN-8', 'capacity_bytes': 5,
                'terminal': 'term-a'}, roles=roles, status=403)

    def test_return_home(self):
        for roles in (MEMBER, READER, SERVICE):
            self.call('POST', '/v1/devices/SN-0/return', {}, roles=roles,
                      status=403)
        resp = self.call('POST', '/v1/devices/SN-0/return', {'colour': 1},
                         status=400)
        self.assertIn('colour', self.errors(resp)[0])
        resp = self.call('POST', '/v1/devices/SN-1/return', status=409)
        self.assertIn('at its home terminal term-a already',
                      self.errors(resp)[0])
        d = self.call('POST', '/v1/devices/SN-0/return',
                      {'reason': 'end of the campaign'},
                      status=202).json['device']
        self.assertEqual('RETURNING', d['state'])
        resp = self.call('POST', '/v1/devices/SN-0/return', status=409)
        self.assertIn('RETURNING', self.errors(resp)[0])
        # The conductor packs it (its sweeper's job).
        return_trip.send_home(self.ctx)
        s, = self.call('GET', '/v1/shipments?kind=return',
                       status=200).json['shipments']
        self.assertEqual('return', s['kind'])
        self.assertEqual([], self.call('GET', '/v1/shipments?kind=seed',
                                       status=200).json['shipments'])
        self.call('GET', '/v1/shipments?kind=boat', status=400)
        trip = self.device('SN-0')['return_trip']
        self.assertEqual((s['name'], 'SEALED', 'term-b', 'term-a'), (
            trip['name'], trip['state'], trip['from'], trip['to']))
        said = [e['message'] for e in self.device('SN-0')['events']]
        self.assertIn('going home to term-a from term-b (requested: end of '
                      'the campaign)', said)

    def test_retire(self):
        for roles in (MEMBER, READER, SERVICE):
            self.call('DELETE', '/v1/devices/SN-1', roles=roles, status=403)
        self.call('POST', '/v1/devices/SN-0/return', status=202)
        resp = self.call('DELETE', '/v1/devices/SN-0', status=409)
        self.assertIn('is RETURNING: only a BLANK, ERASED, LOST device',
                      self.errors(resp)[0])
        ident = self.device('SN-1')['id']
        self.call('DELETE', '/v1/devices/SN-1', status=204)
        self.call('GET', '/v1/devices/SN-1', status=404)
        self.call('DELETE', '/v1/devices/SN-1', status=404)
        events = db.events(self.ctx, {'resource_id': ident})
        self.assertIn('retired (was BLANK at term-a)',
                      [e['message'] for e in events])


class TestSitesAndTerminals(test_api.Fixture):

    def test_registered_by_an_admin(self):
        for roles in (MEMBER, READER, SERVICE):
            self.call('POST', '/v1/sites', {'name': 'site-c'}, roles=roles,
                      status=403)
        self.call('POST', '/v1/sites', {'name': 'site-c',
                                        'aggregate': 'agg-c'}, status=201)
        for roles in (MEMBER, READER):
            self.call('POST', '/v1/terminals', {'name': 'term-c',
                                                'site': 'site-c'},
                      roles=roles, status=403)
        t = self.call('POST', '/v1/terminals', {
            'name': 'term-c', 'site': 'site-c', 'slots': 4,
            'lsrp_address': '10.0.0.3:7000'}, status=201).json['terminal']
        self.assertEqual((4, '10.0.0.3:7000'), (t['slots'],
                                                t['lsrp_address']))
        resp = self.call('POST', '/v1/terminals', {
            'name': 'term-d', 'site': 'site-c', 'slots': -1}, status=400)
        self.assertIn('slots', self.errors(resp)[0])
        resp = self.call('POST', '/v1/terminals', {
            'name': 'term-d', 'site': 'site-x'}, status=404)
        self.assertIn('site site-x does not exist', self.errors(resp)[0])
