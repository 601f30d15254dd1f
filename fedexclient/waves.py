"""/v1/waves: servers moved together; create, list, show, cutover, abort."""

from fedexclient import resource

ACTIONS = ('cutover', 'abort')


class WaveManager(resource.Manager):
    path = '/waves'

    def _url(self, ident, *parts):
        return '/'.join((self.path, resource.quote(ident)) + parts)

    def create(self, dest_site, servers, **fields):
        """Move ``servers`` (ids, or {server_id, volumes}) as one wave.

        ``fields``: name (the wave's id), source_site, dest_host, options
        (``max_parallel_cutovers``, ``cutover``, ...), as POST /v1/waves
        takes them; None ones are left out.
        """
        return self.http.post(self.path, resource.compact(
            dest_site=dest_site, servers=servers, **fields))['wave']

    def list(self, all_projects=None):
        params = {'all_projects': 'true'} if all_projects else {}
        return self.http.get(self.path, params)['waves']

    def get(self, ident):
        """The wave: every server's state, progress and cutovers."""
        return self.http.get(self._url(ident), {})['wave']

    def action(self, ident, verb, **args):
        """One of :data:`ACTIONS`, with its arguments."""
        return self.http.post(self._url(ident, 'action'),
                              {verb: resource.compact(**args)})['wave']

    def cutover(self, ident):
        """Approve every server's cutover (they run in turns)."""
        return self.action(ident, 'cutover')

    def abort(self, ident, reason=None):
        return self.action(ident, 'abort', reason=reason)
