"""The mapping of librados/librbd errors onto the project's exceptions."""

import rados
import rbd
import testtools

from lsrp import exception
from lsrp.rbd import errors


class TestTranslate(testtools.TestCase):

    def _raise(self, error, **kw):
        def go():
            with errors.translate('site-a', 'open image', pool='vms',
                                  image='disk0', **kw):
                raise error
        return self.assertRaises(exception.FedexException, go)

    def test_missing_image_names_site_pool_image(self):
        e = self._raise(rbd.ImageNotFound('gone', errno=2))
        self.assertIsInstance(e, exception.ImageNotFound)
        self.assertEqual('site-a: image vms/disk0 does not exist', str(e))
        self.assertIsInstance(e.cause, rbd.ImageNotFound)

    def test_missing_snapshot(self):
        e = self._raise(rbd.ImageNotFound('gone', errno=2), snapshot='base',
                        missing=exception.SnapshotNotFound)
        self.assertIsInstance(e, exception.SnapshotNotFound)
        self.assertIn('vms/disk0@base', str(e))

    def test_missing_pool(self):
        e = self._raise(rados.ObjectNotFound('no pool', errno=2),
                        missing=exception.PoolNotFound)
        self.assertIsInstance(e, exception.PoolNotFound)
        self.assertIn('pool vms', str(e))

    def test_quota_is_no_space(self):
        e = self._raise(rbd.DiskQuotaExceeded('quota', errno=122))
        self.assertIsInstance(e, exception.CephNoSpace)
        self.assertIn('vms/disk0', str(e))

    def test_permission(self):
        e = self._raise(rbd.PermissionError('denied', errno=1))
        self.assertIsInstance(e, exception.CephPermissionDenied)
        self.assertIn('cephx caps', str(e))

    def test_other_errors_keep_reason(self):
        e = self._raise(rbd.InvalidArgument('bad', errno=22))
        self.assertIs(type(e), exception.CephError)
        self.assertIn('bad', str(e))

    def test_target_spec(self):
        self.assertEqual('vms/g1@s', errors.target_spec('vms', group='g1',
                                                        snapshot='s'))
        self.assertEqual('(cluster)', errors.target_spec())
