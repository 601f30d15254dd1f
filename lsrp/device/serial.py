"""A thread that runs calls one after the other, in the order given.

For work that must see the data in order - an image digest fed piece by
piece - but need not hold up the thread that hands the pieces on: the
caller goes on at once, unless ``depth`` calls already wait (then memory
would grow).
"""

import collections
import concurrent.futures


class Serial(object):

    def __init__(self, depth=4):
        self._pool = concurrent.futures.ThreadPoolExecutor(1)
        self._pending = collections.deque()
        self._depth = depth

    def submit(self, fn, *args):
        self._pending.append(self._pool.submit(fn, *args))
        while self._pending and (len(self._pending) > self._depth
                                 or self._pending[0].done()):
            self._pending.popleft().result()

    def drain(self):
        """Wait for every call made so far; raise the first error."""
        while self._pending:
            self._pending.popleft().result()

    def close(self):
        for future in self._pending:
            future.cancel()
        self._pool.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
