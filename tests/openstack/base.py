"""Tests against the sandbox's mini-cloud, through the real ``openstack`` CLI.

``tox -e openstack`` runs ``fedex-sandbox up --openstack`` once before the
tests (a quick no-op when the cloud is up); a test never skips for lack of
it: it fails.
"""

import os
import time

import rados
import testtools

from fedex_sandbox import opts as sandbox_opts
from fedex_sandbox import processes
from fedex_sandbox import sandbox as sandbox_mod
from fedex_sandbox.services import guest_reader

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

    def guest_state(self, server_id):
        """What the guest's host says about it, for a guest that stopped.

        libvirt's state and its reason, QEMU's own run state, the last
        migration job and the tail of the guest's console (its init prints a
        line every 500 ticks; a guest blocked in I/O prints the kernel's
        hung-task warnings after 120 s, a stopped vCPU prints nothing).
        """
        info = self.os('server', 'show', server_id)
        host = [h for h in self.cloud.hosts
                if h.name == info['OS-EXT-SRV-ATTR:host']][0]
        name = info['OS-EXT-SRV-ATTR:instance_name']
        out = ['guest %s (%s) on %s:' % (server_id, name, host.name)]
        for args in (('domstate', name, '--reason'),
                     ('qemu-monitor-command', name, '--hmp', 'info status'),
                     ('domjobinfo', name, '--completed')):
            out.append('virsh %s: %s' % (' '.join(args[:1] + args[2:]),
                                         host.virsh(*args, check=False)
                                         .strip()))
        console = os.path.join(host.dir, 'instances', server_id,
                               'console.log')
        out.append(processes.log_tail([console], lines=15))
        return '\n'.join(out)

    def assert_counting(self, server_id, *readers, ticks=20, timeout=300):
        """Every reader's counter advances; else say what the host sees."""
        try:
            for reader in readers:
                reader.wait_advancing(ticks=ticks, timeout=timeout)
        except AssertionError as e:
            raise AssertionError('%s\n%s' % (e, self.guest_state(server_id)))
