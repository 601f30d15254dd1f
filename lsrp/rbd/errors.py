"""Map librados/librbd errors onto the project's exception hierarchy."""

import contextlib

from lsrp import exception
from lsrp.rbd import bindings


def target_spec(pool=None, image=None, snapshot=None, group=None):
    """``pool/image@snap`` (or ``pool/group@snap``), as the rbd CLI writes it."""
    spec = pool or ''
    name = image or group
    if name:
        spec = '%s/%s' % (spec, name) if spec else name
    if snapshot:
        spec = '%s@%s' % (spec, snapshot)
    return spec or '(cluster)'


def ceph_errors():
    """The classes of rados/rbd errors; none without the bindings.

    Looked up when an error is raised, not at import: :mod:`lsrp.rbd` is
    imported without the bindings (then nothing raises their errors and an
    except clause must still evaluate), and tests replace them.
    """
    return tuple(m.Error for m in (bindings.rados, bindings.rbd)
                 if m is not None)


def _classify(e, missing, exists):
    """The FedexException class for the rados/rbd error ``e``."""
    rados, rbd = bindings.rados, bindings.rbd
    kinds = (
        ((rados.ObjectNotFound, rbd.ImageNotFound), missing),
        ((rados.ObjectExists, rbd.ImageExists), exists),
        ((rados.PermissionError, rbd.PermissionError),
         exception.CephPermissionDenied),
        ((rados.NoSpace, rbd.NoSpace, rbd.DiskQuotaExceeded),
         exception.CephNoSpace),
        ((rbd.ImageBusy, rbd.ImageHasSnapshots), exception.ImageBusy),
    )
    return next((cls for errors, cls in kinds if isinstance(e, errors)),
                exception.CephError)


@contextlib.contextmanager
def translate(site, operation, pool=None, image=None, snapshot=None,
              group=None, missing=exception.ImageNotFound,
              exists=exception.ImageExists):
    """Turn a rados/rbd error raised in the block into a FedexException.

    ``missing`` and ``exists`` say which thing an ENOENT or EEXIST is about,
    since librbd says "image not found" for a missing snapshot too.
    """
    try:
        yield
    except ceph_errors() as e:
        raise _classify(e, missing, exists)(
            site=site, operation=operation, pool=pool,
            target=target_spec(pool, image, snapshot, group),
            reason=str(e), cause=e) from e
