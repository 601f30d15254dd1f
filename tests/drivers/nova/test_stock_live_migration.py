"""Nova's own libvirt live-migration unit tests, run on FedexLibvirtDriver.

``nova.virt.libvirt.driver.LibvirtDriver`` is replaced by the subclass
before Nova's test modules are imported, so every driver those tests build
(``libvirt_driver.LibvirtDriver(...)``) and every mock they put on the class
is FedexLibvirtDriver's. ``[fedex] site`` is unset, as on a compute that is
not part of a FedEx deployment: the stock behaviour must be untouched.
Only the live-migration tests of the test modules run (load_tests below).
"""

import re

from nova.virt.libvirt import driver as libvirt_driver

from nova_fedex.virt.libvirt import driver as fedex_driver

libvirt_driver.LibvirtDriver = fedex_driver.FedexLibvirtDriver

from nova.tests.unit.virt.libvirt import test_driver  # noqa: E402
from nova.tests.unit.virt.libvirt import test_migration  # noqa: E402

LIVE_MIGRATION = re.compile(r'live_migrat|migrate_data|migration_flags|'
                            r'_migrate_|migration_operation|'
                            r'migration_monitor|update_.*_xml')


class LibvirtConnTestCase(test_driver.LibvirtConnTestCase):
    pass


class LibvirtDriverTestCase(test_driver.LibvirtDriverTestCase):
    pass


class UtilityMigrationTestCase(test_migration.UtilityMigrationTestCase):
    pass


class MigrationMonitorTestCase(test_migration.MigrationMonitorTestCase):
    pass


def load_tests(loader, standard_tests, pattern):
    import unittest

    suite = unittest.TestSuite()
    for case in (LibvirtConnTestCase, LibvirtDriverTestCase):
        for name in loader.getTestCaseNames(case):
            if LIVE_MIGRATION.search(name):
                suite.addTest(case(name))
    for case in (UtilityMigrationTestCase, MigrationMonitorTestCase,
                 TestTheSubclassIsUnderTest):
        suite.addTests(loader.loadTestsFromTestCase(case))
    return suite


class TestTheSubclassIsUnderTest(test_driver.test.NoDBTestCase):

    def test_drivers_built_by_nova_tests_are_fedex_drivers(self):
        self.useFixture(test_driver.nova_fixtures.LibvirtFixture())
        drvr = libvirt_driver.LibvirtDriver(test_driver.fake.FakeVirtAPI(),
                                            False)
        self.assertIsInstance(drvr, fedex_driver.FedexLibvirtDriver)
