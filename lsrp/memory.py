"""Memory settings of the processes that move image data: malloc and gc.

Every stage of an export or import makes buffers of 4-8 MiB (a piece read
from librbd, a stripe, its parity, a group decoded for writing). glibc
serves each one above its mmap threshold with a fresh ``mmap`` and gives it
back on free, so the kernel zeroes and maps 2048 pages again for every
8 MiB: 2 us a page, ~0.55 CPU seconds per GiB moved through each such
buffer (measured: 200 joins of 8 MiB took 2.27 CPU s, 1.84 of them in the
kernel's page faults, and 0.27 s with the settings below). The ``rbd`` CLI
does not pay this: it runs on tcmalloc, which keeps freed memory.

So: buffers up to 32 MiB come from the heap and freed memory is kept up to
``TRIM`` bytes, in at most ``ARENAS`` arenas (with one arena per thread
glibc kept ~75 MB more of freed buffers in an import). The queues between
the stages are bounded, so what is kept is bounded too (peak RSS: see the
shipments page). Call :func:`tune` first thing in ``main``, before threads
start.

Python's cyclic garbage collector ran a young collection every 700
container allocations - several per 4 MiB piece, each walking the young
objects - and took 2-3.6 % of an export's and an import's CPU in ``perf``.
The engine makes few reference cycles, so it runs less often.

Shard files are written with ``O_DIRECT`` from page-aligned buffers
(:class:`AlignedBuffers`): a buffered write copied every byte into the page
cache, 18 % of an export's CPU in ``perf``.
"""

import ctypes
import gc
import mmap
import threading

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8

ARENAS = 2
# Above every buffer of ours (and glibc's default upper bound on 64-bit).
MMAP_THRESHOLD = 32 << 20
TRIM = 64 << 20
# Container allocations between young collections (Python's default: 700).
GC_THRESHOLD = 20000


def tune(arenas=ARENAS, mmap_threshold=MMAP_THRESHOLD, trim=TRIM):
    """Apply the settings; returns False where malloc is not glibc's."""
    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    try:
        libc = ctypes.CDLL('libc.so.6')
        return all([libc.mallopt(M_ARENA_MAX, arenas),
                    libc.mallopt(M_MMAP_THRESHOLD, mmap_threshold),
                    libc.mallopt(M_TRIM_THRESHOLD, trim)])
    except (OSError, AttributeError):
        return False  # not glibc: nothing to tune


PAGE = mmap.PAGESIZE
# Buffers are made in whole MiB: stripes vary by a few KiB, so one made for
# a stripe fits the next.
_GRAIN = 1 << 20


class AlignedBuffers(object):
    """Page-aligned buffers (anonymous ``mmap``), kept for reuse.

    For ``O_DIRECT`` writes, which need aligned memory. A fresh mapping is
    zeroed and faulted in page by page (see above), so at most ``keep``
    freed ones are kept for the next caller. Thread-safe.
    """

    def __init__(self, keep=4):
        self._keep = keep
        self._free = []
        self._lock = threading.Lock()

    def get(self, size):
        """A buffer of at least ``size`` bytes (not zeroed when reused)."""
        with self._lock:
            for i, buf in enumerate(self._free):
                if len(buf) >= size:
                    return self._free.pop(i)
        return mmap.mmap(-1, max(-(-size // _GRAIN) * _GRAIN, PAGE))

    def put(self, buf):
        """Give a buffer back; views of it must not be used afterwards."""
        with self._lock:
            if len(self._free) < self._keep:
                self._free.append(buf)
