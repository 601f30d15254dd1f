"""A thin client of fedex-api over a keystoneauth session."""

import json

from osc_lib import exceptions


class FedexAPIError(exceptions.CommandError):
    """fedex-api refused: the status and every reason it gave."""

    def __init__(self, status, details):
        self.status = status
        self.details = details
        super().__init__('fedex-api: HTTP %d: %s' % (status,
                                                     '; '.join(details)))


class FedexClient(object):

    def __init__(self, session, endpoint):
        self.session = session
        self.endpoint = endpoint.rstrip('/')
        if not self.endpoint.endswith('/v1'):
            self.endpoint += '/v1'

    def _call(self, method, path, body=None, params=None):
        kwargs = {'raise_exc': False, 'params': params or {},
                  'headers': {'Accept': 'application/json'}}
        if body is not None:
            kwargs['json'] = body
        resp = self.session.request(self.endpoint + path, method, **kwargs)
        if resp.status_code >= 400:
            try:
                details = [e.get('detail', '') for e in
                           resp.json().get('errors', [])]
            except ValueError:
                details = [resp.text[:500]]
            raise FedexAPIError(resp.status_code, details or [resp.reason])
        if resp.status_code == 204 or not resp.content:
            return None
        return resp.json()

    def get(self, path, **params):
        return self._call('GET', path, params={k: v for k, v in
                                               params.items()
                                               if v is not None})

    def post(self, path, body):
        return self._call('POST', path, body=body)

    def patch(self, path, body):
        return self._call('PATCH', path, body=body)

    def delete(self, path):
        return self._call('DELETE', path)

    def list_all(self, path, key, limit=None, **params):
        """Follow ``next`` links; at most ``limit`` items when given."""
        items, marker = [], None
        while True:
            page = self.get(path, marker=marker, **params)
            items.extend(page[key])
            if limit is not None and len(items) >= limit:
                return items[:limit]
            if not page.get('links') or not page[key]:
                return items
            marker = page[key][-1]['id']

    # --- migrations -------------------------------------------------------

    def migration_create(self, body):
        return self.post('/migrations', body)['migration']

    def migration_get(self, ident):
        return self.get('/migrations/%s' % ident)['migration']

    def migration_action(self, ident, verb, args=None):
        return self.post('/migrations/%s/action' % ident,
                         {verb: args or {}})['migration']

    def dumps(self, obj):
        return json.dumps(obj, indent=2, sort_keys=True)
