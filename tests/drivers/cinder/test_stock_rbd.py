"""Cinder's own RBD driver tests (test_rbd), run on FedexRBDDriver.

Cinder's test module builds its drivers as ``driver.RBDDriver(...)`` where
``driver`` is ``cinder.volume.drivers.rbd``. That module's ``RBDDriver``
cannot simply be replaced (``super(RBDDriver, self)`` inside it would then
recurse), so the test module's ``driver`` name is pointed at a view of the
real module whose ``RBDDriver`` is the subclass; every other name is read,
set and deleted (Cinder's tests mock names in it) in the real module. The
backends are configured without ``fedex_site``, as for volumes that are not
in a FedEx migration: the stock behaviour must be untouched.
"""

import types

from cinder.tests.unit.volume.drivers import test_rbd
from cinder.volume.drivers import rbd

from cinder_fedex.volume.drivers import fedex_rbd


class _DriverModule(types.ModuleType):
    """cinder.volume.drivers.rbd, with RBDDriver = FedexRBDDriver."""

    _OWN = ('RBDDriver',)

    def __init__(self):
        super().__init__(rbd.__name__)
        super().__setattr__('RBDDriver', fedex_rbd.FedexRBDDriver)

    def __getattr__(self, name):
        return getattr(rbd, name)

    def __setattr__(self, name, value):
        if name in self._OWN or name.startswith('__'):
            super().__setattr__(name, value)
        else:
            setattr(rbd, name, value)

    def __delattr__(self, name):
        if name in self._OWN or name.startswith('__'):
            super().__delattr__(name)
        else:
            delattr(rbd, name)


_VIEW = test_rbd.driver = _DriverModule()

# These tests mock RBDDriver._get_usage_info twice: once through the
# module's name (common_mocks, outside) and once by its dotted path (the
# test's own decorator, inside), and expect the inner mock to win. With the
# view, the outer one would land on the subclass and shadow the inner one.
# They run with the real module's name (their driver is still the subclass,
# built in setUp).
_BOTH_MOCKS_ON_THE_BASE = ('test_update_volume_stats',)


class RBDTestCase(test_rbd.RBDTestCase):

    def setUp(self):
        super().setUp()
        if self._testMethodName.startswith(_BOTH_MOCKS_ON_THE_BASE):
            test_rbd.driver = rbd
            self.addCleanup(setattr, test_rbd, 'driver', _VIEW)
        self.assertIsInstance(self.driver, fedex_rbd.FedexRBDDriver)

    def test_the_subclass_is_under_test(self):
        self.assertIsInstance(self.driver, fedex_rbd.FedexRBDDriver)


class ManagedRBDTestCase(test_rbd.ManagedRBDTestCase):
    pass
