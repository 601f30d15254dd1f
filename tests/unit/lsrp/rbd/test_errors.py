"""The mapping of librados/librbd errors onto the project's exceptions."""

import subprocess
import sys
from unittest import mock

import fixtures
import testtools

from lsrp import exception
from lsrp import rbd as lsrp_rbd
from lsrp.rbd import errors
from tests.unit.lsrp import fake_ceph


class TestTranslate(testtools.TestCase):

    def setUp(self):
        super().setUp()
        ceph = self.useFixture(fake_ceph.CephBindings())
        self.rados, self.rbd = ceph.rados, ceph.rbd

    def _raise(self, error, **kw):
        def go():
            with errors.translate('site-a', 'open image', pool='vms',
                                  image='disk0', **kw):
                raise error
        return self.assertRaises(exception.FedexException, go)

    def test_missing_image_names_site_pool_image(self):
        e = self._raise(self.rbd.ImageNotFound('gone', errno=2))
        self.assertIsInstance(e, exception.ImageNotFound)
        self.assertEqual('site-a: image vms/disk0 does not exist', str(e))
        self.assertIsInstance(e.cause, self.rbd.ImageNotFound)

    def test_missing_snapshot(self):
        e = self._raise(self.rbd.ImageNotFound('gone', errno=2),
                        snapshot='base', missing=exception.SnapshotNotFound)
        self.assertIsInstance(e, exception.SnapshotNotFound)
        self.assertIn('vms/disk0@base', str(e))

    def test_missing_pool(self):
        e = self._raise(self.rados.ObjectNotFound('no pool', errno=2),
                        missing=exception.PoolNotFound)
        self.assertIsInstance(e, exception.PoolNotFound)
        self.assertIn('pool vms', str(e))

    def test_quota_is_no_space(self):
        e = self._raise(self.rbd.DiskQuotaExceeded('quota', errno=122))
        self.assertIsInstance(e, exception.CephNoSpace)
        self.assertIn('vms/disk0', str(e))

    def test_permission(self):
        e = self._raise(self.rbd.PermissionError('denied', errno=1))
        self.assertIsInstance(e, exception.CephPermissionDenied)
        self.assertIn('cephx caps', str(e))

    def test_other_errors_keep_reason(self):
        e = self._raise(self.rbd.InvalidArgument('bad', errno=22))
        self.assertIs(type(e), exception.CephError)
        self.assertIn('bad', str(e))

    def test_target_spec(self):
        self.assertEqual('vms/g1@s', errors.target_spec('vms', group='g1',
                                                        snapshot='s'))
        self.assertEqual('(cluster)', errors.target_spec())

    def test_busy(self):
        e = self._raise(self.rbd.ImageHasSnapshots('snaps', errno=39))
        self.assertIsInstance(e, exception.ImageBusy)

    def test_other_exceptions_pass(self):
        def go():
            with errors.translate('site-a', 'open image'):
                raise KeyError('x')
        self.assertRaises(KeyError, go)


class TestWithoutBindings(testtools.TestCase):
    """Without the bindings: nothing translated; connecting says why."""

    def setUp(self):
        super().setUp()
        self.useFixture(fake_ceph.CephBindings(rados=False, rbd=False))

    def test_the_engine_imports(self):
        # In a fresh interpreter where importing them fails, as in a
        # virtualenv without tools/link_ceph_bindings.py.
        code = ("import sys; sys.modules['rados'] = sys.modules['rbd'] = None;"
                " import lsrp.rbd, lsrp.cli, lsrp.server.service;"
                " from lsrp.rbd import bindings;"
                " assert bindings.rados is bindings.rbd is None")
        subprocess.run([sys.executable, '-c', code], check=True)

    def test_errors_pass_untranslated(self):
        def go():
            with errors.translate('site-a', 'open image'):
                raise ValueError('x')
        self.assertRaises(ValueError, go)
        self.assertEqual((), errors.ceph_errors())

    def test_connect_names_the_package(self):
        conf = self.useFixture(fixtures.TempDir()).join('ceph.conf')
        open(conf, 'w').close()
        e = self.assertRaises(exception.CephBindingsMissing,
                              lsrp_rbd.Cluster(conf).connect)
        self.assertIn("Debian's python3-rados", str(e))

    def test_rbd_alone_missing(self):
        self.useFixture(fake_ceph.CephBindings(rbd=False))
        e = self.assertRaises(exception.CephBindingsMissing,
                              lsrp_rbd.feature_bits, ['layering'])
        self.assertIn('python3-rbd', str(e))


class TestWithFakeBindings(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.ceph = self.useFixture(fake_ceph.CephBindings())

    def test_feature_bits(self):
        self.assertEqual(1 + 4 + 8 + 16 + 32,
                         lsrp_rbd.feature_bits(lsrp_rbd.DEFAULT_FEATURES))
        e = self.assertRaises(exception.FedexException,
                              lsrp_rbd.feature_bits, ['wings'])
        self.assertIn('known: data-pool, deep-flatten', str(e))

    def test_connect_failure(self):
        conf = self.useFixture(fixtures.TempDir()).join('ceph.conf')
        open(conf, 'w').close()
        rados = self.ceph.rados
        rados.Rados.return_value.connect.side_effect = rados.TimedOut(
            'timed out', errno=110)
        e = self.assertRaises(exception.ClusterConnectError,
                              lsrp_rbd.Cluster(conf, client='fedex').connect)
        self.assertIn('client.fedex: timed out', str(e))
        rados.Rados.assert_called_once_with(
            conffile=conf, rados_id='fedex', conf=mock.ANY)
