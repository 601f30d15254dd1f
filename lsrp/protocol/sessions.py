"""Sessions: which source may write to a disk, right now.

TCP orders bytes within one connection only: if a source dies with frames in
flight and another source resumes, a late frame of the dead one must never
be applied. So the *sink* issues session ids that only increase (kept on
disk, so that a restarted sink does not reuse one); a new session of a disk
ends its previous one, and every data frame must carry the current id.

NOTE: ids come from one counter for all disks, not one per disk: frames
carry only the session id, so it must name the disk too (several disks on
one connection, several streams of one session).
"""

import json
import threading

from lsrp import exception
from lsrp import fileutils

# States of one disk's replication, and the moves between them.
IDLE = 'IDLE'
SESSION = 'SESSION'            # a source holds the disk (D3 answered)
REPLICATING = 'REPLICATING'    # D4/D9 accepted: updates may flow
COMPLETE = 'COMPLETE'          # D7/D11 done: a snapshot was taken
# D7 of a group's round: all applied, snapshot N waits for the group's
# commit (C4).
PREPARED = 'PREPARED'

_TRANSITIONS = frozenset([
    (IDLE, SESSION),            # INIT_SESSION
    (SESSION, SESSION),         # a new source takes over before it started
    (SESSION, REPLICATING),     # REPLICATION_START / DELTA_..._START
    (REPLICATING, SESSION),     # a new source takes over mid-way
    (REPLICATING, COMPLETE),    # REPLICATION_COMPLETE / DELTA_..._COMPLETE
    (REPLICATING, PREPARED),    # REPLICATION_COMPLETE with a group
    (PREPARED, COMPLETE),       # the group's commit took snapshot N
    (PREPARED, SESSION),        # a new source takes over before the commit
    (COMPLETE, SESSION),        # the next round, by a new session
    (COMPLETE, REPLICATING),    # the next snapshot in the same session
])


def check_transition(disk, old, new):
    if (old, new) not in _TRANSITIONS:
        raise exception.InvalidState(what='disk %s' % disk, old=old, new=new)


class SessionRegistry(object):
    """Per-disk current session and state; the last id in a JSON file."""

    def __init__(self, path):
        self.path = path
        self._lock = threading.Lock()
        try:
            with open(path) as f:
                saved = json.load(f)
            # A file of per-disk ids (before one counter): never reuse any.
            self._last = saved.get('last', max(saved.values(), default=0))
        except FileNotFoundError:
            self._last = 0
        self._current = {}   # disk -> (session id, state)

    def _save(self):
        fileutils.write_atomic(self.path, json.dumps({'last': self._last}))

    def open(self, disk):
        """Start a new session on ``disk``; the old one becomes stale."""
        with self._lock:
            old = self._current.get(disk, (0, IDLE))[1]
            check_transition(disk, old, SESSION)
            session = self._last = self._last + 1
            # Durable before anyone can use it: a restart never reissues it.
            self._save()
            self._current[disk] = (session, SESSION)
            return session

    def check(self, disk, session):
        """Raise StaleSession unless ``session`` is the disk's current one."""
        current = self._current.get(disk, (0, IDLE))[0]
        if session != current or current == 0:
            raise exception.StaleSession(code='STALE_SESSION', disk=disk,
                                         session=session, current=current)

    def current(self, disk):
        """The disk's current session id; 0 if none."""
        return self._current.get(disk, (0, IDLE))[0]

    def state(self, disk):
        return self._current.get(disk, (0, IDLE))[1]

    def move(self, disk, session, new):
        with self._lock:
            self.check(disk, session)
            check_transition(disk, self.state(disk), new)
            self._current[disk] = (session, new)
