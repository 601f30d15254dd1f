"""Read the tiny guest's ticks through librbd, at either site.

The guest (fedex_sandbox.services.guest) writes ``FEDEXTICK <n> <uptime>``
records to a ring of slots on its disks every 100 ms. A reader here tells a
test whether the guest is alive (its counter advances), where it stopped,
and the largest gap between consecutive ticks: in the guest's own clock
(from the ring; under-reports a pause, the guest's clock stops with it) and
as seen from outside (polling, the one to trust for a pause).
"""

import argparse
import os
import subprocess
import sys
import threading
import time

from fedex_sandbox.services import guest as guest_mod


class Tick(object):
    def __init__(self, counter, uptime):
        self.counter = counter
        self.uptime = uptime

    def __repr__(self):
        return 'Tick(%d, %.2f)' % (self.counter, self.uptime)


def parse_ring(data):
    """Ticks found in the raw bytes of the ring, by counter."""
    ticks = []
    for i in range(len(data) // guest_mod.SLOT):
        rec = data[i * guest_mod.SLOT:(i + 1) * guest_mod.SLOT].split()
        if len(rec) >= 3 and rec[0] == b'FEDEXTICK':
            try:
                ticks.append(Tick(int(rec[1]), float(rec[2])))
            except ValueError:
                continue
    return sorted(ticks, key=lambda t: t.counter)


class GuestReader(object):
    """Ticks of one RBD image (a root disk or a volume) of the guest.

    ``ioctx`` is an open rados ioctx of the image's pool, at either site.
    """

    def __init__(self, ioctx, image_name):
        import rbd
        self._rbd = rbd
        self.ioctx = ioctx
        self.image_name = image_name

    def read_ring(self):
        with self._rbd.Image(self.ioctx, self.image_name,
                             read_only=True) as img:
            return parse_ring(img.read(guest_mod.RING_OFFSET,
                                       guest_mod.SLOTS * guest_mod.SLOT))

    def last(self):
        ticks = self.read_ring()
        return ticks[-1] if ticks else None

    def wait_advancing(self, ticks=10, timeout=120):
        """Wait until the counter advanced by ``ticks``; return last Tick.

        Raises AssertionError naming where it stopped when it does not.
        """
        first = self.last()
        deadline = time.monotonic() + timeout
        last = first
        while time.monotonic() < deadline:
            last = self.last()
            if last and (first is None and last.counter >= ticks
                         or first and last.counter >= first.counter + ticks):
                return last
            time.sleep(0.2)
        raise AssertionError('guest disk %s: counter not advancing by %d in '
                             '%d s (first %r, last %r)' % (
                                 self.image_name, ticks, timeout, first, last))

    @staticmethod
    def largest_guest_gap(ticks):
        """Largest uptime step between consecutive counters, seconds."""
        steps = [b.uptime - a.uptime for a, b in zip(ticks, ticks[1:])
                 if b.counter == a.counter + 1]
        return max(steps) if steps else None


class Poller(object):
    """Poll the newest counter from outside.

    The wall-clock gaps between changes are the pause the guest could not
    see itself.
    """

    def __init__(self, reader, interval=0.005):
        self.reader = reader
        self.interval = interval
        self.changes = []   # (monotonic time, counter)

    def poll_until(self, stop, timeout=120):
        """Poll until stop() is true (checked every round) or timeout."""
        deadline = time.monotonic() + timeout
        with self.reader._rbd.Image(self.reader.ioctx,
                                    self.reader.image_name) as img:
            last = None
            while time.monotonic() < deadline and not stop():
                ticks = parse_ring(img.read(guest_mod.RING_OFFSET,
                                            guest_mod.SLOTS *
                                            guest_mod.SLOT))
                now = time.monotonic()
                if ticks and ticks[-1].counter != last:
                    last = ticks[-1].counter
                    self.changes.append((now, last))
                time.sleep(self.interval)

    def largest_gap(self):
        """(seconds, counter before the gap) of the longest silence."""
        gaps = [(b[0] - a[0], a[1]) for a, b in
                zip(self.changes, self.changes[1:])]
        return max(gaps) if gaps else (None, None)


class PollerProcess(object):
    """A Poller in a process of its own: ``changes`` and ``largest_gap``.

    librbd polled every 5 ms from a thread of a test process that also
    opens images, snapshots and clusters in its main thread crashed that
    process (SIGSEGV, 2026-11-24): here the polling process has its own
    cluster handle and nothing else. Its times are ``time.monotonic()``
    (CLOCK_MONOTONIC, one clock for every process of the host), so they
    compare with the caller's. It waits for the image to appear (B's comes
    with the import). ``stop()`` always; a context manager does it.
    """

    def __init__(self, conf, pool, image, interval=0.005, timeout=3000):
        self.changes = []
        self._proc = subprocess.Popen(
            [sys.executable, '-m', __name__, '--conf', conf, '--pool', pool,
             '--image', image, '--interval', str(interval),
             '--timeout', str(timeout)],
            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
            preexec_fn=_die_with_parent)
        # Reading a pipe is all this thread does: no librbd in it.
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self._proc.stdout:
            when, counter = line.split()
            self.changes.append((float(when), int(counter)))

    def stop(self, timeout=10):
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._reader.join(timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    largest_gap = Poller.largest_gap


def _die_with_parent():
    """In the child: SIGTERM when the process that polls dies (a crash)."""
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGTERM)


def _poll_main(argv=None):
    """The polling process: one line ``<monotonic> <counter>`` per change."""
    import rados
    import signal

    parser = argparse.ArgumentParser(description='poll a guest\'s counter')
    parser.add_argument('--conf', required=True)
    parser.add_argument('--pool', required=True)
    parser.add_argument('--image', required=True)
    parser.add_argument('--interval', type=float, default=0.005)
    parser.add_argument('--timeout', type=float, default=3000)
    args = parser.parse_args(argv)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    cluster = rados.Rados(conffile=args.conf)
    cluster.connect(timeout=30)
    deadline = time.monotonic() + args.timeout
    ioctx = cluster.open_ioctx(args.pool)
    try:
        reader = GuestReader(ioctx, args.image)
        last = None
        while not stopping and time.monotonic() < deadline:
            try:
                img = reader._rbd.Image(ioctx, args.image, read_only=True)
            except reader._rbd.ImageNotFound:
                time.sleep(0.2)     # B's image comes with the import
                continue
            with img:
                while not stopping and time.monotonic() < deadline:
                    try:
                        ticks = parse_ring(img.read(
                            guest_mod.RING_OFFSET,
                            guest_mod.SLOTS * guest_mod.SLOT))
                    except reader._rbd.Error:
                        time.sleep(0.2)     # removed or renamed: reopen
                        break
                    now = time.monotonic()
                    if ticks and ticks[-1].counter != last:
                        last = ticks[-1].counter
                        sys.stdout.write('%.6f %d\n' % (now, last))
                        sys.stdout.flush()
                    time.sleep(args.interval)
    finally:
        ioctx.close()
        cluster.shutdown()


if __name__ == '__main__':
    _poll_main()
    os._exit(0)
