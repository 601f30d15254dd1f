"""What every collection of fedex-api has: list, list all, show."""

import urllib.parse


def compact(**fields):
    """A request body: the fields given, without those that are None."""
    return {k: v for k, v in fields.items() if v is not None}


def quote(ident):
    """An id or a name as one segment of a path."""
    return urllib.parse.quote(str(ident), safe='')


class Manager(object):
    """Calls of one part of the API, over :class:`~fedexclient.http.HTTPClient`."""

    def __init__(self, http):
        self.http = http


class Collection(Manager):
    """One collection of the API, e.g. ``/v1/migrations``.

    ``path`` is its path under /v1, ``key`` the list's key in a list
    answer, ``item`` the object's key in a show answer.
    """

    path = None
    key = None
    item = None

    def _url(self, ident, *parts):
        return '/'.join((self.path, quote(ident)) + parts)

    def list(self, **params):
        """One page (``limit``, ``marker``, ``sort_key``, ``sort_dir``)."""
        return self.http.get(self.path, params)[self.key]

    def list_all(self, limit=None, **params):
        """Every page; at most ``limit`` items."""
        return self.http.list_all(self.path, self.key, limit=limit,
                                  params=params)

    def get(self, ident, **params):
        """One by id (or by name where the API accepts it)."""
        return self.http.get(self._url(ident), params)[self.item]

    def _create(self, body):
        return self.http.post(self.path, body)[self.item]

    def _delete(self, ident):
        self.http.delete(self._url(ident))
