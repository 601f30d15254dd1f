"""Exceptions -> HTTP status, in the OpenStack API-WG error format.

``{"errors": [{"status": 409, "code": "fedex.conflict", "title":
"Conflict", "detail": "..."}]}``; a preflight that refuses a migration for
several reasons lists one error per reason.
"""

import json

from oslo_log import log as logging
import webob

from lsrp import exception

LOG = logging.getLogger(__name__)

TITLES = {400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden',
          404: 'Not Found', 405: 'Method Not Allowed', 409: 'Conflict',
          413: 'Request Entity Too Large', 415: 'Unsupported Media Type',
          500: 'Internal Server Error'}


class HTTPError(Exception):
    """Raised by handlers; ``details`` is one message or a list of them."""

    def __init__(self, status, details, code=None, headers=None):
        super().__init__(details)
        self.status = status
        self.details = details if isinstance(details, list) else [details]
        self.code = code or 'fedex.%s' % TITLES.get(
            status, 'error').lower().replace(' ', '_')
        self.headers = headers or {}


def _status_of(exc):
    """The HTTP status of a project exception, by its class name.

    By name, so the REST layer needs no import of every module that defines
    exceptions, and new subclasses map by their base.
    """
    for cls in type(exc).__mro__:
        name = cls.__name__
        if name == 'PolicyNotAuthorized':
            return 403
        if name in ('NotFound',) or name.endswith('NotFound'):
            return 404
        if name in ('InvalidTransition', 'Conflict', 'InvalidState',
                    'PlanCannotConverge', 'PreflightFailed'):
            return 409
        if name.startswith('Invalid') or name == 'ValidationError':
            return 400
    return None


def response(status, details, code, headers=None):
    body = {'errors': [{'status': status, 'code': code,
                        'title': TITLES.get(status, ''), 'detail': d}
                       for d in details]}
    resp = webob.Response(status=status, content_type='application/json',
                          charset='utf-8',
                          body=json.dumps(body).encode())
    for k, v in (headers or {}).items():
        resp.headers[k] = v
    return resp


def from_exception(exc):
    """A webob response for any exception a handler raised."""
    if isinstance(exc, HTTPError):
        return response(exc.status, exc.details, exc.code, exc.headers)
    if isinstance(exc, exception.FedexException):
        status = _status_of(exc)
        if status is not None:
            reasons = getattr(exc, 'reasons', None) or [str(exc)]
            code = 'fedex.%s' % type(exc).__name__
            return response(status, list(reasons), code)
    LOG.exception('fedex-api: unexpected error')
    return response(500, ['%s: %s' % (type(exc).__name__, exc)],
                    'fedex.internal_error')
