"""WSGI entry point of Horizon with this plugin (``uwsgi --module
fedex_sandbox.horizon.wsgi:application``)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault('DJANGO_SETTINGS_MODULE',
                      'fedex_sandbox.horizon.settings')

application = get_wsgi_application()
