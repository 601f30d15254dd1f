"""The guest's tick ring read in a process of its own; JSON on stdout.

``python -m tests.soak.ring --conf C --pool P --image I [--snap S]
[--advance N --timeout T]``: the counters found in the ring, and with
``--advance`` whether the newest counter went on by N within T seconds.
librbd is read only here: the soak's threads run this process (librbd
polled from threads of a busy process crashed it once, see
fedex_sandbox/services/guest_reader.PollerProcess).
"""

import argparse
import json
import sys
import time


def read(conf, pool, image, snap=None, advance=0, timeout=0):
    import rados
    import rbd

    from fedex_sandbox.services import guest as guest_mod
    from fedex_sandbox.services import guest_reader

    cluster = rados.Rados(conffile=conf)
    cluster.connect(timeout=30)
    try:
        ioctx = cluster.open_ioctx(pool)
        try:
            def ring():
                with rbd.Image(ioctx, image, snapshot=snap,
                               read_only=True) as img:
                    return guest_reader.parse_ring(img.read(
                        guest_mod.RING_OFFSET,
                        guest_mod.SLOTS * guest_mod.SLOT))
            first = ring()
            out = {'counters': [t.counter for t in first],
                   'first_last': first[-1].counter if first else None}
            if advance:
                deadline = time.monotonic() + timeout
                last = first
                while time.monotonic() < deadline:
                    last = ring()
                    if last and (not first or last[-1].counter >=
                                 first[-1].counter + advance):
                        break
                    time.sleep(0.2)
                out['counters'] = [t.counter for t in last]
                out['advanced'] = bool(last and (
                    not first or last[-1].counter >=
                    first[-1].counter + advance))
            c = out['counters']
            out['last'] = c[-1] if c else None
            out['contiguous'] = bool(c) and c == list(
                range(c[0], c[-1] + 1))
            return out
        finally:
            ioctx.close()
    finally:
        cluster.shutdown()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--conf', required=True)
    p.add_argument('--pool', required=True)
    p.add_argument('--image', required=True)
    p.add_argument('--snap')
    p.add_argument('--advance', type=int, default=0)
    p.add_argument('--timeout', type=float, default=60)
    a = p.parse_args(argv)
    try:
        out = read(a.conf, a.pool, a.image, a.snap, a.advance, a.timeout)
    except Exception as e:  # noqa: the caller reports what failed
        out = {'error': '%s: %s' % (type(e).__name__, e)}
    sys.stdout.write(json.dumps(out) + '\n')


if __name__ == '__main__':
    main()
