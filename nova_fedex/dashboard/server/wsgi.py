"""WSGI entry point of Horizon with this plugin (``uwsgi --module
nova_fedex.dashboard.server.wsgi:application``)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault('DJANGO_SETTINGS_MODULE',
                      'nova_fedex.dashboard.server.settings')

application = get_wsgi_application()
