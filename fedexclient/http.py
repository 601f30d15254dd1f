"""Requests to fedex-api through a keystoneauth adapter: JSON in and out,
errors as :mod:`fedexclient.exceptions`."""

from keystoneauth1 import exceptions as ks_exc

from fedexclient import exceptions

# Every route of the API is under its version; the catalog names the root.
PREFIX = '/v1'
HEADERS = {'Accept': 'application/json'}


def query(params):
    """Query parameters as fedex-api reads them.

    None and False are left out (not asked, or the API's default); True is
    ``true``.
    """
    out = {}
    for key, value in (params or {}).items():
        if value is None or value is False:
            continue
        out[key] = 'true' if value is True else value
    return out


class HTTPClient(object):
    """JSON requests to the paths of fedex-api v1."""

    def __init__(self, adapter):
        self.adapter = adapter

    def request(self, method, path, body=None, params=None):
        """The decoded JSON answer, or None for an empty one."""
        kwargs = {'raise_exc': False, 'headers': dict(HEADERS)}
        params = query(params)
        if params:
            kwargs['params'] = params
        if body is not None:
            kwargs['json'] = body
        try:
            resp = self.adapter.request(PREFIX + path, method, **kwargs)
        except ks_exc.ClientException as e:
            raise exceptions.CommunicationError(str(e)) from e
        if resp.status_code >= 400:
            raise exceptions.from_response(resp)
        if resp.status_code == 204 or not resp.content:
            return None
        try:
            return resp.json()
        except ValueError as e:
            raise exceptions.InvalidResponse(
                '%s %s: HTTP %d with a body that is not JSON: %s'
                % (method, PREFIX + path, resp.status_code, e)) from e

    def get(self, path, params=None):
        return self.request('GET', path, params=params)

    def post(self, path, body):
        return self.request('POST', path, body=body)

    def put(self, path, body):
        return self.request('PUT', path, body=body)

    def patch(self, path, body):
        return self.request('PATCH', path, body=body)

    def delete(self, path):
        return self.request('DELETE', path)

    def list_all(self, path, key, limit=None, params=None):
        """Every item of a list, page after page; at most ``limit``.

        A page is followed by another while the API gives a ``next`` link;
        the marker is the last item's id.
        """
        params = dict(params or {})
        items = []
        while True:
            page = self.get(path, params)
            items.extend(page[key])
            if limit is not None and len(items) >= limit:
                return items[:limit]
            if not page.get('links') or not page[key]:
                return items
            params['marker'] = page[key][-1]['id']
