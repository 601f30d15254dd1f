"""The FedEx cutover of a real Nova server on the mini-cloud: its test case.

``fedex-sandbox up --openstack`` (started once per run) gives two Ceph
sites, Keystone, Nova (two computes per site running nova_fedex's
FedexLibvirtDriver), Glance and Cinder. :class:`CutoverTestCase` boots a
tiny QEMU guest through the real ``openstack`` client on a site-A host
with an rbd root disk (it writes a counter to its disk every 100 ms) and
runs this test's own fedex-api, conductor and terminals; the OpenStack
tests built on it (the wave, the volume's cutover, Nova's lock), the
scenarios and the soak share it. :class:`WanChecks` are the checks of
what crossed the emulated WAN and how (the demo's test; the cutover of a
server alone with every check of the pause, by hand:
``tests/scenarios/test_nova_cutover``).
"""

import json
import os
import socket
import subprocess
import tempfile
import threading
import time
from xml.etree import ElementTree as etree

from fedex_sandbox.services import cloud as cloud_mod
from fedex_sandbox.services import guest as guest_mod
from fedex_sandbox.services import guest_reader
from tests.functional.manager import base
from tests.openstack import api_fixtures as fx

SITE_A_HOST = 'site-a-h1'
SITE_B_HOST = 'site-b-h1'

_cloud = None


def cloud(sandbox):
    """The mini-cloud, brought up once per test process."""
    global _cloud
    if _cloud is None:
        c = cloud_mod.Cloud(sandbox)
        # tox's commands_pre brought it up: only a cloud that is not fully
        # running is brought up again (a second up re-checks everything).
        if not c.exists() or any(svc['state'] != 'running'
                                 for svc in c.status()):
            sandbox.up(openstack=True)
        _cloud = c
    return _cloud


class CutoverTestCase(base.ManagerTestCase):
    """The mini-cloud, this test's fedex-api and conductor, and helpers."""

    # After one rollback the cutover waits for the operator: the rollback
    # test (test_cutover_volume) sees catch-up go on without a second
    # cutover starting.
    CONDUCTOR_OPTIONS = {
        'test_refusals_then_rollback': {'cutover_max_attempts': 1}}

    def setUp(self):
        super().setUp()
        self.cloud = cloud(self.sandbox)
        admin = self.cloud.credentials()['fedex-admin']
        self.auth_url = admin['auth_url']
        nova_auth = dict(admin, auth_type='password',
                         region_name='RegionOne')
        self.dep.compute_driver = 'nova'
        self.dep.nova = nova_auth
        # Cinder marks and moves attached volumes (conductor and fedex-api).
        self.dep.cinder = nova_auth
        manager = self.dep.manager_conf()
        extra = {k: manager[k] for k in ('DEFAULT', 'shipment_keys',
                                         'database', 'jobboard', 'cinder')}
        extra['api'] = {'post_jobs': True}
        # fedex-api takes Nova's report of a rollback: the same limit.
        extra['conductor'] = dict(self.CONDUCTOR_OPTIONS.get(
            self._testMethodName, {}))
        # The computes know fedex-api from the catalog (and keep the token
        # that told them): this test's fedex-api, on this test's database,
        # takes the cloud's port; the cloud's own comes back afterwards.
        cloud_api = [e.service for e in self.cloud.extra_services()
                     if e.service.name == 'fedex-api'][0]
        cloud_api.stop()
        # Not wait_ready(): it runs as python (its db sync) before it
        # becomes uwsgi, which Service's check by name calls an exit.
        self.addCleanup(self._wait_port, self.cloud.port('fedex-api'))
        self.addCleanup(cloud_api.start)
        self.api = fx.FedexAPIServer(self.sandbox, self.auth_url,
                                     name='fedex-api-cutover', extra=extra)
        self.api.port = self.cloud.port('fedex-api')
        self.api.url = self.cloud.url('fedex-api')
        self.api.sections = self._api_sections
        self.api.start()
        self.addCleanup(self.api.stop)
        conductor_options = self.CONDUCTOR_OPTIONS.get(
            self._testMethodName, {})
        if conductor_options:
            plain_conf = self.dep.manager_conf

            def manager_conf(name=None):
                sections = plain_conf(name)
                sections['conductor'].update(conductor_options)
                return sections
            self.dep.manager_conf = manager_conf
        self.dep.start_conductor('conductor-nova')
        self.start_terminals()

    def _api_sections(self):
        # fedex-api's own service user is the cloud's 'fedex' user.
        svc = self.cloud.credentials()['fedex-service']
        return {
            'DEFAULT': {'log_file': os.path.join(self.api.dir, 'api.log')},
            'manager': {'state_path': self.api.dir},
            'api': {'auth_strategy': 'keystone', 'post_jobs': False},
            'keystone_authtoken': dict(
                svc, www_authenticate_uri=self.auth_url,
                auth_type='password')}

    def _wait_port(self, port, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                socket.create_connection(('127.0.0.1', port), 1).close()
                return
            except OSError:
                time.sleep(0.5)
        self.fail('nothing listens on port %d after %d s' % (port, timeout))

    def openstack(self, *args, timeout=600, gone_ok=False):
        """The real ``openstack`` client as the cloud's admin; its stdout.

        ``gone_ok``: a server that does not exist (any more) is no failure
        (clean-ups of servers a test may have deleted itself).
        """
        proc = subprocess.run(
            [os.path.join(self.cloud.venv, 'bin', 'openstack')] + list(args),
            capture_output=True, text=True, timeout=timeout,
            env=dict(os.environ, **self.cloud.client_env()))
        if gone_ok and proc.returncode and 'No Server found' in proc.stderr:
            return proc.stdout
        self.assertEqual(0, proc.returncode, 'openstack %s: %s%s' % (
            ' '.join(args), proc.stdout[-2000:], proc.stderr[-3000:]))
        return proc.stdout

    # --- helpers ----------------------------------------------------------

    def guest_image(self, dirty=0, tick_ms=None):
        """A Glance image of the guest built from this tree: its name.

        Made once per version of the guest's init: it dirties ``dirty``
        MiB/s of memory and ticks every ``tick_ms`` (the default image,
        ``guest``, neither dirties nor has a period of its own).
        """
        digest = guest_mod.init_digest()
        files = guest_mod.build(os.path.join(tempfile.gettempdir(),
                                             'fedex-guest-%s' % digest))
        name = 'guest-%s-dirty%d' % (digest, dirty)
        if tick_ms:
            name += '-tick%d' % tick_ms
        images = {i['Name']: i['ID'] for i in json.loads(self.openstack(
            'image', 'list', '-f', 'json'))}
        if name in images:
            return name
        ramdisk = 'guest-ramdisk-%s' % digest
        if ramdisk not in images:
            images[ramdisk] = json.loads(self.openstack(
                'image', 'create', '--disk-format', 'ari',
                '--container-format', 'ari', '--public', '--file',
                files['initrd'], '-f', 'json', ramdisk))['id']
        self.openstack(
            'image', 'create', '--disk-format', 'raw', '--container-format',
            'bare', '--public', '--file', files['disk'],
            '--property', 'kernel_id=%s' % images['guest-kernel'],
            '--property', 'ramdisk_id=%s' % images[ramdisk],
            '--property', 'os_command_line=%s' % guest_mod.cmdline(
                dirty, tick_ms), name)
        return name

    def boot(self, name, image='guest'):
        server = self.cloud.openstack(
            'server', 'create', '--flavor', 'm1.mini', '--image', image,
            '--nic', 'none', '--availability-zone',
            'site-a:%s' % SITE_A_HOST, '--wait', name, timeout=600)
        self.addCleanup(self.openstack, 'server', 'delete', '--wait',
                        server['id'], gone_ok=True)
        return server

    def show(self, server_id):
        return self.cloud.openstack('server', 'show', server_id)

    def reader(self, site, image):
        return guest_reader.GuestReader(self.pool(site, 'vms').ioctx, image)

    def host(self, name):
        return [h for h in self.cloud.hosts if h.name == name][0]

    def migrate(self, server_id, timeout=1500):
        return self.openstack(
            'server', 'migrate', '--live-migration', '--fedex', '--host',
            SITE_B_HOST, '--cutover', 'automatic', '--wait', server_id,
            timeout=timeout)

    def assert_disk_at_b(self, server_id):
        xml = self.host(SITE_B_HOST).virsh('dumpxml', server_id)
        doc = etree.fromstring(xml.encode())
        state = self.cloud.load_state()
        b_conf = open(self.sandbox.site('site-b').conf).read()
        disks = [d for d in doc.findall('./devices/disk')
                 if d.find('source') is not None]
        self.assertTrue(disks)
        for d in disks:
            source = d.find('source')
            self.assertEqual('rbd', source.get('protocol'))
            self.assertEqual('vms/%s_disk' % server_id, source.get('name'))
            for h in source.findall('host'):
                self.assertIn('%s:%s' % (h.get('name'), h.get('port')),
                              b_conf, 'monitor of cluster A at site B')
            self.assertEqual(state['secrets']['site-b'],
                             d.find('auth/secret').get('uuid'))

    def cutover_with_dead_destination(self, m):
        """Approve the cutover; kill the destination terminal as it starts.

        The terminal dies once the source compute has opened its
        final-delta connections (nova_fedex reports 'migrating' just before
        libvirt starts the memory copy): the copy completes, the final delta
        cannot, and the paused guest must come back to A (never stranded).
        """
        def kill_terminal_when_migrating():
            def migrating():
                return any('nova: migrating' in e for e in self.events(m))
            self.dep.wait(migrating, 600, 'the cutover to start',
                          interval=0.05)
            self.dep.processes[self.sandbox.terminal('site-b')[0]].kill9()
        killer = threading.Thread(target=kill_terminal_when_migrating,
                                  daemon=True)
        killer.start()
        self.openstack('fedex', 'migration', 'cutover', m['id'])
        killer.join(700)
        self.dep.wait(lambda: any('nova: rolled_back' in e or
                                  'nova: stranded' in e
                                  for e in self.events(m)), 600,
                      'the end of the cutover')
        self.assertFalse(any('nova: stranded' in e for e in self.events(m)),
                         self.events(m))


class WanChecks(object):
    """What crossed the emulated WAN in a cutover, and how."""

    def assert_crossed_the_wan(self, per_path):
        """Every path between the sites went through the emulated WAN.

        The mini-cloud brings the link up (fedex_sandbox/wan.py): QEMU's
        memory stream and libvirt's control to site B's host face, the
        final delta and the catch-up to the terminals' faces. The guest
        (256 MB, a busybox init, its kernel and page cache) is far more
        than 10 MB of pages that are not zero.
        """
        print('over the WAN: %s' % per_path)
        self.assertGreater(per_path['memory']['sent'], 10 << 20, per_path)
        for path in ('control', 'final-delta', 'catch-up'):
            self.assertGreater(per_path[path]['sent'], 0, per_path)
            self.assertGreater(per_path[path]['received'], 0, per_path)

    def assert_encrypted_on_the_wan(self, streams):
        """The memory stream and libvirt's control crossed the link in TLS.

        Each direction of each connection to a host face is TLS records
        from its first byte (a handshake first; fedex_sandbox.wan.Tap keeps
        the first 64 KiB): never QEMU's migration stream (magic 'QEVM') or
        libvirt's RPC in the clear.
        """
        print('on the wire: %s' % [
            (s['path'], s['to_server'], s['bytes'], s['tls_records'])
            for s in streams])
        for path in ('memory', 'control'):
            self.assertTrue(any(s['path'] == path and s['to_server'] and
                                s['bytes'] for s in streams), streams)
        for s in streams:
            if not s['bytes']:
                continue
            self.assertTrue(s['head'].startswith('1603'), s)
            self.assertFalse(s['qemu_magic'], s)
            # Whole records but for the last one (at most 16 KiB + 256).
            self.assertLess(s['bytes'] - s['tls_covered'], 16 * 1024 + 261,
                            s)
