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


class DevicesTable(tables.DataTable):
    serial = tables.Column('serial', verbose_name=_('Serial'))
    state = tables.Column('state', verbose_name=_('State'))
    terminal = tables.Column(lambda d: d.get('terminal') or d.get(
        'terminal_id'), verbose_name=_('Terminal'), empty_value='-')
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
