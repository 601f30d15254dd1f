"""fedex-api's errors as exceptions, one class per status users meet.

fedex-api answers an error in the API-WG format (``{"errors": [{"status",
"code", "title", "detail"}]}``, one entry per reason); :func:`from_response`
keeps every reason. The message reads ``fedex-api: HTTP 409: <reasons>``,
as ``openstack fedex ...`` has always printed it.
"""

# The longest part of a non-JSON error body (a proxy's HTML page) kept.
TEXT_LIMIT = 200


class ClientException(Exception):
    """Base of every fedexclient error."""


class CommunicationError(ClientException):
    """fedex-api could not be asked: no endpoint, no token, no connection.

    The message is keystoneauth's, which says which of these it was.
    """


class InvalidResponse(ClientException):
    """fedex-api answered a success with a body that is not JSON."""


class HttpError(ClientException):
    """fedex-api refused: its status and every reason it gave."""

    status = None

    def __init__(self, status=None, details=(), reason=None, codes=(),
                 request_id=None):
        self.status = status or self.status
        self.details = list(details)
        self.reason = reason
        self.codes = list(codes)
        self.request_id = request_id
        super().__init__(str(self))

    @property
    def summary(self):
        """``HTTP 409: reason; reason``, without the service's name."""
        reasons = self.details or [self.reason or '']
        return 'HTTP %d: %s' % (self.status, '; '.join(reasons))

    def __str__(self):
        return 'fedex-api: %s' % self.summary


class BadRequest(HttpError):
    status = 400


class Unauthorized(HttpError):
    status = 401


class Forbidden(HttpError):
    status = 403


class NotFound(HttpError):
    status = 404


class MethodNotAllowed(HttpError):
    status = 405


class Conflict(HttpError):
    status = 409


class UnsupportedMediaType(HttpError):
    status = 415


class ServerError(HttpError):
    """Any 5xx: fedex-api (or what is in front of it) failed."""

    status = 500


class ServiceUnavailable(ServerError):
    status = 503


_BY_STATUS = {cls.status: cls for cls in (
    BadRequest, Unauthorized, Forbidden, NotFound, MethodNotAllowed,
    Conflict, UnsupportedMediaType, ServerError, ServiceUnavailable)}


def _reasons(response):
    """(details, codes) of an error response, JSON or not."""
    try:
        errors = response.json().get('errors') or []
        return ([e.get('detail') or e.get('title') or '' for e in errors],
                [e.get('code') for e in errors])
    except (ValueError, AttributeError):
        text = response.text
        return ([text[:TEXT_LIMIT]] if text else []), []


def from_response(response):
    """The :class:`HttpError` subclass of a response with status >= 400."""
    status = response.status_code
    cls = _BY_STATUS.get(status)
    if cls is None:
        cls = ServerError if status >= 500 else HttpError
    details, codes = _reasons(response)
    return cls(status, details, reason=response.reason, codes=codes,
               request_id=response.headers.get('x-openstack-request-id'))
