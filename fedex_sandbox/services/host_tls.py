"""TLS between the mini-cloud's compute hosts: libvirtd and QEMU migration.

A CA of the cloud's own (``<cloud>/pki``; not the terminals' CA of the
sandbox: a terminal's key must not open a hypervisor) signs, per compute
host, a server certificate naming every address the host is reached at (its
loopback address, its WAN face) and a client certificate. Both go into one
directory under the names each consumer looks for:

- libvirt (``pkipath=`` of a ``qemu+tls://`` URI, and libvirtd's
  ``ca_file``/``cert_file``/``key_file``): ``cacert.pem``,
  ``clientcert.pem``, ``clientkey.pem``, ``servercert.pem``,
  ``serverkey.pem``;
- QEMU native TLS (qemu.conf ``migrate_tls_x509_cert_dir``):
  ``ca-cert.pem``, ``server-cert.pem``, ``server-key.pem``,
  ``client-cert.pem``, ``client-key.pem``.
"""

import datetime
import ipaddress
import os

from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from cryptography.x509.oid import NameOID

from lsrp import fileutils

ORGANIZATION = 'fedex-sandbox compute hosts'
CA_NAME = 'fedex-sandbox compute CA'
# (libvirt's name, QEMU's name) of each file of a host's directory.
FILES = {'ca': ('cacert.pem', 'ca-cert.pem'),
         'server_cert': ('servercert.pem', 'server-cert.pem'),
         'server_key': ('serverkey.pem', 'server-key.pem'),
         'client_cert': ('clientcert.pem', 'client-cert.pem'),
         'client_key': ('clientkey.pem', 'client-key.pem')}
# A certificate this close to its end is issued again by the next ``up``.
RENEW_BEFORE = datetime.timedelta(days=30)


def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME,
                                         ORGANIZATION),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _key_pem(key):
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _cert_pem(cert):
    return cert.public_bytes(serialization.Encoding.PEM)


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def ensure_ca(directory, days=3650):
    """``ca.pem`` and ``ca.key`` in ``directory`` (0700), made once."""
    cert_path = os.path.join(directory, 'ca.pem')
    if os.path.exists(cert_path):
        return cert_path
    os.makedirs(directory, mode=0o700, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    cert = (x509.CertificateBuilder()
            .subject_name(_name(CA_NAME)).issuer_name(_name(CA_NAME))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0),
                           critical=True)
            .add_extension(x509.KeyUsage(
                digital_signature=False, content_commitment=False,
                key_encipherment=False, data_encipherment=False,
                key_agreement=False, key_cert_sign=True, crl_sign=True,
                encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    fileutils.write_atomic(os.path.join(directory, 'ca.key'), _key_pem(key),
                           0o600)
    fileutils.write_atomic(cert_path, _cert_pem(cert), 0o644)
    return cert_path


def _load_ca(directory):
    with open(os.path.join(directory, 'ca.key'), 'rb') as f:
        key = serialization.load_pem_private_key(f.read(), None)
    with open(os.path.join(directory, 'ca.pem'), 'rb') as f:
        pem = f.read()
    return key, x509.load_pem_x509_certificate(pem), pem


def _issue(ca_key, ca, name, purpose, sans=(), days=825):
    # No KeyUsage: libvirt then assumes the usages it wants (with one that
    # lacks key encipherment it warns at every start); ExtendedKeyUsage
    # says which end of a connection the certificate is for.
    key = ec.generate_private_key(ec.SECP256R1())
    start = _now() - datetime.timedelta(minutes=5)
    builder = (x509.CertificateBuilder()
               .subject_name(_name(name)).issuer_name(ca.subject)
               .public_key(key.public_key())
               .serial_number(x509.random_serial_number())
               .not_valid_before(start)
               .not_valid_after(start + datetime.timedelta(days=days))
               .add_extension(x509.BasicConstraints(ca=False,
                                                    path_length=None),
                              critical=True)
               .add_extension(x509.ExtendedKeyUsage([purpose]),
                              critical=False))
    if sans:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(list(sans)), critical=False)
    return key, builder.sign(ca_key, hashes.SHA256())


def subject_alt_names(name, addresses):
    """The SANs of a host's server certificate: its name and addresses."""
    return [x509.DNSName(name)] + [
        x509.IPAddress(ipaddress.ip_address(a)) for a in addresses]


def _current(directory, ca_pem, sans):
    """Whether the host's files are there, from this CA, for these SANs."""
    try:
        with open(os.path.join(directory, FILES['ca'][0]), 'rb') as f:
            if f.read() != ca_pem:
                return False
        for kind in ('server', 'client'):
            with open(os.path.join(directory, FILES[kind + '_cert'][0]),
                      'rb') as f:
                cert = x509.load_pem_x509_certificate(f.read())
            if cert.not_valid_after_utc - RENEW_BEFORE < _now():
                return False
            if kind == 'server':
                have = cert.extensions.get_extension_for_class(
                    x509.SubjectAlternativeName).value
                if set(have) != set(sans):
                    return False
        for names in FILES.values():
            for n in names:
                if not os.path.exists(os.path.join(directory, n)):
                    return False
    except (OSError, ValueError, x509.ExtensionNotFound):
        return False
    return True


def ensure_host(ca_dir, directory, name, addresses):
    """A host's server and client certificates in ``directory``.

    ``addresses``: every IP address other hosts reach it at (the server
    certificate is checked against the address of the URI: libvirt's
    ``qemu+tls://ADDRESS``, QEMU's ``tcp:ADDRESS:PORT``). Issued again when
    the CA, the addresses or the validity no longer fit. Returns whether
    anything was (re)written: libvirtd reads its certificate when it starts.
    """
    ca_key, ca, ca_pem = _load_ca(ca_dir)
    sans = subject_alt_names(name, addresses)
    if _current(directory, ca_pem, sans):
        return False
    os.makedirs(directory, mode=0o700, exist_ok=True)
    server_key, server = _issue(ca_key, ca, name,
                                ExtendedKeyUsageOID.SERVER_AUTH, sans)
    client_key, client = _issue(ca_key, ca, name,
                                ExtendedKeyUsageOID.CLIENT_AUTH)
    content = {'ca': (ca_pem, 0o644),
               'server_cert': (_cert_pem(server), 0o644),
               'server_key': (_key_pem(server_key), 0o600),
               'client_cert': (_cert_pem(client), 0o644),
               'client_key': (_key_pem(client_key), 0o600)}
    # Keys before certificates, the certificate last: a reader never finds
    # a certificate without its key.
    for kind in ('ca', 'server_key', 'client_key', 'server_cert',
                 'client_cert'):
        data, mode = content[kind]
        for n in FILES[kind]:
            fileutils.write_atomic(os.path.join(directory, n), data, mode)
    return True
