"""Functional tests run against the real two-site sandbox.

The sandbox is started once per run (``tox -e functional`` runs ``fedex-sandbox
up``; ``up`` here is then a fast no-op). If it cannot start, tests fail with
the reason: they never skip for lack of Ceph.
"""

import fcntl
import json
import os
import random
import subprocess
import time
import uuid

import fixtures
import testtools

from fedex_sandbox import opts as sandbox_opts
from fedex_sandbox import sandbox as sandbox_mod
from lsrp import exception
from lsrp.rbd import Cluster
from lsrp.server import records

# The sandbox's ports the tests take (offsets from its base port), each
# range one test module's, since two stestr workers run side by side:
#   +600..+899  the manager tests' deployments (two terminals each)
#   +900..+905  test_catchup_crash's terminals
#   +910..+911  test_peer_errors
#   +915..+919  test_faults' private RabbitMQ
#   +920..+959  a manager test's second terminal at a site
#   +960..+999  the manager benchmark
#   +1000..     the sandbox life-cycle tests' throw-away sandboxes
SANDBOX_DIR = os.environ.get(sandbox_opts.DIR_ENV, sandbox_opts.DEFAULT_DIR)
BASE_PORT = sandbox_mod.Sandbox.remembered_base_port(SANDBOX_DIR)
_up_done = False


def reserve_slot(test, name, count):
    """A slot number < ``count`` no other running test holds, until cleanup.

    Two stestr workers pick their ports at the same time: a lock file per
    slot (held by this process until the test ends) keeps them apart,
    where a random pick alone collides now and then.
    """
    locks = os.path.join(SANDBOX_DIR, 'test-ports')
    os.makedirs(locks, exist_ok=True)
    for slot in random.sample(range(count), count):
        fd = os.open(os.path.join(locks, '%s-%d.lock' % (name, slot)),
                     os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        test.addCleanup(os.close, fd)
        return slot
    raise AssertionError('all %d %s port slots are taken' % (count, name))


def sandbox():
    return sandbox_mod.Sandbox(SANDBOX_DIR)


def ensure_sandbox():
    global _up_done
    if not _up_done:
        sandbox().up()
        _up_done = True
    return sandbox()


class FunctionalTestCase(testtools.TestCase):
    """Connections to both sites, unique names, cleanup of what a test made."""

    # Set by a test that kill -9s a Ceph client: see _remove_image.
    killed_clients = False

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.sandbox = ensure_sandbox()
        cls.sites = {}
        for s in cls.sandbox.sites:
            cluster = Cluster(s.conf, s.keyring, site=s.name)
            cluster.connect()
            cls.sites[s.name] = cluster

    @classmethod
    def tearDownClass(cls):
        for cluster in cls.sites.values():
            cluster.close()
        super().tearDownClass()

    def setUp(self):
        super().setUp()
        # What the in-process terminals log (refusals, rollbacks the tests
        # provoke) is kept with the test and shown only if it fails.
        self.useFixture(fixtures.FakeLogger())

    def assert_one_error_line(self, result, code, *expected):
        """Exit ``code``, one stderr line naming every ``expected``: it."""
        self.assertEqual(code, result.returncode, result.stderr)
        self.assertNotIn('Traceback', result.stderr)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(1, len(lines), result.stderr)
        for text in expected:
            self.assertIn(text, lines[0])
        return lines[0]

    def name(self, prefix='img'):
        return '%s-%s' % (prefix, uuid.uuid4().hex[:10])

    def pool(self, site='site-a', pool='vms'):
        p = self.sites[site].pool(pool)
        self.addCleanup(p.close)
        return p

    def new_image(self, size, site='site-a', pool='vms', **kw):
        """Create an image removed (with its snapshots) after the test."""
        p = self.pool(site, pool)
        name = self.name()
        p.create_image(name, size, **kw)
        self.addCleanup(self._remove_image, site, pool, name)
        return p, name

    def _remove_image(self, site, pool, name):
        with self.sites[site].pool(pool) as p:
            if not p.image_exists(name):
                return
            # Records of a final state (lsrp.server.records) are clones of
            # its snapshots: they go first.
            records.remove(p, name, prefixes=('',))
            with p.open_image(name) as img:
                for snap in reversed(img.list_snapshots()):
                    if snap.namespace != 'user':
                        continue
                    if snap.protected:
                        img.unprotect_snapshot(snap.name)
                    img.remove_snapshot(snap.name)
            # A killed client's watch on the image stays until the OSD's
            # watch timeout (osd_client_watch_timeout, 30 s): busy till then.
            deadline = time.monotonic() + 45
            while True:
                try:
                    p.remove_image(name)
                    return
                except exception.ImageBusy as e:
                    if time.monotonic() <= deadline:
                        time.sleep(1)
                        continue
                    if not self.killed_clients:
                        raise
                    # Now and then (1 CI run in ~10) a kill -9'd client's
                    # watch outlives the timeout, and blocklisting its
                    # address does not end it either (Ceph 16): the image
                    # is left to the sandbox's destroy, and named.
                    print('cleanup: %s left: %s (a killed client still '
                          'watches it)' % (name, e))
                    return

    # --- the real rbd CLI, a client we did not write ---------------------

    def rbd_cli(self, site, *args, binary=False):
        s = self.sandbox.site(site)
        out = subprocess.run(['rbd', '-c', s.conf, '--keyring', s.keyring]
                             + list(args), capture_output=True, check=True)
        return out.stdout if binary else out.stdout.decode()

    def cli_sha256(self, site, spec):
        """``rbd export <spec> - | sha256sum``, with the real programs."""
        return self.sandbox.site(site).export_sha256(spec)

    def cli_diff(self, site, spec, from_snap=None):
        args = ['diff', '--format', 'json', spec]
        if from_snap:
            args[1:1] = ['--from-snap', from_snap]
        return json.loads(self.rbd_cli(site, *args))
