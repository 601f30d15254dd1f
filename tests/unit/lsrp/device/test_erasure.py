import itertools
import os

import testtools

from lsrp.device import erasure
from lsrp import exception


class TestStripeCoder(testtools.TestCase):

    def test_any_k_shards_rebuild(self):
        for k, m in ((1, 0), (2, 0), (1, 1), (2, 1), (3, 1), (2, 2), (4, 2),
                     (3, 3)):
            coder = erasure.StripeCoder(k, m)
            for length in (1, 1000, 65537):
                data = os.urandom(length)
                shards = coder.encode(data)
                self.assertEqual(k + m, len(shards))
                self.assertEqual({coder.shard_length(length)},
                                 {len(s) for s in shards})
                # Systematic: the data shards are the data itself.
                self.assertEqual(data, b''.join(shards[:k])[:length])
                for keep in itertools.combinations(range(k + m), k):
                    got = coder.decode({i: bytes(shards[i]) for i in keep},
                                       length)
                    self.assertEqual(data, got, (k, m, length, keep))

    def test_codes_by_parity(self):
        self.assertEqual('none', erasure.StripeCoder(3, 0).code)
        self.assertEqual('xor', erasure.StripeCoder(3, 1).code)
        self.assertEqual('isa_l_rs_cauchy', erasure.StripeCoder(3, 2).code)

    def test_xor_parity_is_plain_xor(self):
        coder = erasure.StripeCoder(3, 1)
        data = os.urandom(3 * 4096)
        a, b, c, parity = (bytes(s) for s in coder.encode(data))
        expected = bytes(x ^ y ^ z for x, y, z in zip(a, b, c))
        self.assertEqual(expected, parity)

    def test_padding_makes_whole_shards(self):
        coder = erasure.StripeCoder(2, 1)
        for length in (1, 64, 127, 128, 129):
            self.assertEqual(
                0, (length + coder.padding(length)) % (2 * erasure.ALIGN))

    def test_a_code_that_cannot_make_the_parity_is_refused(self):
        self.assertRaises(exception.FedexException, erasure.StripeCoder, 2, 2,
                          'xor')
        self.assertRaises(exception.FedexException, erasure.StripeCoder, 2, 1,
                          'zfec-rs')
