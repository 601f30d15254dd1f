import itertools
import os

import testtools

from lsrp.device import erasure


class TestStripeCoder(testtools.TestCase):

    def test_any_k_shards_rebuild(self):
        for k, m in ((1, 0), (2, 0), (1, 1), (2, 1), (3, 1), (4, 2)):
            coder = erasure.StripeCoder(k, m)
            for length in (1, 1000, 65537):
                data = os.urandom(length)
                shards = coder.encode(data)
                self.assertEqual(k + m, len(shards))
                # Systematic: the data shards are the data itself.
                self.assertEqual(data, b''.join(shards[:k])[:length])
                for keep in itertools.combinations(range(k + m), k):
                    got = coder.decode({i: shards[i] for i in keep}, length)
                    self.assertEqual(data, got, (k, m, length, keep))
