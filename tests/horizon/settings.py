"""Django settings of the dashboard's unit tests: Horizon's own test
settings with this plugin's enabled files added, as a deployment adds them
to openstack_dashboard/local/enabled."""

from openstack_dashboard import enabled
from openstack_dashboard.test import settings as base
from openstack_dashboard.test.settings import *  # noqa: F401,F403
from openstack_dashboard.utils import settings as settings_utils

from fedex_dashboard import enabled as fedex_enabled

# Redo Horizon's update_dashboards with both directories (it cannot be
# called twice on the same configuration).
HORIZON_CONFIG = base.HORIZON_CONFIG
INSTALLED_APPS = [a for a in base.INSTALLED_APPS
                  if a not in HORIZON_CONFIG.get('plugins', ())]
for key in ('dashboards', 'default_dashboard', 'panel_customization',
            'angular_modules', 'js_files', 'js_spec_files', 'scss_files',
            'xstatic_modules', 'plugins', 'header_sections'):
    HORIZON_CONFIG.pop(key, None)
settings_utils.update_dashboards([enabled, fedex_enabled], HORIZON_CONFIG,
                                 INSTALLED_APPS)
