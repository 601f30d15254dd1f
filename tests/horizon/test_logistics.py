"""Shipments and devices panels (admin) and their custody forms."""

from unittest import mock

from django import urls

from fedex_dashboard.api import fedex
from tests.horizon import base

API = 'fedex_dashboard.api.fedex.'
SHIPMENTS = urls.reverse_lazy('horizon:admin:fedex_shipments:index')
DEVICES = urls.reverse_lazy('horizon:admin:fedex_devices:index')

SHIPMENT = {'id': 's-1', 'name': 'ship-1', 'state': 'SEALED',
            'carrier': 'fedex', 'tracking_number': None, 'parity': 1,
            'updated_at': '2026-11-24T05:00:00'}


class ShipmentsTests(base.AdminTestCase):

    @mock.patch(API + 'shipment_list', return_value=[SHIPMENT])
    def test_index(self, m_list):
        res = self.client.get(SHIPMENTS)
        self.assertEqual(['s-1'], [s['id'] for s in
                                   res.context['shipments_table'].data])
        self.assertIn(urls.reverse('horizon:admin:fedex_shipments:event',
                                   args=['s-1']), res.content.decode())

    def test_forms_open_in_the_modal(self):
        # A row's action link asks for its form by AJAX: Horizon's modal.
        for url in (urls.reverse('horizon:admin:fedex_shipments:event',
                                 args=['s-1']),
                    urls.reverse('horizon:admin:fedex_devices:custody',
                                 args=['d-1'])):
            res = self.client.get(url, HTTP_X_REQUESTED_WITH='XMLHttpRequest')
            self.assertEqual(200, res.status_code, url)
            self.assertTemplateUsed(res, 'horizon/common/_modal_form.html')
            self.assertTemplateNotUsed(res, 'base.html')

    @mock.patch(API + 'shipment_event')
    def test_handed_to_carrier_with_tracking_number(self, m_event):
        m_event.return_value = dict(SHIPMENT, state='HANDED_TO_CARRIER',
                                    tracking_number='7712')
        url = urls.reverse('horizon:admin:fedex_shipments:event',
                           args=['s-1'])
        res = self.client.post(url, {'shipment_id': 's-1',
                                     'event': 'handed_to_carrier',
                                     'tracking_number': '7712',
                                     'location': 'dock A'})
        self.assertNoFormErrors(res)
        self.assertRedirectsNoFollow(res, str(SHIPMENTS))
        m_event.assert_called_once_with(mock.ANY, 's-1', 'handed_to_carrier',
                                        tracking_number='7712',
                                        location='dock A')

    @mock.patch(API + 'shipment_event')
    def test_hand_over_needs_the_tracking_number(self, m_event):
        url = urls.reverse('horizon:admin:fedex_shipments:event',
                           args=['s-1'])
        res = self.client.post(url, {'shipment_id': 's-1',
                                     'event': 'handed_to_carrier'})
        self.assertFormErrors(
            res, 1, "Give the carrier's tracking number of the hand-over.")
        m_event.assert_not_called()

    @mock.patch(API + 'shipment_event')
    def test_out_of_order_event_says_so(self, m_event):
        m_event.side_effect = fedex.FedexAPIError(
            'Unable to record "delivered" for shipment s-1', 409,
            ['shipment s-1 is SEALED: deliver is not allowed'])
        url = urls.reverse('horizon:admin:fedex_shipments:event',
                           args=['s-1'])
        res = self.client.post(url, {'shipment_id': 's-1',
                                     'event': 'delivered'})
        text = ''.join(str(m) for m in res.context['messages'])
        self.assertIn('deliver is not allowed', text)
        self.assertIn('reload the page', text)


class DevicesTests(base.AdminTestCase):

    @mock.patch(API + 'device_list')
    def test_index(self, m_list):
        m_list.return_value = [{'id': 'd-1', 'serial': 'SN-42',
                                'state': 'LOADED', 'terminal_id': 't-a',
                                'shipment_id': 's-1',
                                'capacity_bytes': 1024 ** 4,
                                'updated_at': None}]
        res = self.client.get(DEVICES)
        html = res.content.decode()
        self.assertIn('SN-42', html)
        self.assertIn('1.0 TiB', html)

    @mock.patch(API + 'device_list')
    def test_home_terminal_and_return_trip(self, m_list):
        trip = {'shipment_id': 's-9', 'name': 'return-0a1b2c3d4e5f',
                'state': 'IN_TRANSIT', 'carrier': 'simulated',
                'tracking_number': 'SIM42', 'from': 'term-b',
                'to': 'term-a'}
        m_list.return_value = [
            {'id': 'd-1', 'serial': 'SN-1', 'state': 'RETURNING',
             'terminal_id': 't-b', 'terminal': 'term-b',
             'home_terminal_id': 't-a', 'home_terminal': 'term-a',
             'return_trip': trip, 'shipment_id': 's-9',
             'capacity_bytes': 1024 ** 3, 'updated_at': None},
            {'id': 'd-2', 'serial': 'SN-2', 'state': 'BLANK',
             'terminal_id': 't-a', 'terminal': 'term-a',
             'home_terminal_id': 't-a', 'home_terminal': 'term-a',
             'return_trip': None, 'shipment_id': None,
             'capacity_bytes': 1024 ** 3, 'updated_at': None},
            {'id': 'd-3', 'serial': 'SN-3', 'state': 'LOST',
             'terminal_id': 't-b', 'terminal': 'term-b',
             'home_terminal_id': 't-a', 'home_terminal': 'term-a',
             'return_trip': dict(trip, state='LOST'), 'shipment_id': 's-9',
             'capacity_bytes': 1024 ** 3, 'updated_at': None}]
        html = self.client.get(DEVICES).content.decode()
        self.assertIn('Home terminal', html)
        self.assertIn('return-0a1b2c3d4e5f IN_TRANSIT, term-b to term-a '
                      '(tracking SIM42)', html)
        self.assertIn('at home', html)
        self.assertIn('lost on the way home (return-0a1b2c3d4e5f)', html)

    @mock.patch(API + 'device_custody')
    def test_custody(self, m_custody):
        m_custody.return_value = {'id': 'd-1', 'serial': 'SN-42'}
        url = urls.reverse('horizon:admin:fedex_devices:custody',
                           args=['d-1'])
        res = self.client.post(url, {'device_id': 'd-1',
                                     'holder': 'courier J. Doe',
                                     'location': 'dock B'})
        self.assertNoFormErrors(res)
        m_custody.assert_called_once_with(mock.ANY, 'd-1', 'courier J. Doe',
                                          location='dock B', message='')
