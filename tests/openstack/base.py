"""Tests against the sandbox's mini-cloud, through the real ``openstack`` CLI.

``tox -e openstack`` runs ``fedex-sandbox up --openstack`` once before the
tests (a quick no-op when the cloud is up); a test never skips for lack of
it: it fails.
"""

import os
import time

import rados
import testtools

from lsrp.sandbox import opts as sandbox_opts
from lsrp.sandbox import sandbox as sandbox_mod
from lsrp.sandbox.services import guest_reader

SANDBOX_DIR = os.environ.get(sandbox_opts.DIR_ENV, sandbox_opts.DEFAULT_DIR)


def sandbox():
    return sandbox_mod.Sandbox(SANDBOX_DIR)


class CloudTestCase(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sandbox = sandbox()
        cls.cloud = cls.sandbox.cloud()
        if not os.path.exists(cls.cloud.clouds_yaml):
            raise AssertionError('no mini-cloud in %s: run fedex-sandbox up '
                                 '--openstack' % SANDBOX_DIR)
        cls.clusters = {}
        for s in cls.sandbox.sites:
            c = rados.Rados(conffile=s.conf)
            c.connect(timeout=30)
            cls.clusters[s.name] = c

    @classmethod
    def tearDownClass(cls):
        for c in cls.clusters.values():
            c.shutdown()
        super().tearDownClass()

    def os(self, *args, cloud='fedex-admin', timeout=900):
        return self.cloud.openstack(*args, cloud=cloud, timeout=timeout)

    def reader(self, site, pool, image):
        ioctx = self.clusters[site].open_ioctx(pool)
        self.addCleanup(ioctx.close)
        return guest_reader.GuestReader(ioctx, image)

    def wait_for(self, what, fn, timeout=600, interval=2):
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            last = fn()
            if last:
                return last
            time.sleep(interval)
        self.fail('%s: not within %d s (last: %r)' % (what, timeout, last))
