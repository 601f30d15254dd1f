from django import urls
from django.utils.translation import gettext_lazy as _

from horizon import exceptions
from horizon import forms
from horizon import tables

from fedex_dashboard.api import fedex
from fedex_dashboard.content.logistics import forms as l_forms
from fedex_dashboard.content.logistics import tables as l_tables


class ShipmentsView(tables.DataTableView):
    table_class = l_tables.ShipmentsTable
    template_name = 'horizon/common/_data_table_view.html'
    page_title = _('Shipments')

    def get_data(self):
        info = self.get_server_filter_info(self.request)
        state = info['value'].strip().upper() if info and info['value'] \
            else None
        try:
            return fedex.shipment_list(self.request, state=state)
        except fedex.FedexAPIError as e:
            exceptions.handle(self.request, str(e))
            return []


class DevicesView(tables.DataTableView):
    table_class = l_tables.DevicesTable
    template_name = 'horizon/common/_data_table_view.html'
    page_title = _('Devices')

    def get_data(self):
        try:
            return fedex.device_list(self.request)
        except fedex.FedexAPIError as e:
            exceptions.handle(self.request, str(e))
            return []


class CarrierEventView(forms.ModalFormView):
    form_class = l_forms.CarrierEventForm
    template_name = 'fedex/logistics/form.html'
    # Opened from a row, the form comes in Horizon's modal (an AJAX request).
    ajax_template_name = 'horizon/common/_modal_form.html'
    modal_id = 'fedex_carrier_event_modal'
    modal_header = _('Record Carrier Event')
    submit_label = _('Record')
    page_title = _('Record Carrier Event')

    def get_success_url(self):
        return urls.reverse(l_tables.SHIPMENTS + ':index')

    @property
    def submit_url(self):
        return urls.reverse(l_tables.SHIPMENTS + ':event',
                            args=[self.kwargs['shipment_id']])

    def get_initial(self):
        return {'shipment_id': self.kwargs['shipment_id']}


class CustodyView(forms.ModalFormView):
    form_class = l_forms.CustodyForm
    template_name = 'fedex/logistics/form.html'
    # Opened from a row, the form comes in Horizon's modal (an AJAX request).
    ajax_template_name = 'horizon/common/_modal_form.html'
    modal_id = 'fedex_custody_modal'
    modal_header = _('Record Custody')
    submit_label = _('Record')
    page_title = _('Record Custody')

    def get_success_url(self):
        return urls.reverse(l_tables.DEVICES + ':index')

    @property
    def submit_url(self):
        return urls.reverse(l_tables.DEVICES + ':custody',
                            args=[self.kwargs['device_id']])

    def get_initial(self):
        return {'device_id': self.kwargs['device_id']}
