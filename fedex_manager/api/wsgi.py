"""WSGI entry point of fedex-api, for uwsgi or any WSGI server.

``uwsgi --http-socket 127.0.0.1:PORT --module fedex_manager.api.wsgi:application``
(or the ``fedex-api`` command, which runs exactly that); the configuration
files come from ``FEDEX_API_CONFIG`` (colon-separated paths, default
/etc/fedex/fedex-api.conf).
"""

from fedex_manager.api import deploy

application = deploy.init_application()
