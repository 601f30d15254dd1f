"""Keys and sealing of one shipment.

From the shipment's 32-byte data key, HKDF-SHA256 derives independent keys
for chunk encryption, chunk digests, the manifest, and a key-check value (so
that a wrong key is told apart from tampering). Chunk digests are *keyed*
BLAKE3: a thief cannot confirm that a device holds some known block.
"""

import ctypes
import ctypes.util
import os
import struct
import threading

import blake3
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
import lz4.block
import zstandard

NONCE = 12
# Chunks whose first bytes do not compress are stored as they are: zstd on
# random data costs as much as the cipher and saves nothing.
PROBE = 4096
PROBE_RATIO = 0.97
# A chunk record: flags (bit 0: zstd, bit 1: LZ4 block), plaintext length,
# nonce, then the AES-GCM ciphertext with its 16-byte tag.
RECORD_HEADER = struct.Struct('>BI12s')
FLAG_ZSTD = 1
FLAG_LZ4 = 2
# LZ4 compresses a filesystem image's chunks about twice as fast as zstd
# level 1 and decompresses them three times as fast, for ~30 percent more
# bytes (measured on the shipments page): at the speed of the disks the
# export is CPU-bound, so it is the default. Both are always readable.
COMPRESSIONS = ('lz4', 'zstd')
# LZ4's "fast" mode skips ahead faster where it finds no match. On the 64
# KiB chunks of a copy of /usr (one thread, 2026-11-24, loaded machine):
# acceleration 1 kept 49 % of the bytes at 668 MiB/s, 4 kept 54 % at 899, 8
# kept 59 % at 1118 (and decompressed at 1380 MiB/s instead of 823). The
# export is CPU-bound and LZ4 was its largest cost (34 %), so 8 by default
# ([shipment] lz4_acceleration). The records do not depend on it: any LZ4
# block decompresses the same way.
LZ4_ACCELERATION = 8
TAG = 16
# cryptography >= 45 encrypts into a given buffer.
_IN_PLACE = hasattr(AESGCM, 'encrypt_into')
_DECRYPT_INTO = hasattr(AESGCM, 'decrypt_into')


def _load_lz4():
    """liblz4's LZ4_decompress_safe, or None.

    python-lz4 returns a new bytes object per block; the import decompresses
    a group's chunks straight into the buffer handed to librbd instead (no
    join, no copy). ctypes releases the GIL around the call.
    """
    name = ctypes.util.find_library('lz4') or 'liblz4.so.1'
    try:
        fn = ctypes.CDLL(name).LZ4_decompress_safe
    except (OSError, AttributeError):
        return None
    fn.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int,
                   ctypes.c_int)
    fn.restype = ctypes.c_int
    return fn


_LZ4_DECOMPRESS = _load_lz4()


def _address(buf):
    """The address of a writable buffer (bytearray, or a view of one)."""
    return ctypes.addressof(ctypes.c_char.from_buffer(buf))


def _derive(key, shipment_id, purpose):
    return HKDF(algorithm=hashes.SHA256(), length=32,
                salt=shipment_id.encode(),
                info=b'fedex/1/' + purpose).derive(key)


class ShipmentCrypto(object):
    """Encrypts chunks and the manifest of one shipment."""

    def __init__(self, key, shipment_id, zstd_level=1, compression='lz4',
                 lz4_acceleration=LZ4_ACCELERATION):
        self.shipment_id = shipment_id
        self._aad = shipment_id.encode()
        self._chunk = AESGCM(_derive(key, shipment_id, b'chunk'))
        self._manifest = AESGCM(_derive(key, shipment_id, b'manifest'))
        self._digest_key = _derive(key, shipment_id, b'digest')
        self.key_check = _derive(key, shipment_id, b'key-check').hex()[:32]
        self._zstd_level = zstd_level
        if compression not in COMPRESSIONS:
            raise ValueError('unknown compression %r: one of %s'
                             % (compression, ', '.join(COMPRESSIONS)))
        self.compression = compression
        self._lz4_acceleration = lz4_acceleration
        # NOTE: a zstd context per thread, kept: making one per 64 KiB chunk
        # cost about as much as compressing it at level 1. Contexts are not
        # thread-safe, hence one per thread.
        self._local = threading.local()

    def _compressor(self):
        try:
            return self._local.compressor
        except AttributeError:
            self._local.compressor = zstandard.ZstdCompressor(
                level=self._zstd_level)
            return self._local.compressor

    def _decompressor(self):
        try:
            return self._local.decompressor
        except AttributeError:
            self._local.decompressor = zstandard.ZstdDecompressor()
            return self._local.decompressor

    def digest(self, data):
        """Keyed BLAKE3 of a chunk's plaintext, hex."""
        return blake3.blake3(data, key=self._digest_key).hexdigest()

    def seal_chunk(self, digest, data):
        """Compress (when it helps) and encrypt a chunk into a record."""
        flags, body = 0, data
        if self.compression == 'lz4':
            flag, compress = FLAG_LZ4, self._lz4
        else:
            flag, compress = FLAG_ZSTD, self._compressor().compress
        if (len(data) <= PROBE or len(compress(data[:PROBE]))
                < PROBE * PROBE_RATIO):
            packed = compress(data)
            if len(packed) < len(data):
                flags, body = flag, packed
        nonce = os.urandom(NONCE)
        # The digest is authenticated data: a record moved to another
        # chunk's place fails to open.
        if not _IN_PLACE:
            return (RECORD_HEADER.pack(flags, len(data), nonce)
                    + self._chunk.encrypt(nonce, body, self._aad
                                          + bytes.fromhex(digest)))
        record = bytearray(RECORD_HEADER.size + len(body) + TAG)
        RECORD_HEADER.pack_into(record, 0, flags, len(data), nonce)
        # Encrypted in place after the header: no copy of the ciphertext.
        self._chunk.encrypt_into(nonce, body,
                                 self._aad + bytes.fromhex(digest),
                                 memoryview(record)[RECORD_HEADER.size:])
        return record

    def open_chunk(self, digest, record, check_digest=True):
        """Decrypt and decompress a record.

        Returns None if the record fails authentication or its content does
        not match the digest. ``check_digest=False`` leaves out hashing the
        plaintext, for a caller that checks the whole image's digest of
        what it writes: the AES-GCM tag, over the digest too, already proves
        the record is the one sealed for it.
        """
        try:
            flags, length, nonce = RECORD_HEADER.unpack_from(record)
            body = self._chunk.decrypt(
                nonce, memoryview(record)[RECORD_HEADER.size:],
                self._aad + bytes.fromhex(digest))
            if flags & FLAG_LZ4:
                body = lz4.block.decompress(body, uncompressed_size=length)
            elif flags & FLAG_ZSTD:
                # NOTE: a frame that states its size is decompressed in one
                # call; max_output_size makes zstandard stream it (~2x
                # slower). So the stated size is checked first.
                if zstandard.frame_content_size(body) != length:
                    return None
                body = self._decompressor().decompress(body)
        except (InvalidTag, struct.error, zstandard.ZstdError,
                lz4.block.LZ4BlockError, ValueError):
            return None
        if len(body) != length or (check_digest
                                   and self.digest(body) != digest):
            return None
        return body

    def _scratch(self, size):
        """A per-thread buffer of ``size`` bytes, reused."""
        buf = getattr(self._local, 'scratch', None)
        if buf is None or len(buf) < size:
            buf = self._local.scratch = bytearray(max(size, 1 << 16))
        return memoryview(buf)[:size]

    def open_chunk_into(self, digest, record, out, check_digest=True):
        """Decrypt and decompress a record into ``out``; True if it opens.

        ``out``, a writable buffer of exactly the plaintext's length, is
        written even when the record turns out bad (False): the caller then
        fills it another way. What is refused is what ``open_chunk``
        refuses. LZ4 and stored records are decoded in place: AES-GCM into
        ``out`` or a per-thread scratch buffer, LZ4 from there into
        ``out``.
        """
        try:
            flags, length, nonce = RECORD_HEADER.unpack_from(record)
            if length != len(out):
                return False
            body = memoryview(record)[RECORD_HEADER.size:]
            aad = self._aad + bytes.fromhex(digest)
            if not _DECRYPT_INTO or (flags & FLAG_ZSTD or (
                    flags & FLAG_LZ4 and _LZ4_DECOMPRESS is None)):
                plain = self.open_chunk(digest, record, check_digest)
                if plain is None:
                    return False
                out[:] = plain
                return True
            if flags & FLAG_LZ4:
                if len(body) <= TAG:
                    return False
                packed = self._scratch(len(body) - TAG)
                self._chunk.decrypt_into(nonce, body, aad, packed)
                if _LZ4_DECOMPRESS(_address(packed), _address(out),
                                   len(packed), length) != length:
                    return False
            else:
                if len(body) - TAG != length:
                    return False
                self._chunk.decrypt_into(nonce, body, aad, out)
        except (InvalidTag, struct.error, ValueError):
            return False
        return not check_digest or self.digest(out) == digest

    def _lz4(self, data):
        # Raw LZ4 block: the record header holds the plaintext length.
        return lz4.block.compress(data, mode='fast', store_size=False,
                                  acceleration=self._lz4_acceleration)

    def seal_manifest(self, plaintext):
        nonce = os.urandom(NONCE)
        return nonce + self._manifest.encrypt(nonce, plaintext, self._aad)

    def open_manifest(self, sealed):
        """Plaintext, or None if the sealed manifest fails authentication."""
        try:
            return self._manifest.decrypt(sealed[:NONCE], sealed[NONCE:],
                                          self._aad)
        except (InvalidTag, ValueError):
            return None
