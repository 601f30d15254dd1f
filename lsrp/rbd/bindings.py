"""The Ceph bindings, rados and rbd, when they can be imported.

They are Debian's python3-rados and python3-rbd, not on PyPI
(tools/link_ceph_bindings.py links them into a virtualenv). As in Cinder's
RBD driver, a missing binding is only an error for code that reaches a
cluster: what never does (fedex-api, the OSC plugin, the unit tests)
imports :mod:`lsrp.rbd` without them. Unit tests replace ``rados`` and
``rbd`` here with fakes.
"""

try:
    import rados
except ImportError:
    rados = None
try:
    import rbd
except ImportError:
    rbd = None

from lsrp import exception


def librados():
    """The rados module; :class:`CephBindingsMissing` when absent."""
    if rados is None:
        raise exception.CephBindingsMissing(module='rados',
                                            package='python3-rados')
    return rados


def librbd():
    """The rbd module; :class:`CephBindingsMissing` when absent."""
    if rbd is None:
        raise exception.CephBindingsMissing(module='rbd',
                                            package='python3-rbd')
    return rbd
