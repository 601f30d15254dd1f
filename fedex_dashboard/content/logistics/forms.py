"""Carrier events of a shipment and custody of a device, recorded by hand."""

from django.utils.translation import gettext_lazy as _

from horizon import exceptions
from horizon import forms
from horizon import messages

from fedex_dashboard.api import fedex
from fedex_dashboard.content import states


class CarrierEventForm(forms.SelfHandlingForm):
    shipment_id = forms.CharField(widget=forms.HiddenInput())
    event = forms.ThemableChoiceField(label=_('Event'),
                                      choices=states.CARRIER_EVENTS)
    tracking_number = forms.CharField(
        label=_('Tracking number'), max_length=128, required=False,
        help_text=_('Required when the shipment is handed to the carrier.'))
    location = forms.CharField(label=_('Location'), max_length=255,
                               required=False)

    def clean(self):
        data = super().clean()
        if data.get('event') == 'handed_to_carrier' and not data.get(
                'tracking_number'):
            self.add_error('tracking_number', _(
                'Give the carrier\'s tracking number of the hand-over.'))
        return data

    def handle(self, request, data):
        try:
            s = fedex.shipment_event(
                request, data['shipment_id'], data['event'],
                tracking_number=data.get('tracking_number'),
                location=data.get('location'))
        except fedex.FedexAPIError as e:
            exceptions.handle(request, str(e))
            return False
        messages.success(request, _('Shipment %(name)s: %(state)s.') % {
            'name': s.get('name') or s['id'], 'state': s['state']})
        return True


class CustodyForm(forms.SelfHandlingForm):
    device_id = forms.CharField(widget=forms.HiddenInput())
    holder = forms.CharField(label=_('Now held by'), max_length=255)
    location = forms.CharField(label=_('Location'), max_length=255,
                               required=False)
    message = forms.CharField(label=_('Note'), max_length=1024,
                              required=False)

    def handle(self, request, data):
        try:
            d = fedex.device_custody(request, data['device_id'],
                                     data['holder'],
                                     location=data.get('location'),
                                     message=data.get('message'))
        except fedex.FedexAPIError as e:
            exceptions.handle(request, str(e))
            return False
        messages.success(request, _('Device %(serial)s is now held by '
                                    '%(holder)s.') % {
            'serial': d.get('serial') or d['id'], 'holder': data['holder']})
        return True
