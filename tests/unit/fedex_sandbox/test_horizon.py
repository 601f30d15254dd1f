"""Horizon as a service of the mini-cloud (fedex_sandbox.services.horizon)."""

import os

import fixtures
import testtools

from fedex_sandbox import sandbox as sandbox_mod
from fedex_sandbox.services import cloud as cloud_mod
from fedex_sandbox.services import horizon
from lsrp import exception


class TestHorizonService(testtools.TestCase):

    def setUp(self):
        super().setUp()
        root = self.useFixture(fixtures.TempDir()).path
        self.venv = os.path.join(root, 'venv')
        os.makedirs(os.path.join(self.venv, 'bin'))
        sb = sandbox_mod.Sandbox(os.path.join(root, 'sb'), base_port=41000)
        self.cloud = cloud_mod.Cloud(sb, venv=self.venv)

    def test_without_horizon_in_the_venv_says_how_to_install_it(self):
        e = self.assertRaises(exception.SandboxError,
                              horizon.cloud_services, self.cloud)
        self.assertIn('Horizon is not installed in %s' % self.venv, str(e))
        self.assertIn('tools/install.sh --openstack', str(e))

    def test_served_from_the_cloud_venv_on_port_281_of_the_sandbox(self):
        open(os.path.join(self.venv, 'bin', 'django-admin'), 'w').close()
        [extra] = horizon.cloud_services(self.cloud)
        svc = extra.service
        self.assertEqual('horizon', svc.name)
        self.assertEqual(41281, svc.port)
        self.assertEqual(os.path.join(self.venv, 'bin', 'python'),
                         svc.argv[0])
        argv = ' '.join(svc.argv)
        self.assertIn('fedex_sandbox.horizon.horizon serve', argv)
        self.assertIn('--port 41281', argv)
        self.assertIn('--keystone %s' % self.cloud.keystone_url, argv)
        # Our process is recognised by its directory, as python then uwsgi.
        self.assertIn(svc.marker, argv)
        self.assertTrue(svc.marker.startswith(self.cloud.dir))
        self.assertEqual(('python', 'uwsgi'), svc.comms)
        # Not in the catalog: people open it, services do not call it.
        self.assertIsNone(extra.catalog)


class TestCollectStatic(testtools.TestCase):
    """The static files are linked once per virtualenv they point into."""

    def setUp(self):
        super().setUp()
        from fedex_sandbox.horizon import horizon as server
        self.server = server
        self.dir = self.useFixture(fixtures.TempDir()).path
        os.makedirs(os.path.join(self.dir, 'static'))
        self.run = self.useFixture(fixtures.MockPatch(
            'subprocess.run')).mock
        self.h = server.Horizon(self.dir, 41281, 'http://k/v3')

    def test_linked_once_in_the_same_venv(self):
        self.h.collect_static()
        self.h.collect_static()
        self.assertEqual(1, self.run.call_count)
        self.assertIn('--link', self.run.call_args[0][0])

    def test_linked_again_from_another_venv(self):
        self.h.collect_static()
        self.useFixture(fixtures.MockPatch('sys.prefix', '/elsewhere/venv'))
        self.h.collect_static()
        self.assertEqual(2, self.run.call_count)
        # The old links (into the other venv, which uwsgi would not
        # serve) removed.
        self.assertIn('--clear', self.run.call_args[0][0])

    def test_marker_of_an_older_sandbox_counts_as_another_venv(self):
        open(os.path.join(self.dir, 'static', '.collected'), 'w').close()
        self.h.collect_static()
        self.assertEqual(1, self.run.call_count)
