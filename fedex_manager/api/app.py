"""The middleware stack of fedex-api, assembled in code (no paste).

Outermost first: request id -> request line (UTF-8) -> auth
(keystonemiddleware auth_token, or the noauth test middleware) -> context
-> faults -> router. :func:`fedex_manager.api.deploy.build_app` puts the
body size limit and ``/healthcheck`` in front.
"""

import urllib.parse

from keystonemiddleware import auth_token
from oslo_log import log as logging
from oslo_middleware import request_id
import routes
import webob
import webob.dec

from fedex_manager.api import errors
from fedex_manager.api.handlers import cutover
from fedex_manager.api.handlers import events as events_h
from fedex_manager.api.handlers import logistics
from fedex_manager.api.handlers import migrations
from fedex_manager.api.handlers import plans
from fedex_manager.api.handlers import root
from fedex_manager.api.handlers import waves
from fedex_manager import context as context_mod

LOG = logging.getLogger(__name__)

# path -> {method: handler(req) -> webob.Response}
ROUTES = {
    '/': {'GET': root.versions},
    '/v1': {'GET': root.version},
    '/v1/migrations': {'GET': migrations.list_, 'POST': migrations.create},
    '/v1/migrations/{migration_id}': {'GET': migrations.show,
                                      'PATCH': migrations.update,
                                      'DELETE': migrations.delete},
    '/v1/migrations/{migration_id}/action': {'POST': migrations.action},
    # Servers moved together: one migration each, one shipment group.
    '/v1/waves': {'GET': waves.list_, 'POST': waves.create},
    '/v1/waves/{wave_id}': {'GET': waves.show},
    '/v1/waves/{wave_id}/action': {'POST': waves.action},
    '/v1/shipments': {'GET': logistics.shipment_list},
    '/v1/shipments/{shipment_id}': {'GET': logistics.shipment_show},
    '/v1/shipments/{shipment_id}/events': {'POST': logistics.shipment_event},
    '/v1/devices': {'GET': logistics.device_list,
                    'POST': logistics.device_create},
    '/v1/devices/{device_id}': {'GET': logistics.device_show,
                                'DELETE': logistics.device_delete},
    '/v1/devices/{device_id}/return': {'POST': logistics.device_return},
    '/v1/devices/{device_id}/custody': {'POST': logistics.device_custody},
    '/v1/terminals': {'GET': logistics.terminal_list,
                      'POST': logistics.terminal_register},
    '/v1/terminals/{terminal_id}': {'GET': logistics.terminal_show},
    '/v1/terminals/{terminal_id}/health': {'PUT': logistics.terminal_health},
    '/v1/sites': {'GET': logistics.site_list,
                  'POST': logistics.site_register},
    '/v1/sites/{site_id}': {'GET': logistics.site_show},
    '/v1/plans': {'GET': plans.list_, 'POST': plans.create},
    '/v1/plans/{plan_id}': {'GET': plans.show, 'DELETE': plans.delete},
    '/v1/events': {'GET': events_h.list_, 'POST': events_h.create},
    # nova_fedex at the cutover (handlers/cutover.py).
    '/v1/servers/{server_id}/cutover': {'GET': cutover.show},
    '/v1/migrations/{migration_id}/cutover-events': {'POST': cutover.event},
}

# Routes without a token: the version documents (clients discover them).
PUBLIC = ('/', '/v1')


class Router(object):
    """Dispatch by ROUTES; 404 for an unknown path, 405 for a method."""

    def __init__(self, table=ROUTES):
        self.table = table
        self.mapper = routes.Mapper()
        for path in table:
            # NOTE: Routes turns defaults into strings: match the path, then
            # look its handlers up here.
            self.mapper.connect(path, fedex_route=path)

    @webob.dec.wsgify
    def __call__(self, req):
        path = req.path_info.rstrip('/') or '/'
        match = self.mapper.match(path)
        if match is None:
            raise errors.HTTPError(404, 'no resource at %s' % req.path_info)
        methods = self.table[match.pop('fedex_route')]
        handler = methods.get(req.method)
        if handler is None:
            allowed = ', '.join(sorted(methods))
            raise errors.HTTPError(
                405, '%s is not allowed on %s; allowed: %s'
                % (req.method, path, allowed), headers={'Allow': allowed})
        req.urlvars = match
        return handler(req)


class FaultWrapper(object):
    """Any exception -> a JSON error with the right status."""

    def __init__(self, app):
        self.app = app

    @webob.dec.wsgify
    def __call__(self, req):
        try:
            return req.get_response(self.app)
        except Exception as exc:
            return errors.from_exception(exc)


class RequestLine(object):
    """400 for a path or query string that is not UTF-8.

    webob decodes both as UTF-8 wherever they are first read (in
    auth_token, the context, the router or a handler), and raises there.
    """

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        for part, text in (('path', environ.get('PATH_INFO', '')),
                           ('query string', urllib.parse.unquote_to_bytes(
                               environ.get('QUERY_STRING', '')))):
            try:
                (text if isinstance(text, bytes) else
                 text.encode('latin-1')).decode('utf-8')
            except UnicodeError as e:
                resp = errors.response(
                    400, ['the %s is not UTF-8 text (%s)' % (part, e)],
                    'fedex.bad_request')
                return resp(environ, start_response)
        return self.app(environ, start_response)


class ContextMiddleware(object):
    """The request context, from the headers auth_token checked and set."""

    def __init__(self, app, auth_uri=None):
        self.app = app
        self.challenge = ('Keystone uri="%s"' % auth_uri if auth_uri
                          else 'Keystone')

    @webob.dec.wsgify
    def __call__(self, req):
        public = (req.path_info.rstrip('/') or '/') in PUBLIC
        if not public and req.environ.get(
                'HTTP_X_IDENTITY_STATUS') != 'Confirmed':
            return errors.response(
                401, ['authentication required: send a valid Keystone token '
                      'in X-Auth-Token'], 'fedex.unauthorized',
                {'WWW-Authenticate': self.challenge})
        req.environ['fedex.context'] = context_mod.RequestContext.from_environ(
            req.environ)
        return req.get_response(self.app)


class NoAuthMiddleware(object):
    """Tests only: trust X-Roles / X-Project-Id / X-User-Id as given."""

    def __init__(self, app):
        self.app = app

    @webob.dec.wsgify
    def __call__(self, req):
        for header in ('X-Identity-Status', 'X-Service-Identity-Status'):
            req.headers.pop(header, None)
        if 'X-Project-Id' in req.headers:
            req.headers['X-Identity-Status'] = 'Confirmed'
            req.headers.setdefault('X-User-Id', 'noauth-user')
            req.headers.setdefault('X-Roles', '')
        return req.get_response(self.app)


def deploy(conf):
    """The WSGI application for ``conf`` (already parsed)."""
    app = Router()
    app = FaultWrapper(app)
    if conf.api.auth_strategy == 'noauth':
        app = ContextMiddleware(app)
        app = NoAuthMiddleware(app)
    else:
        app = ContextMiddleware(
            app, conf.keystone_authtoken.www_authenticate_uri)
        # delay_auth_decision: the version documents need no token; every
        # other route is refused with 401 by ContextMiddleware.
        app = auth_token.AuthProtocol(app, {'delay_auth_decision': True,
                                            'oslo_config_config': conf})
    app = RequestLine(app)
    app = request_id.RequestId(app)
    return app
