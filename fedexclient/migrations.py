"""/v1/migrations: create, list, show, update, delete, and the actions."""

from fedexclient import resource

ACTIONS = ('abort', 'retry', 'cutover', 'reship')


class MigrationManager(resource.Collection):
    path = '/migrations'
    key = 'migrations'
    item = 'migration'

    def create(self, dest_site, servers=None, volumes=None, **fields):
        """Move servers, or detached volumes, to ``dest_site``.

        ``servers``: ids, or {server_id, volumes}; ``volumes``: [{volume_id}].
        ``fields``: source_site, dest_host, name, options, ... as
        POST /v1/migrations takes them; None ones are left out.
        """
        return self._create(resource.compact(
            dest_site=dest_site, servers=servers, volumes=volumes, **fields))

    def get(self, ident, events_limit=None):
        """A migration with its latest ``events_limit`` events."""
        return super().get(ident, events_limit=events_limit)

    def update(self, ident, clear=(), **fields):
        """Change its name or options (rate_cap, cutover_window, ...).

        None fields are left out; ``clear`` names the options to set to
        null (``cutover_window``: cut over at any time).
        """
        body = resource.compact(**fields)
        body.update(dict.fromkeys(clear))
        return self.http.patch(self._url(ident), body)[self.item]

    def delete(self, ident):
        self._delete(ident)

    def action(self, ident, verb, **args):
        """One of :data:`ACTIONS`, with its arguments."""
        return self.http.post(self._url(ident, 'action'),
                              {verb: resource.compact(**args)})[self.item]

    def abort(self, ident, reason=None):
        return self.action(ident, 'abort', reason=reason)

    def retry(self, ident):
        return self.action(ident, 'retry')

    def cutover(self, ident):
        """Approve the cutover: it runs once the migration is ready."""
        return self.action(ident, 'cutover')

    def reship(self, ident, seed_over_wan=None):
        return self.action(ident, 'reship', seed_over_wan=seed_over_wan)
