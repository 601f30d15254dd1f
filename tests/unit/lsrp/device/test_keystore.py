import os
import stat

import fixtures
import testtools

from lsrp.device import keystore
from lsrp import exception


class TestFileKeyStore(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.dir = os.path.join(self.useFixture(fixtures.TempDir()).path, 'k')
        self.store = keystore.FileKeyStore(self.dir)

    def test_create_get_delete(self):
        key = self.store.create('ship-1')
        self.assertEqual(32, len(key))
        self.assertEqual(key, self.store.get('ship-1'))
        mode = os.stat(os.path.join(self.dir, 'ship-1.key')).st_mode
        self.assertEqual(0o600, stat.S_IMODE(mode))
        self.assertRaises(exception.ShipmentError, self.store.create, 'ship-1')
        self.store.delete('ship-1')
        e = self.assertRaises(exception.KeyMissing, self.store.get, 'ship-1')
        self.assertIn('never travels', str(e))

    def test_bad_ids_never_reach_the_filesystem(self):
        self.assertRaises(exception.ShipmentError, self.store.get, '../x')
