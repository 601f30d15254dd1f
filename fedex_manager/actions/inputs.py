"""What the actions check of their input themselves.

Types and limits are checked once, at the door: fedex-api checks request
bodies against :mod:`fedex_manager.api.schemas`, and a migration's options
go through :func:`fedex_manager.options.validate` whoever passes them. The
actions trust their callers for types; they check what only they can: that
records exist and the state allows the action, and values that depend on
each other (an image listed twice, a destination image made by a pool map).
"""

from lsrp import exception


def bad(field, reason):
    raise exception.InvalidInput(field=field, reason=reason)


def limit(limit):
    """A page's size: None (no limit) or at least 1."""
    if limit is not None and limit < 1:
        bad('limit', 'must be at least 1, got %d' % limit)
    return limit
