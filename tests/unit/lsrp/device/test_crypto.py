import os

import testtools

from lsrp.device import crypto


class TestShipmentCrypto(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.key = os.urandom(32)
        self.c = crypto.ShipmentCrypto(self.key, 'ship-1')

    def test_chunk_round_trip_random_and_compressible(self):
        for data in (os.urandom(65536), b'abc' * 20000):
            d = self.c.digest(data)
            record = self.c.seal_chunk(d, data)
            self.assertEqual(data, self.c.open_chunk(d, record))
        self.assertLess(len(self.c.seal_chunk(d, data)), 1000)

    def test_lz4_and_zstd_records_are_both_read(self):
        # A device set may hold both (an export resumed with the other
        # setting): each record's flags say how it is stored.
        data = b'the same line of a log file\n' * 2400
        d = self.c.digest(data)
        zstd = crypto.ShipmentCrypto(self.key, 'ship-1', compression='zstd')
        records = {name: c.seal_chunk(d, data) for name, c in (
            ('lz4', self.c), ('zstd', zstd))}
        self.assertEqual(crypto.FLAG_LZ4, records['lz4'][0])
        self.assertEqual(crypto.FLAG_ZSTD, records['zstd'][0])
        for record in records.values():
            self.assertLess(len(record), len(data) // 10)
            self.assertEqual(data, self.c.open_chunk(d, record))
            self.assertEqual(data, zstd.open_chunk(d, record))
        self.assertRaises(ValueError, crypto.ShipmentCrypto, self.key,
                          'ship-1', compression='gzip')

    def test_flipped_bit_is_refused(self):
        data = os.urandom(4096)
        d = self.c.digest(data)
        record = bytearray(self.c.seal_chunk(d, data))
        record[len(record) // 2] ^= 1
        self.assertIsNone(self.c.open_chunk(d, bytes(record)))
        # Without hashing the plaintext (the import checks the image's
        # digest instead), AES-GCM still refuses it.
        self.assertIsNone(self.c.open_chunk(d, bytes(record),
                                            check_digest=False))

    def test_record_under_another_digest_is_refused(self):
        a, b = os.urandom(100), os.urandom(100)
        record = self.c.seal_chunk(self.c.digest(a), a)
        self.assertIsNone(self.c.open_chunk(self.c.digest(b), record))
        self.assertIsNone(self.c.open_chunk(self.c.digest(b), record,
                                            check_digest=False))
        self.assertEqual(a, self.c.open_chunk(self.c.digest(a), record,
                                              check_digest=False))

    def test_other_key_or_shipment_cannot_open(self):
        data = os.urandom(100)
        d = self.c.digest(data)
        record = self.c.seal_chunk(d, data)
        other_key = crypto.ShipmentCrypto(os.urandom(32), 'ship-1')
        other_ship = crypto.ShipmentCrypto(self.key, 'ship-2')
        self.assertIsNone(other_key.open_chunk(d, record))
        self.assertIsNone(other_ship.open_chunk(d, record))
        # Digests are keyed: without the key they say nothing of content.
        self.assertNotEqual(d, other_key.digest(data))
        self.assertNotEqual(self.c.key_check, other_key.key_check)

    def test_record_does_not_contain_plaintext(self):
        data = b'secret-customer-data!' * 1000
        record = self.c.seal_chunk(self.c.digest(data), data)
        self.assertNotIn(b'secret-customer-data', record)

    def test_manifest_round_trip_and_tamper(self):
        sealed = self.c.seal_manifest(b'{"a": 1}')
        self.assertEqual(b'{"a": 1}', self.c.open_manifest(sealed))
        bad = bytearray(sealed)
        bad[-1] ^= 0x80
        self.assertIsNone(self.c.open_manifest(bytes(bad)))


class TestOpenChunkInto(testtools.TestCase):
    """The import decodes records in place: same results as open_chunk."""

    def setUp(self):
        super().setUp()
        self.key = os.urandom(32)
        self.c = crypto.ShipmentCrypto(self.key, 'ship-1')

    def into(self, digest, record, length, check_digest=True):
        out = bytearray(b'\xee' * (length + 8))
        ok = self.c.open_chunk_into(digest, record,
                                    memoryview(out)[4:4 + length],
                                    check_digest=check_digest)
        # Nothing is written outside the piece given.
        self.assertEqual(b'\xee' * 4, bytes(out[:4]))
        self.assertEqual(b'\xee' * 4, bytes(out[-4:]))
        return ok, bytes(out[4:4 + length])

    def test_stored_lz4_and_zstd_records(self):
        zstd = crypto.ShipmentCrypto(self.key, 'ship-1', compression='zstd')
        for data in (os.urandom(65536), b'abc' * 20000, bytes(65536), b'x'):
            d = self.c.digest(data)
            for sealer in (self.c, zstd):
                record = sealer.seal_chunk(d, data)
                self.assertEqual((True, data),
                                 self.into(d, record, len(data)))
                self.assertEqual((True, data), self.into(
                    d, record, len(data), check_digest=False))

    def test_bad_records_are_refused(self):
        data = b'a line of text\n' * 4000
        d = self.c.digest(data)
        record = self.c.seal_chunk(d, data)
        self.assertEqual(crypto.FLAG_LZ4, record[0])
        flipped = bytearray(record)
        flipped[len(flipped) // 2] ^= 1
        other = self.c.digest(b'other')
        for bad, digest, length in ((flipped, d, len(data)),
                                    (record, other, len(data)),
                                    (record, d, len(data) - 1),
                                    (record[:30], d, len(data))):
            self.assertFalse(self.into(digest, bytes(bad), length)[0])
            self.assertFalse(self.into(digest, bytes(bad), length,
                                       check_digest=False)[0])

    def test_lz4_acceleration_changes_the_bytes_not_what_reads(self):
        data = b''.join(b'%d: some words of a page of text\n' % i
                        for i in range(2500))
        d = self.c.digest(data)
        sizes = []
        for acceleration in (1, 64):
            sealer = crypto.ShipmentCrypto(self.key, 'ship-1',
                                           lz4_acceleration=acceleration)
            record = sealer.seal_chunk(d, data)
            sizes.append(len(record))
            self.assertEqual(data, self.c.open_chunk(d, record))
            self.assertEqual((True, data), self.into(d, record, len(data)))
        self.assertLess(sizes[0], sizes[1])
