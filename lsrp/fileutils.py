"""Files that are whole or absent after a crash: the one place that writes them.

Every record, label, manifest, journal header, session counter, certificate
and configuration file of the project goes through ``write_atomic``: the data
is written to ``<path>.tmp``, fsync'd, renamed over ``path``, and the
directory fsync'd, so that after ``kill -9`` or a power cut a reader finds the
old file or the new one, never a torn one.
"""

import json
import os


def fsync_dir(path):
    """Make the entries of directory ``path`` (a rename) durable."""
    fd = os.open(path or '.', os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path, data, mode=0o644):
    """Write ``data`` (bytes or str) so that ``path`` is whole or absent.

    ``mode`` applies to a new file (0600 for keys and private keys).
    """
    if isinstance(data, str):
        data = data.encode()
    tmp = path + '.tmp'
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, 'wb') as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(os.path.dirname(path))


def json_entries(directory):
    """``(path, entry)`` of each ``*.json`` file of ``directory``, by name.

    Nothing when the directory does not exist. For the state a terminal
    leaves one file per item of (rounds in flight, group commits) and reads
    back when it starts again.
    """
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return
    for name in names:
        if name.endswith('.json'):
            path = os.path.join(directory, name)
            with open(path) as f:
                yield path, json.load(f)
