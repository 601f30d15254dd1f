import hashlib

import blake3
import testtools

from lsrp import exception
from lsrp.rbd import digest
from lsrp.rbd.extents import Extent


class TestDigest(testtools.TestCase):

    def _stream(self):
        # 3 MiB data, a 9 MiB hole (crosses the zero buffer size), 5 bytes.
        return [(Extent(0, 3 << 20, True), b'\x01' * (3 << 20)),
                (Extent(3 << 20, 9 << 20, False), None),
                (Extent(12 << 20, 5, True), b'hello')]

    def _flat(self):
        return b'\x01' * (3 << 20) + bytes(9 << 20) + b'hello'

    def test_sha256_equals_hash_of_flat_stream(self):
        value, total = digest.digest_pieces(self._stream(), 'sha256')
        self.assertEqual(hashlib.sha256(self._flat()).hexdigest(), value)
        self.assertEqual(len(self._flat()), total)

    def test_blake3_equals_hash_of_flat_stream(self):
        value, _ = digest.digest_pieces(self._stream(), 'blake3')
        self.assertEqual(blake3.blake3(self._flat()).hexdigest(), value)

    def test_hole_differs_from_data(self):
        a, _ = digest.digest_pieces([(Extent(0, 4, False), None)])
        b, _ = digest.digest_pieces([(Extent(0, 4, True), b'\0\0\0\1')])
        self.assertNotEqual(a, b)

    def test_unknown_algorithm(self):
        e = self.assertRaises(exception.FedexException, digest.new_hash, 'md4')
        self.assertIn('md4', str(e))
        self.assertIn('sha256', str(e))
