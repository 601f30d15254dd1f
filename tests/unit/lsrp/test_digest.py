import hashlib

import blake3
import testtools

from lsrp import digest
from lsrp import exception
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


class TestOrderedDigest(testtools.TestCase):

    def test_ranges_with_gaps_equal_the_flat_image(self):
        ordered = digest.OrderedDigest()
        ordered.data(4096, b'a' * 10)
        ordered.zeros(8192, 100)        # an explicit zero range
        ordered.data(70000, b'b' * 3)
        flat = bytearray(100000)
        flat[4096:4106] = b'a' * 10
        flat[70000:70003] = b'bbb'
        self.assertEqual(blake3.blake3(bytes(flat)).hexdigest(),
                         ordered.hexdigest(100000))

    def test_a_range_out_of_order_gives_no_digest(self):
        ordered = digest.OrderedDigest()
        ordered.data(1000, b'x' * 100)
        ordered.data(500, b'y')          # a resumed transfer went back
        self.assertFalse(ordered.valid)
        self.assertIsNone(ordered.hexdigest(2000))
