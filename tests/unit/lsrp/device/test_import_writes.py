"""The importer's asynchronous writes: bounded by the operation timeout."""

import time
from unittest import mock

import testtools

from lsrp.device import importer
from lsrp import exception


class _Held(object):
    def __init__(self, data):
        self.data = data
        self.released = False

    def release(self):
        self.released = True


class _Image(object):
    """An image whose OSD never answers: aio_write never completes."""

    site = 'site-b'
    spec = 'vms/disk0'

    def __init__(self, op_timeout):
        self.pool = mock.Mock()
        self.pool.cluster.op_timeout = op_timeout
        self.pool.cluster.wedged = False
        self.started = []

    def aio_write(self, offset, data, done):
        self.started.append((offset, done))


class TestWritesBounded(testtools.TestCase):

    def setUp(self):
        super().setUp()
        # The grace lsrp.rbd.bounded adds to the timeout: none here.
        patcher = mock.patch('lsrp.rbd.bounded.GRACE', 0)
        patcher.start()
        self.addCleanup(patcher.stop)

    def test_no_answer_is_an_error_naming_site_and_image(self):
        image = _Image(op_timeout=1)
        writes = importer._Writes(image)
        held = _Held(b'x' * 4096)
        writes.write(0, held)
        begin = time.monotonic()
        e = self.assertRaises(exception.CephError, writes.wait, 0)
        self.assertLess(time.monotonic() - begin, 5)
        self.assertIn('site-b', str(e))
        self.assertIn('vms/disk0', str(e))
        self.assertIn('op_timeout', str(e))
        # Its closes would wait on the same dead OSD: skipped from now on.
        self.assertTrue(image.pool.cluster.wedged)
        # settle() does not wait a second time (a second op_timeout), and
        # the buffer librbd may still hold is not handed back for reuse.
        begin = time.monotonic()
        writes.settle()
        self.assertLess(time.monotonic() - begin, 0.5)
        self.assertFalse(held.released)

    def test_writes_that_complete_are_waited_for(self):
        image = _Image(op_timeout=0.2)
        writes = importer._Writes(image)
        held = _Held(b'y' * 4096)
        writes.write(0, held)
        image.started[0][1](None)        # librbd answers
        writes.wait(0)
        writes.settle()
        self.assertTrue(held.released)
        self.assertFalse(image.pool.cluster.wedged)

    def test_a_failed_write_raises_its_error(self):
        image = _Image(op_timeout=0.2)
        writes = importer._Writes(image)
        writes.write(0, _Held(b'z'))
        error = exception.CephNoSpace(site='site-b', operation='write',
                                      target='vms/disk0', reason='full')
        image.started[0][1](error)
        self.assertRaises(exception.CephNoSpace, writes.wait, 0)
