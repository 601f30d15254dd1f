#!/usr/bin/env python3
"""fedex-conductor with a sampling profiler (the scale benchmark's --profile).

    python tests/benchmarks/profiled_conductor.py OUT_PREFIX --config-file X

Runs ``fedex-conductor`` unchanged; in its worker process (oslo.service
forks it) a thread looks at every other thread's stack every 50 ms
(``sys._current_frames``), weighted by the CPU time the thread used since
the last look (its clock ticks in ``/proc/self/task/<tid>/stat``: a
waiting thread weighs nothing), and writes every 30 s and at exit to
``OUT_PREFIX-<pid>.txt`` the functions that used the CPU: innermost frame,
innermost frame of the manager's code, anywhere on the stack
(cumulative). No py-spy here.
"""

import atexit
import collections
import faulthandler
import gc
import os
import signal
import sys
import threading
import time

INTERVAL = 0.05


class Sampler(object):

    def __init__(self, prefix):
        self.path = '%s-%d.txt' % (prefix, os.getpid())
        self.own = collections.Counter()
        self.cum = collections.Counter()
        self.leaf = collections.Counter()
        self.samples = self.busy = 0
        self.begin = time.monotonic()

    def run(self):
        me = threading.get_ident()
        last = time.monotonic()
        ticks = {}
        while True:
            time.sleep(INTERVAL)
            # Without the GC: sys._current_frames() allocates while it
            # holds the interpreter's thread-list lock, and a collection
            # there that frees a threading.local takes that lock again
            # (CPython 3.11: the whole process deadlocks; seen here).
            gc.disable()
            try:
                frames = sys._current_frames()
            finally:
                gc.enable()
            for t in threading.enumerate():
                if t.ident == me or t.ident not in frames:
                    continue
                # CPU this thread used since the last look (clock ticks,
                # /proc): a waiting thread's stack is not counted.
                try:
                    with open('/proc/self/task/%d/stat' % t.native_id) as f:
                        fields = f.read().rsplit(')', 1)[1].split()
                    used = int(fields[11]) + int(fields[12])
                except (OSError, IndexError, ValueError):
                    continue
                weight = used - ticks.get(t.native_id, used)
                ticks[t.native_id] = used
                self.samples += 1
                if weight <= 0:
                    continue
                self.busy += weight
                frame = frames[t.ident]
                self.leaf['%s:%s' % (os.path.basename(
                    frame.f_code.co_filename), frame.f_code.co_name)] += \
                    weight
                seen = set()
                own = None
                f = frame
                while f is not None:
                    code = f.f_code
                    key = '%s:%d %s' % (code.co_filename.split(
                        'site-packages/')[-1].replace('/work/main/', ''),
                        code.co_firstlineno, code.co_name)
                    if own is None and ('fedex_manager' in key or
                                        'lsrp/' in key):
                        own = key
                    if key not in seen:
                        seen.add(key)
                        self.cum[key] += weight
                    f = f.f_back
                if own:
                    self.own[own] += weight
            if time.monotonic() - last > 30:
                last = time.monotonic()
                self.dump()

    def dump(self):
        with open(self.path + '.tmp', 'w') as out:
            out.write('%.0f s, %d thread samples every %d ms, %.1f CPU s '
                      'seen (clock ticks of the threads, weights below)\n'
                      % (time.monotonic() - self.begin, self.samples,
                         INTERVAL * 1000, self.busy / 100.0))
            for title, counter in (
                    ('innermost running frame', self.leaf),
                    ('innermost frame of the manager\'s code (running)',
                     self.own),
                    ('on the stack, running (cumulative)', self.cum)):
                out.write('\n== %s\n' % title)
                for key, n in counter.most_common(45):
                    out.write('%7d %5.1f%%  %s\n' % (
                        n, 100.0 * n / max(self.busy, 1), key))
        os.replace(self.path + '.tmp', self.path)


def _start(prefix):
    # kill -USR1 <worker>: every thread's stack into the conductor's log.
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    sampler = Sampler(prefix)
    threading.Thread(target=sampler.run, daemon=True,
                     name='sampler').start()
    atexit.register(sampler.dump)


def main():
    prefix = sys.argv.pop(1)
    # The launcher forks its worker: profile there (and in the master, idle).
    os.register_at_fork(after_in_child=lambda: _start(prefix))
    from fedex_manager.conductor import main as conductor_main
    sys.argv[0] = 'fedex-conductor'
    return conductor_main()


if __name__ == '__main__':
    sys.exit(main())
