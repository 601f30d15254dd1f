from django.utils.translation import gettext_lazy as _

from fedex_dashboard.content import panels


class Migrations(panels.FedexPanel):
    name = _('Migrations')
    slug = 'fedex_migrations'
    permissions = ('openstack.roles.admin',)
