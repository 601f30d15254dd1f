"""Read the tiny guest's ticks through librbd, at either site.

The guest (lsrp.sandbox.services.guest) writes ``FEDEXTICK <n> <uptime>``
records to a ring of slots on its disks every ~20 ms. A reader here tells a
test whether the guest is alive (its counter advances), where it stopped,
and the largest gap between consecutive ticks: in the guest's own clock
(from the ring; under-reports a pause, the guest's clock stops with it) and
as seen from outside (polling, the one to trust for a pause).
"""

import time

from lsrp.sandbox.services import guest as guest_mod


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
