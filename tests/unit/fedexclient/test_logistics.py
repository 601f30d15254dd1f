"""The logistics calls an operator's hardware needs: devices registered,
sent home and retired; terminals and sites registered; return shipments."""

from tests.unit.fedexclient import base

API = base.API


class TestDevices(base.TestCase):

    def test_return_home_and_retire(self):
        self.requests.post(API + '/devices/SN%201/return', status_code=202,
                           json={'device': {'id': 'd1',
                                            'state': 'RETURNING'}})
        self.assertEqual('RETURNING', self.client.devices.return_home(
            'SN 1')['state'])
        self.assertSent('POST', API + '/devices/SN%201/return', {})
        self.client.devices.return_home('SN 1', reason='campaign over')
        self.assertSent('POST', API + '/devices/SN%201/return',
                        {'reason': 'campaign over'})
        self.requests.delete(API + '/devices/d1', status_code=204)
        self.assertIsNone(self.client.devices.delete('d1'))
        self.assertSent('DELETE', API + '/devices/d1')

    def test_lists_by_home_and_kind(self):
        self.requests.get(API + '/devices', json={'devices': []})
        self.client.devices.list(home_terminal='term-a', state='RETURNING')
        self.assertSent('GET', API + '/devices?home_terminal=term-a&'
                        'state=RETURNING')
        self.requests.get(API + '/shipments', json={'shipments': []})
        self.client.shipments.list_all(kind='return', state=None)
        self.assertSent('GET', API + '/shipments?kind=return')
