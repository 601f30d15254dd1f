"""Durable progress: an append-only file of JSON lines, each fsync'd.

A line is written only after the data it describes is on stable storage, so
that replaying the journal after ``kill -9`` gives a state that is true. A
torn last line (the process died while writing it) is ignored.
"""

import json
import os


class Journal(object):

    def __init__(self, path):
        self.path = path
        self._f = None

    def entries(self):
        try:
            with open(self.path, 'rb') as f:
                lines = f.read().split(b'\n')
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            if not line:
                continue
            try:
                out.append(json.loads(line))
            except ValueError:
                break  # torn write: everything after it is not durable
        return out

    def _truncate_torn_tail(self):
        good = sum(len(json.dumps(e, separators=(',', ':'))) + 1
                   for e in self.entries())
        if os.path.exists(self.path) and os.path.getsize(self.path) != good:
            os.truncate(self.path, good)

    def append(self, entry):
        if self._f is None:
            os.makedirs(os.path.dirname(self.path), exist_ok=True)
            self._truncate_torn_tail()
            self._f = open(self.path, 'ab')
        self._f.write(json.dumps(entry, separators=(',', ':')).encode()
                      + b'\n')
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self):
        if self._f is not None:
            self._f.close()
            self._f = None
