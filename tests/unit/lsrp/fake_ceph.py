"""Fake rados and rbd modules for unit tests, as Cinder's RBD tests use.

Debian's bindings are not on PyPI: unit tests never need them. The fakes
have the bindings' error hierarchy (errors are caught by class) and the
constants lsrp.rbd reads; their handles (Rados, RBD, Image, Group) are
mocks. :class:`CephBindings` puts them in :mod:`lsrp.rbd.bindings`.
"""

import types
from unittest import mock

import fixtures


class _Error(Exception):
    """Like the bindings' errors: a message and an errno."""

    def __init__(self, message, errno=None):
        super().__init__(message)
        self.errno = errno


def _module(name, errors, **constants):
    """A module: Error, OSError(Error), each of ``errors``(OSError)."""
    error = type('Error', (_Error,), {'__module__': name})
    os_error = type('OSError', (error,), {'__module__': name})
    module = types.SimpleNamespace(__name__=name, Error=error,
                                   OSError=os_error, **constants)
    for error_name in errors:
        setattr(module, error_name,
                type(error_name, (os_error,), {'__module__': name}))
    return module


def fake_rados():
    rados = _module('rados', ('ObjectNotFound', 'ObjectExists',
                              'PermissionError', 'NoSpace', 'TimedOut'))
    rados.Rados = mock.MagicMock(name='rados.Rados')
    return rados


def fake_rbd():
    # librbd.h's values.
    rbd = _module(
        'rbd', ('ImageNotFound', 'ImageExists', 'PermissionError',
                'NoSpace', 'DiskQuotaExceeded', 'ImageBusy',
                'ImageHasSnapshots', 'InvalidArgument'),
        RBD_FEATURE_LAYERING=1, RBD_FEATURE_STRIPINGV2=2,
        RBD_FEATURE_EXCLUSIVE_LOCK=4, RBD_FEATURE_OBJECT_MAP=8,
        RBD_FEATURE_FAST_DIFF=16, RBD_FEATURE_DEEP_FLATTEN=32,
        RBD_FEATURE_JOURNALING=64, RBD_FEATURE_DATA_POOL=128,
        RBD_SNAP_NAMESPACE_TYPE_USER=0, RBD_SNAP_NAMESPACE_TYPE_GROUP=1,
        RBD_SNAP_NAMESPACE_TYPE_TRASH=2, RBD_SNAP_NAMESPACE_TYPE_MIRROR=3,
        RBD_SNAP_CREATE_SKIP_QUIESCE=1, RBD_GROUP_SNAP_STATE_INCOMPLETE=0,
        RBD_GROUP_SNAP_STATE_COMPLETE=1)
    for handle in ('RBD', 'Image', 'Group'):
        setattr(rbd, handle, mock.MagicMock(name='rbd.' + handle))
    return rbd


class CephBindings(fixtures.Fixture):
    """Fake rados and rbd in lsrp.rbd.bindings (``None``: absent)."""

    def __init__(self, rados=True, rbd=True):
        super().__init__()
        self.rados = fake_rados() if rados else None
        self.rbd = fake_rbd() if rbd else None

    def _setUp(self):
        self.useFixture(fixtures.MonkeyPatch(
            'lsrp.rbd.bindings.rados', self.rados))
        self.useFixture(fixtures.MonkeyPatch(
            'lsrp.rbd.bindings.rbd', self.rbd))
