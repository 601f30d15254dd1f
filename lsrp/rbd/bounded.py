"""librados/librbd calls that the operation timeout does not bound.

``rados_osd_op_timeout`` and ``rados_mon_op_timeout`` turn a read, a write
or a monitor command that gets no answer into an error. Closing an image
does not obey them: it waits for its watch to be torn down and its lock to
be released, and an import whose destination OSD had died hung more than
12 minutes in image close. Such calls run here in a thread of their own;
after the operation timeout (and a grace period) the caller gets a CephError
naming the site and the call, and the thread is left to finish or not (it
is a daemon: it does not hold the process up at exit). A cluster with an
abandoned close is *wedged*: its other closes (pools, the connection) would
wait on the same dead daemon, so they are skipped (the process is about to
end anyway).
"""

import threading

from lsrp import exception

# librados gives up on an operation after op_timeout; the call that waits for
# such operations gets this much more before it is abandoned.
GRACE = 5


class Closing(object):
    """``with`` closes it; a failed close never hides what ended the block.

    For the connection, pools and images: their ``close`` is bounded here.
    """

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        try:
            self.close()
        except exception.CephError:
            if exc is None:
                raise
            # The error that made us close says more than this one.

    def close(self):
        raise NotImplementedError()


def close(fn, cluster, operation, target):
    """A close of ``cluster``'s: bounded, skipped once the cluster is wedged."""
    if getattr(cluster, 'wedged', False):
        return None
    try:
        return call(fn, getattr(cluster, 'op_timeout', None),
                    getattr(cluster, 'site', '?'), operation, target)
    except exception.CephError:
        cluster.wedged = True
        raise


def call(fn, timeout, site, operation, target):
    """``fn()``, or CephError when it has not returned within ``timeout``.

    ``timeout`` None or 0: no bound (``fn`` runs here).
    """
    if not timeout:
        return fn()
    done = threading.Event()
    result = {}

    def run():
        try:
            result['value'] = fn()
        except BaseException as e:   # handed to the caller below
            result['error'] = e
        finally:
            done.set()
    threading.Thread(target=run, daemon=True,
                     name='bounded-%s' % operation).start()
    if not done.wait(timeout + GRACE):
        raise exception.CephError(
            site=site, operation=operation, target=target,
            reason='no answer within %d s (the operation timeout, [ceph] '
            'op_timeout); an OSD or monitor may be down: see "ceph -s" at '
            'that site' % timeout)
    if 'error' in result:
        raise result['error']
    return result.get('value')
