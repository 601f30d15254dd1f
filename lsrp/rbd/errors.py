"""Map librados/librbd errors onto the project's exception hierarchy."""

import contextlib

import rados
import rbd

from lsrp import exception


def target_spec(pool=None, image=None, snapshot=None, group=None):
    """``pool/image@snap`` (or ``pool/group@snap``), as the rbd CLI writes it."""
    spec = pool or ''
    name = image or group
    if name:
        spec = '%s/%s' % (spec, name) if spec else name
    if snapshot:
        spec = '%s@%s' % (spec, snapshot)
    return spec or '(cluster)'


_NOT_FOUND = (rados.ObjectNotFound, rbd.ImageNotFound)
_EXISTS = (rados.ObjectExists, rbd.ImageExists)
_PERMISSION = (rados.PermissionError, rbd.PermissionError)
_NO_SPACE = (rados.NoSpace, rbd.NoSpace, rbd.DiskQuotaExceeded)
_BUSY = (rbd.ImageBusy, rbd.ImageHasSnapshots)


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
    except (rados.Error, rbd.Error) as e:
        kw = dict(site=site, operation=operation, pool=pool,
                  target=target_spec(pool, image, snapshot, group),
                  reason=str(e), cause=e)
        if isinstance(e, _NOT_FOUND):
            cls = missing
        elif isinstance(e, _EXISTS):
            cls = exists
        elif isinstance(e, _PERMISSION):
            cls = exception.CephPermissionDenied
        elif isinstance(e, _NO_SPACE):
            cls = exception.CephNoSpace
        elif isinstance(e, _BUSY):
            cls = exception.ImageBusy
        else:
            cls = exception.CephError
        raise cls(**kw) from e
