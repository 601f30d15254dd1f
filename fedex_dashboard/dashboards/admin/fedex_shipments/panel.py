from django.utils.translation import gettext_lazy as _

from fedex_dashboard.content import panels


class Shipments(panels.FedexPanel):
    name = _('Shipments')
    slug = 'fedex_shipments'
    permissions = ('openstack.roles.admin',)
