"""TLS between the mini-cloud's compute hosts (services/host_tls.py, cloud.py).

The control connection (libvirtd to libvirtd) and the memory stream (QEMU to
QEMU) cross the sites: each host needs certificates naming every address it
is reached at, and configuration that uses them.
"""

import configparser
import ipaddress
import os
import re

import fixtures
import testtools

from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID

from fedex_sandbox import sandbox as sandbox_mod
from fedex_sandbox.services import cloud as cloud_mod
from fedex_sandbox.services import host_tls
from fedex_sandbox import wan as wan_mod

LIBVIRT_NAMES = ('cacert.pem', 'servercert.pem', 'serverkey.pem',
                 'clientcert.pem', 'clientkey.pem')
QEMU_NAMES = ('ca-cert.pem', 'server-cert.pem', 'server-key.pem',
              'client-cert.pem', 'client-key.pem')


def load(path):
    with open(path, 'rb') as f:
        return x509.load_pem_x509_certificate(f.read())


def ips(cert):
    san = cert.extensions.get_extension_for_class(
        x509.SubjectAlternativeName).value
    return {str(a) for a in san.get_values_for_type(x509.IPAddress)}


def purposes(cert):
    return set(cert.extensions.get_extension_for_class(
        x509.ExtendedKeyUsage).value)


class TestHostCertificates(testtools.TestCase):

    def setUp(self):
        super().setUp()
        root = self.useFixture(fixtures.TempDir()).path
        self.ca_dir = os.path.join(root, 'ca')
        self.dir = os.path.join(root, 'h1')
        host_tls.ensure_ca(self.ca_dir)

    def test_server_cert_names_every_address_and_chains_to_the_ca(self):
        self.assertTrue(host_tls.ensure_host(
            self.ca_dir, self.dir, 'site-a-h1', ['127.78.32.10', '10.77.0.10']))
        ca = load(os.path.join(self.ca_dir, 'ca.pem'))
        server = load(os.path.join(self.dir, 'servercert.pem'))
        client = load(os.path.join(self.dir, 'clientcert.pem'))
        for cert in (server, client):
            cert.verify_directly_issued_by(ca)
        self.assertEqual({'127.78.32.10', '10.77.0.10'}, ips(server))
        self.assertEqual({ExtendedKeyUsageOID.SERVER_AUTH}, purposes(server))
        self.assertEqual({ExtendedKeyUsageOID.CLIENT_AUTH}, purposes(client))

    def test_libvirt_and_qemu_find_the_same_files_keys_private(self):
        host_tls.ensure_host(self.ca_dir, self.dir, 'h1', ['127.0.0.9'])
        for libvirt_name, qemu_name in zip(LIBVIRT_NAMES, QEMU_NAMES):
            with open(os.path.join(self.dir, libvirt_name), 'rb') as a, \
                    open(os.path.join(self.dir, qemu_name), 'rb') as b:
                self.assertEqual(a.read(), b.read())
        for name in ('serverkey.pem', 'clientkey.pem', 'server-key.pem',
                     'client-key.pem'):
            mode = os.stat(os.path.join(self.dir, name)).st_mode & 0o777
            self.assertEqual(0o600, mode, name)

    def test_kept_while_they_fit_issued_again_for_a_new_address(self):
        host_tls.ensure_host(self.ca_dir, self.dir, 'h1', ['127.0.0.9'])
        first = load(os.path.join(self.dir, 'servercert.pem'))
        self.assertFalse(host_tls.ensure_host(self.ca_dir, self.dir, 'h1',
                                              ['127.0.0.9']))
        self.assertTrue(host_tls.ensure_host(self.ca_dir, self.dir, 'h1',
                                             ['127.0.0.9', '10.77.1.10']))
        second = load(os.path.join(self.dir, 'server-cert.pem'))
        self.assertNotEqual(first.serial_number, second.serial_number)
        self.assertEqual({'127.0.0.9', '10.77.1.10'}, ips(second))

    def test_issued_again_under_a_new_ca(self):
        host_tls.ensure_host(self.ca_dir, self.dir, 'h1', ['127.0.0.9'])
        os.unlink(os.path.join(self.ca_dir, 'ca.pem'))
        host_tls.ensure_ca(self.ca_dir)
        self.assertTrue(host_tls.ensure_host(self.ca_dir, self.dir, 'h1',
                                             ['127.0.0.9']))
        client = load(os.path.join(self.dir, 'clientcert.pem'))
        client.verify_directly_issued_by(
            load(os.path.join(self.ca_dir, 'ca.pem')))


def settings(path):
    """key = value lines of a libvirtd.conf or qemu.conf (quotes removed)."""
    out = {}
    with open(path) as f:
        for line in f:
            m = re.match(r'^(\w+)\s*=\s*"?([^"]*)"?$', line.strip())
            if m:
                out[m.group(1)] = m.group(2)
    return out


class TestHostTlsConfiguration(testtools.TestCase):

    def setUp(self):
        super().setUp()
        root = self.useFixture(fixtures.TempDir()).path
        self.sb = sandbox_mod.Sandbox(os.path.join(root, 'sb'),
                                      base_port=41000)
        self.cloud = cloud_mod.Cloud(self.sb, venv=os.path.join(root, 'v'))
        self.cloud.save_state({'done': [], 'barbican_kek': 'k',
                               'secrets': {'site-a': 'uuid-a',
                                           'site-b': 'uuid-b'}})
        host_tls.ensure_ca(self.cloud.pki_dir)
        self.values = self.cloud.values()
        self.host = self.cloud.hosts[2]     # site-b-h1
        # Its /etc/libvirt copy (made from the machine's on a real host).
        os.makedirs(os.path.join(self.host.dir, 'etc-libvirt'))
        self.host.configure(self.values)

    def in_host(self, path):
        """A path of the host's namespaces, seen from the root namespace."""
        self.assertTrue(path.startswith('/etc/libvirt/'), path)
        return os.path.join(self.host.dir, 'etc-libvirt',
                            os.path.relpath(path, '/etc/libvirt'))

    def test_libvirtd_listens_tls_with_the_host_certificate(self):
        conf = settings(os.path.join(self.host.dir, 'etc-libvirt',
                                     'libvirtd.conf'))
        self.assertEqual('1', conf['listen_tls'])
        self.assertEqual('41221', conf['tls_port'])
        self.assertEqual(self.host.address, conf['listen_addr'])
        cert = load(self.in_host(conf['cert_file']))
        cert.verify_directly_issued_by(load(self.in_host(conf['ca_file'])))
        self.assertTrue(os.path.exists(self.in_host(conf['key_file'])))
        face = wan_mod.SandboxWan(self.sb).host_face(self.host.index)
        self.assertEqual({self.host.address, face}, ips(cert))

    def test_qemu_migrates_only_with_tls_and_verified_peers(self):
        conf = settings(os.path.join(self.host.dir, 'etc-libvirt',
                                     'qemu.conf'))
        self.assertEqual('1', conf['migrate_tls_x509_verify'])
        self.assertEqual('1', conf['migrate_tls_force'])
        cert_dir = self.in_host(conf['migrate_tls_x509_cert_dir'])
        for name in QEMU_NAMES:
            self.assertTrue(os.path.exists(os.path.join(cert_dir, name)),
                            name)

    def test_nova_migrates_over_tls_with_the_host_client_cert(self):
        conf = configparser.RawConfigParser(strict=False)
        conf.read(self.host.conf)
        uri = conf.get('libvirt', 'live_migration_uri')
        m = re.match(r'^qemu\+tls://%s:41221/system\?pkipath=(/\S+)$', uri)
        self.assertIsNotNone(m, uri)
        for name in ('cacert.pem', 'clientcert.pem', 'clientkey.pem'):
            self.assertTrue(os.path.exists(os.path.join(
                self.in_host(m.group(1)), name)), name)
        self.assertEqual('true', conf.get('libvirt',
                                          'live_migration_with_native_tls'))
        # Its own libvirtd stays on the host's address, plain TCP.
        self.assertEqual('qemu+tcp://%s:41220/system' % self.host.address,
                         conf.get('libvirt', 'connection_uri'))

    def test_the_wan_forwards_the_tls_port_not_the_plain_one(self):
        [control] = [m for m in wan_mod.SandboxWan(self.sb).mappings()
                     if m['name'] == 'site-b-h1/control']
        self.assertEqual([41221], control['ports'])
        self.assertEqual(self.host.address, control['target'])
        ipaddress.ip_address(control['listen'])

    def test_a_second_configure_changes_nothing_to_restart_for(self):
        self.host.configure(self.values)
        self.assertFalse(self.host.libvirt_changed)
        self.assertFalse(self.host.conf_changed)
