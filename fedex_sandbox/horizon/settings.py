"""Django settings of Horizon served by :mod:`.horizon`.

Horizon's own settings, then this plugin's enabled files (as a deployment
adds them to openstack_dashboard/local/enabled), and the few values a
sandbox gives through the environment:

* ``FEDEX_HORIZON_DIR``: a directory of its own (static files, secret key);
* ``FEDEX_HORIZON_KEYSTONE_URL``: Keystone's v3 URL.
"""

import os

from openstack_dashboard import enabled
from openstack_dashboard import settings as base
from openstack_dashboard.settings import *  # noqa: F401,F403
from openstack_dashboard.utils import settings as settings_utils

from fedex_dashboard import enabled as fedex_enabled

_DIR = os.environ['FEDEX_HORIZON_DIR']

# Redo Horizon's find_static_files and update_dashboards with the plugin's
# directory too (neither can be applied twice to the same configuration;
# without find_static_files no 'horizon.app' module reaches the page and
# Horizon's JavaScript, the tables' row polling with it, never starts).
HORIZON_CONFIG = base.HORIZON_CONFIG
INSTALLED_APPS = [a for a in base.INSTALLED_APPS
                  if a not in HORIZON_CONFIG.get('plugins', ())]
for _key in ('dashboards', 'default_dashboard', 'panel_customization',
             'angular_modules', 'js_files', 'js_spec_files', 'scss_files',
             'xstatic_modules', 'plugins', 'header_sections',
             'external_templates'):
    HORIZON_CONFIG.pop(_key, None)
settings_utils.find_static_files(HORIZON_CONFIG, base.AVAILABLE_THEMES,
                                 base.THEME_COLLECTION_DIR, base.ROOT_PATH)
settings_utils.update_dashboards([enabled, fedex_enabled], HORIZON_CONFIG,
                                 INSTALLED_APPS)

OPENSTACK_KEYSTONE_URL = os.environ['FEDEX_HORIZON_KEYSTONE_URL']
ALLOWED_HOSTS = ['127.0.0.1', 'localhost']
DEBUG = False
# No memcached: the cache in the process's memory, and the session in a
# signed cookie (Horizon's documented choice without a shared cache): a
# session in the cache answered the page after login with a 400
# SessionInterrupted when the browser's requests overlapped.
CACHES = {'default': {
    'BACKEND': 'django.core.cache.backends.locmem.LocMemCache'}}
SESSION_ENGINE = 'django.contrib.sessions.backends.signed_cookies'
STATIC_ROOT = os.path.join(_DIR, 'static')
COMPRESS_ROOT = STATIC_ROOT
# Compressed once at start (Horizon.compress, as deployments do with
# 'manage.py compress'): online, every page compiled Horizon's SCSS again,
# 12 to 29 s of CPU per page on the loaded mini-cloud.
COMPRESS_OFFLINE = True

_secret = os.path.join(_DIR, 'secret_key')
if not os.path.exists(_secret):
    with open(os.open(_secret, os.O_WRONLY | os.O_CREAT, 0o600), 'w') as _f:
        _f.write(os.urandom(32).hex())
with open(_secret) as _f:
    SECRET_KEY = _f.read().strip()

LOGGING = {
    'version': 1, 'disable_existing_loggers': False,
    'handlers': {'console': {'class': 'logging.StreamHandler'}},
    'root': {'handlers': ['console'], 'level': 'WARNING'},
}
