"""What a Nova compute asks at a cutover: the plan of a server, and the
events it reports (nova_fedex)."""

from fedexclient import resource


class CutoverManager(resource.Manager):

    def get(self, server_id):
        """The cutover plan of a server; NotFound when none moves it."""
        return self.http.get('/servers/%s/cutover' % resource.quote(
            server_id))['cutover']

    def report(self, migration_id, event, host, details=None):
        """Tell fedex-api what the cutover of a migration just did."""
        return self.http.post(
            '/migrations/%s/cutover-events' % resource.quote(migration_id),
            {'event': event, 'host': host, 'details': details or {}})
