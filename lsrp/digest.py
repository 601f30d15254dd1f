"""Every digest of the project but the keyed chunk digest, in one place.

* Whole-image digests that treat holes as zeros (``digest_pieces``,
  ``OrderedDigest``): the value equals hashing the byte stream of ``rbd export
  <image>@<snap> -`` with the same algorithm (``| sha256sum``, ``| b3sum``);
  unallocated ranges are fed to the hash as zeros without being read.
* ``block_digest``: the BLAKE3 of one block on the wire (LSRP updates and
  checksum exchanges).
* ``manifest_digest``: the SHA-256 of a sealed manifest, printed by ``lsrp
  seal`` and checked by ``--expect-digest``.

(The chunk digest on devices is keyed with the shipment's key: it lives with
the rest of the cryptography, ``lsrp.device.crypto.ShipmentCrypto.digest``.)
Where each is checked: ``doc/source/verification.rst``.
"""

import hashlib

import blake3

from lsrp import exception

ZERO_CHUNK = 4 << 20
_zeros = None


def _new_blake3():
    # NOTE: blake3 hashes large updates on several threads; the digest is the
    # same as single-threaded b3sum.
    return blake3.blake3(max_threads=blake3.blake3.AUTO)


ALGORITHMS = {
    'sha256': hashlib.sha256,
    'blake3': _new_blake3,
}


def new_hash(algorithm):
    try:
        return ALGORITHMS[algorithm]()
    except KeyError:
        raise exception.FedexException(
            'unknown digest algorithm %r (have: %s)' % (
                algorithm, ', '.join(sorted(ALGORITHMS))))


def manifest_digest(blob):
    """The digest of a manifest as stored on the devices (hex SHA-256)."""
    return hashlib.sha256(blob).hexdigest()


def block_digest(data):
    """BLAKE3 of one block, 32 bytes: what LSRP frames carry."""
    return blake3.blake3(data).digest()


def update_zeros(hasher, length):
    """Feed ``length`` zero bytes to ``hasher`` from one shared buffer."""
    global _zeros
    if _zeros is None:
        _zeros = memoryview(bytes(ZERO_CHUNK))
    while length > 0:
        n = min(length, ZERO_CHUNK)
        hasher.update(_zeros[:n])
        length -= n


def digest_pieces(pieces, algorithm='sha256'):
    """Hash ``(extent, data)`` pieces in order; ``data`` None means zeros.

    Returns ``(hexdigest, bytes_hashed)``.
    """
    hasher = new_hash(algorithm)
    total = 0
    for ext, data in pieces:
        if data is None:
            update_zeros(hasher, ext.length)
        else:
            hasher.update(data)
        total += ext.length
    return hasher.hexdigest(), total


class OrderedDigest(object):
    """An image digest fed with its ranges in offset order, holes as zeros.

    A transfer that sends an image from its start computes the digest on
    the way instead of reading the image again. A range that comes before
    one already fed (a resumed transfer) makes it ``valid = False``: the
    digest must then be computed another way.
    """

    def __init__(self, algorithm='blake3'):
        self._hasher = new_hash(algorithm)
        self.pos = 0
        self.valid = True

    def _skip_to(self, offset):
        if not self.valid or offset < self.pos:
            self.valid = False
            return False
        update_zeros(self._hasher, offset - self.pos)
        return True

    def data(self, offset, data):
        if self._skip_to(offset):
            self._hasher.update(data)
            self.pos = offset + len(data)

    def zeros(self, offset, length):
        if self._skip_to(offset):
            update_zeros(self._hasher, length)
            self.pos = offset + length

    def hexdigest(self, size):
        """The digest of an image of ``size`` bytes; None if not valid."""
        if not self._skip_to(size):
            return None
        self.pos = size
        return self._hasher.hexdigest()
