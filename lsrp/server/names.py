"""Names a peer gives that become file names on this terminal."""

import re

from lsrp import exception

# No path separators, no leading dot, bounded: safe in any directory.
_SAFE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$')


def check(what, name):
    """Return ``name``; raise NOT_ALLOWED unless it is safe as a file name."""
    if not _SAFE.match(name):
        raise exception.ProtocolError(
            code='NOT_ALLOWED', reason='%s name %r: letters, digits, ".", '
            '"_" and "-" only' % (what, name[:64]))
    return name
