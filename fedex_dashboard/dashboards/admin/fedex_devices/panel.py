from django.utils.translation import gettext_lazy as _

from fedex_dashboard.content import panels


class Devices(panels.FedexPanel):
    name = _('Devices')
    slug = 'fedex_devices'
    permissions = ('openstack.roles.admin',)
