"""A tempest rest client of fedex-api (/v1, api-ref/source).

Each call checks the status fedex-api answers with on success (tempest's
RestClient raises its own exceptions for 4xx and 5xx, with the parsed
error list in ``resp_body``) and returns the parsed body.
"""

import json
from urllib import parse as urllib

from tempest.lib.common import rest_client


class FedexClient(rest_client.RestClient):
    """Migrations, plans, shipments, devices, terminals, sites, events."""

    # The catalog gives the root (the version documents); paths are /v1.
    api_path = 'v1'

    def _url(self, *parts, **params):
        url = '/'.join((self.api_path,) + tuple(
            urllib.quote(str(p), safe='') for p in parts))
        params = {k: v for k, v in params.items() if v is not None}
        if params:
            url += '?' + urllib.urlencode(sorted(params.items()))
        return url

    def _get(self, *parts, **params):
        resp, body = self.get(self._url(*parts, **params))
        self.expected_success(200, resp.status)
        return rest_client.ResponseBody(resp, json.loads(body))

    def _post(self, status, body, *parts):
        resp, out = self.post(self._url(*parts), json.dumps(body))
        self.expected_success(status, resp.status)
        return rest_client.ResponseBody(resp, json.loads(out)
                                        if out else {})

    def _delete(self, *parts):
        resp, body = self.delete(self._url(*parts))
        self.expected_success(204, resp.status)
        return rest_client.ResponseBody(resp, body)

    # --- versions -----------------------------------------------------------

    def show_version(self):
        return self._get()

    # --- migrations ---------------------------------------------------------

    def list_migrations(self, **params):
        return self._get('migrations', **params)

    def show_migration(self, migration_id, **params):
        return self._get('migrations', migration_id, **params)

    def create_migration(self, **body):
        return self._post(201, body, 'migrations')

    def update_migration(self, migration_id, **body):
        resp, out = self.patch(self._url('migrations', migration_id),
                               json.dumps(body))
        self.expected_success(200, resp.status)
        return rest_client.ResponseBody(resp, json.loads(out))

    def delete_migration(self, migration_id):
        return self._delete('migrations', migration_id)

    def migration_action(self, migration_id, action, **args):
        """abort, retry, cutover or reship: 202 and the migration."""
        return self._post(202, {action: args}, 'migrations', migration_id,
                          'action')

    # --- plans --------------------------------------------------------------

    def create_plan(self, **body):
        return self._post(201, body, 'plans')

    def list_plans(self, **params):
        return self._get('plans', **params)

    def show_plan(self, plan_id):
        return self._get('plans', plan_id)

    def delete_plan(self, plan_id):
        return self._delete('plans', plan_id)

    # --- events -------------------------------------------------------------

    def list_events(self, **params):
        return self._get('events', **params)

    # --- logistics ----------------------------------------------------------

    def list_shipments(self, **params):
        return self._get('shipments', **params)

    def show_shipment(self, shipment_id):
        return self._get('shipments', shipment_id)

    def list_devices(self, **params):
        return self._get('devices', **params)

    def show_device(self, device_id):
        return self._get('devices', device_id)

    def create_device(self, **body):
        return self._post(201, body, 'devices')

    def delete_device(self, device_id):
        return self._delete('devices', device_id)

    def list_terminals(self, **params):
        return self._get('terminals', **params)

    def show_terminal(self, terminal_id):
        return self._get('terminals', terminal_id)

    def register_terminal(self, **body):
        return self._post(201, body, 'terminals')

    def list_sites(self, **params):
        return self._get('sites', **params)

    def show_site(self, site_id):
        return self._get('sites', site_id)

    def create_site(self, **body):
        return self._post(201, body, 'sites')
