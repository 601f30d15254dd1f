"""Mutual TLS between terminals: a small PKI and the SSL contexts.

Every terminal has a certificate signed by the deployment's CA, with its
name as the subject CN and a DNS SAN. A server accepts only clients with a
valid certificate from that CA; a client accepts only the server it asked
for, by name. The sandbox makes the CA and one certificate per site.
"""

import datetime
import os
import ssl

from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography import x509
from cryptography.x509.oid import NameOID

from lsrp import exception
from lsrp import fileutils


def _write(path, data, mode=0o600):
    fileutils.write_atomic(path, data, mode)


def _key_pem(key):
    return key.private_bytes(serialization.Encoding.PEM,
                             serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _name(cn):
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME,
                                         'fedex-migration'),
                      x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def make_ca(directory, days=3650):
    """Create ``ca.pem`` and ``ca.key`` in ``directory`` (0700)."""
    os.makedirs(directory, mode=0o700, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder()
            .subject_name(_name('fedex-ca')).issuer_name(_name('fedex-ca'))
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0),
                           critical=True)
            .sign(key, hashes.SHA256()))
    _write(os.path.join(directory, 'ca.key'), _key_pem(key))
    _write(os.path.join(directory, 'ca.pem'),
           cert.public_bytes(serialization.Encoding.PEM), 0o644)


def make_cert(directory, name, days=825, not_before=None):
    """Create ``<name>.pem``/``<name>.key`` signed by the CA in directory."""
    with open(os.path.join(directory, 'ca.key'), 'rb') as f:
        ca_key = serialization.load_pem_private_key(f.read(), None)
    with open(os.path.join(directory, 'ca.pem'), 'rb') as f:
        ca = x509.load_pem_x509_certificate(f.read())
    key = ec.generate_private_key(ec.SECP256R1())
    start = not_before or (datetime.datetime.now(datetime.timezone.utc)
                           - datetime.timedelta(minutes=5))
    cert = (x509.CertificateBuilder()
            .subject_name(_name(name)).issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(start + datetime.timedelta(days=days))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None),
                           critical=True)
            .sign(ca_key, hashes.SHA256()))
    _write(os.path.join(directory, name + '.key'), _key_pem(key))
    _write(os.path.join(directory, name + '.pem'),
           cert.public_bytes(serialization.Encoding.PEM), 0o644)
    return os.path.join(directory, name + '.pem')


def _context(purpose, ca, cert, key):
    try:
        ctx = ssl.create_default_context(purpose, cafile=ca)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        ctx.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as e:
        raise exception.FedexException(
            'TLS: cannot load CA %s or certificate %s / key %s: %s'
            % (ca, cert, key, e))
    return ctx


def server_context(ca, cert, key):
    """Server side: clients must show a certificate signed by ``ca``."""
    ctx = _context(ssl.Purpose.CLIENT_AUTH, ca, cert, key)
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def client_context(ca, cert, key):
    """Client side: the server must be the named terminal, signed by ca."""
    ctx = _context(ssl.Purpose.SERVER_AUTH, ca, cert, key)
    ctx.check_hostname = True
    return ctx


def peer_name(ssl_object):
    """The CN of the verified peer certificate."""
    cert = ssl_object.getpeercert()
    for rdn in cert.get('subject', ()):
        for key, value in rdn:
            if key == 'commonName':
                return value
    return None
