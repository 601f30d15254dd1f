"""Shipments and devices: where the data is, physically."""

from django import urls
from django.utils.translation import gettext_lazy as _

from horizon import tables

from fedex_dashboard.api import fedex
from fedex_dashboard.content import states
from fedex_dashboard.content import units

SHIPMENTS = 'horizon:admin:fedex_shipments'
DEVICES = 'horizon:admin:fedex_devices'


class RecordCarrierEvent(tables.LinkAction):
    name = 'carrier_event'
    verbose_name = _('Record Carrier Event')
    classes = ('ajax-modal',)
    icon = 'truck'

    def get_link_url(self, datum=None):
        return urls.reverse(SHIPMENTS + ':event', args=[datum['id']])

    def allowed(self, request, datum=None):
        if datum is not None and datum.get('kind') == 'return':
            # Devices going home: over once delivered or lost.
            return datum.get('state') not in ('DELIVERED', 'LOST')
        return datum is None or datum.get('state') not in (
            'ERASED', 'IMPORTED')


class ShipmentRow(tables.Row):
    ajax = True

    def get_data(self, request, shipment_id):
        return fedex.shipment_get(request, shipment_id)


class ShipmentFilterAction(tables.FilterAction):
    filter_type = 'server'
    filter_choices = (('state', _('State ='), True),)


class ShipmentsTable(tables.DataTable):
    name = tables.Column(lambda s: s.get('name') or s['id'],
                         verbose_name=_('Name'))
    state = tables.Column('state', verbose_name=_('State'), status=True,
                          status_choices=tuple(
                              (s.lower(), s not in ('LOST', 'DAMAGED',
                                                    'TAMPERED'))
                              for s in states.SHIPMENT_STABLE))
    # seed: a migration's devices; return: wiped devices going home.
    kind = tables.Column(lambda s: s.get('kind') or 'seed',
                         verbose_name=_('Kind'))
    carrier = tables.Column('carrier', verbose_name=_('Carrier'),
                            empty_value='-')
    tracking = tables.Column('tracking_number',
                             verbose_name=_('Tracking number'),
                             empty_value='-')
    parity = tables.Column('parity', verbose_name=_('Parity devices'),
                           empty_value='-')
    updated = tables.Column('updated_at', verbose_name=_('Updated'))

    def get_object_id(self, datum):
        return datum['id']

    def get_object_display(self, datum):
        return datum.get('name') or datum['id']

    class Meta(object):
        name = 'shipments'
        verbose_name = _('Shipments')
        status_columns = ['state']
        row_class = ShipmentRow
        table_actions = (ShipmentFilterAction,)
        row_actions = (RecordCarrierEvent,)


class RecordCustody(tables.LinkAction):
    name = 'custody'
    verbose_name = _('Record Custody')
    classes = ('ajax-modal',)
    icon = 'hand-paper-o'

    def get_link_url(self, datum=None):
        return urls.reverse(DEVICES + ':custody', args=[datum['id']])


def return_trip(device):
    """Where a device stands on its trip home, in a few words.

    fedex-api gives ``return_trip`` (its return consignment) for a device
    RETURNING or LOST on the way, and ``home_terminal``.
    """
    trip = device.get('return_trip')
    state = device.get('state')
    if state == 'LOST':
        return _('lost on the way home (%s)') % trip['name'] if trip \
            else _('lost')
    if state == 'RETURNING' and trip:
        text = _('%(name)s %(state)s, %(src)s to %(dst)s') % {
            'name': trip['name'], 'state': trip['state'],
            'src': trip.get('from') or '-', 'dst': trip.get('to') or '-'}
        if trip.get('tracking_number'):
            text += _(' (tracking %s)') % trip['tracking_number']
        return text
    if state == 'RETURNING':
        return _('waiting for the courier')
    home = device.get('home_terminal_id')
    if home and home == device.get('terminal_id'):
        return _('at home')
    return None


class DevicesTable(tables.DataTable):
    serial = tables.Column('serial', verbose_name=_('Serial'))
    state = tables.Column('state', verbose_name=_('State'))
    terminal = tables.Column(lambda d: d.get('terminal') or d.get(
        'terminal_id'), verbose_name=_('Terminal'), empty_value='-')
    home = tables.Column(lambda d: d.get('home_terminal') or d.get(
        'home_terminal_id'), verbose_name=_('Home terminal'),
        empty_value='-')
    trip = tables.Column(return_trip, verbose_name=_('Return trip'),
                         empty_value='-')
    shipment = tables.Column('shipment_id', verbose_name=_('Shipment'),
                             empty_value='-')
    capacity = tables.Column(lambda d: units.size(d.get('capacity_bytes')),
                             verbose_name=_('Capacity'))
    updated = tables.Column('updated_at', verbose_name=_('Updated'))

    def get_object_id(self, datum):
        return datum['id']

    def get_object_display(self, datum):
        return datum.get('serial') or datum['id']

    class Meta(object):
        name = 'devices'
        verbose_name = _('Devices')
        row_actions = (RecordCustody,)
