"""Progress for long operations: a bar on a terminal, or JSON lines."""

import json
import sys
import time


def _size(n):
    for unit in ('B', 'KiB', 'MiB', 'GiB', 'TiB'):
        if abs(n) < 1024 or unit == 'TiB':
            return '%.1f %s' % (n, unit) if unit != 'B' else '%d B' % n
        n /= 1024.0


class Progress(object):
    """Reports one task at a time.

    ``mode``: 'bar' (stderr, redrawn), 'json' (one object per line on stdout,
    every ``interval`` s and at the end), or 'none'.
    """

    def __init__(self, mode='bar', stream=None, interval=1.0):
        self.mode = mode
        self.stream = stream or (sys.stdout if mode == 'json' else sys.stderr)
        self.interval = interval
        self.label, self.total, self.done = '', 0, 0
        self._begin = self._last = 0.0

    def start(self, label, total):
        self.label, self.total, self.done = label, total, 0
        self._begin = self._last = time.monotonic()
        self._emit(force=True)

    def advance(self, n):
        self.done += n
        self._emit()

    def finish(self):
        self._emit(force=True, final=True)

    def _emit(self, force=False, final=False):
        if self.mode == 'none':
            return
        now = time.monotonic()
        if not force and now - self._last < (0.2 if self.mode == 'bar'
                                             else self.interval):
            return
        self._last = now
        elapsed = max(now - self._begin, 1e-6)
        rate = self.done / elapsed
        eta = (self.total - self.done) / rate if rate > 0 else None
        if self.mode == 'json':
            self.stream.write(json.dumps({
                'event': 'done' if final else 'progress', 'task': self.label,
                'bytes': self.done, 'total': self.total,
                'rate': round(rate), 'eta': eta and round(eta, 1),
                'elapsed': round(elapsed, 2)}) + '\n')
        else:
            frac = self.done / self.total if self.total else 1.0
            bar = '#' * int(frac * 30)
            self.stream.write('\r%-40s [%-30s] %5.1f%% %s/%s %s/s ETA %s%s' % (
                self.label[:40], bar, frac * 100, _size(self.done),
                _size(self.total), _size(rate),
                '%ds' % eta if eta is not None else '-',
                '\n' if final else ''))
        self.stream.flush()
