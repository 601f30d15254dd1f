"""What an eavesdropper on the WAN sees (fedex_sandbox.wan.Tap)."""

import socket
import struct

import testtools

from fedex_sandbox import wan

FACE = ('10.77.0.12', 20440)
CLIENT = ('10.77.0.1', 51000)


def frame(src, dst, seq, payload=b'', syn=False):
    """An Ethernet frame with an IPv4/TCP segment (checksums left 0)."""
    tcp = struct.pack('!HHIIBBHHH', src[1], dst[1], seq, 0, 5 << 4,
                      0x02 if syn else 0x18, 65535, 0, 0) + payload
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(tcp), 0, 0, 64, 6,
                     0, socket.inet_aton(src[0]), socket.inet_aton(dst[0]))
    return b'\0' * 12 + b'\x08\x00' + ip + tcp


def record(kind, body):
    return bytes([kind, 3, 3]) + len(body).to_bytes(2, 'big') + body


class TestTap(testtools.TestCase):

    def tap(self):
        return wan.Tap('fxwan0a', {FACE: 'memory'})

    def send(self, tap, data, cuts, src=CLIENT, dst=FACE, isn=1000,
             order=None):
        """data in segments cut at ``cuts``, in ``order`` (default: sent)."""
        tap.take(frame(src, dst, isn, syn=True))
        bounds = [0] + list(cuts) + [len(data)]
        segs = [(isn + 1 + a, data[a:b]) for a, b in zip(bounds, bounds[1:])]
        for i in (order or range(len(segs))):
            tap.take(frame(src, dst, *segs[i]))

    def test_tls_from_the_first_byte_in_segments_out_of_order(self):
        tap = self.tap()
        stream = (record(22, b'\x01' + b'h' * 300) + record(20, b'\x01')
                  + record(23, b'x' * 5000) + record(23, b'y' * 70))
        self.send(tap, stream, (100, 2000, 4000), order=(0, 2, 1, 3))
        [seen] = tap.describe()
        self.assertEqual(
            {'handshake': 1, 'change_cipher_spec': 1, 'application_data': 2},
            seen['tls_records'])
        self.assertEqual(len(stream), seen['tls_covered'])
        self.assertEqual(len(stream), seen['bytes'])
        self.assertFalse(seen['qemu_magic'])
        self.assertEqual((CLIENT, FACE), (seen['src'], seen['dst']))
        self.assertEqual(('memory', True), (seen['path'], seen['to_server']))

    def test_qemu_stream_in_the_clear_is_not_tls(self):
        tap = self.tap()
        self.send(tap, b'QEVM\x00\x00\x00\x03' + b'\x07' * 3000, (1500,))
        [seen] = tap.describe()
        self.assertEqual(({}, 0), (seen['tls_records'], seen['tls_covered']))
        self.assertTrue(seen['qemu_magic'])
        self.assertEqual('5145564d00000003', seen['head'])

    def test_both_directions_other_ports_and_mid_stream_joins(self):
        tap = self.tap()
        self.send(tap, record(22, b'c' * 10), ())
        self.send(tap, record(22, b's' * 10), (), src=FACE, dst=CLIENT)
        # Another port of the face: not a server of this tap.
        self.send(tap, b'QEVM', (), dst=(FACE[0], 20441))
        # Joined mid-stream (no SYN seen): its first bytes are unknown.
        tap.take(frame(('10.77.0.1', 52000), FACE, 7, b'QEVM'))
        seen = {(s['src'], s['dst']): s for s in tap.describe()}
        self.assertEqual({(CLIENT, FACE), (FACE, CLIENT)}, set(seen))
        self.assertFalse(seen[(FACE, CLIENT)]['to_server'])
        for s in seen.values():
            self.assertEqual({'handshake': 1}, s['tls_records'])

    def test_a_missed_segment_ends_what_is_judged(self):
        tap = self.tap()
        stream = record(22, b'a' * 100) + record(23, b'b' * 100)
        self.send(tap, stream, (50, 150), order=(0, 2))
        [seen] = tap.describe()
        self.assertEqual(50, seen['bytes'])
        self.assertEqual(({}, 0), (seen['tls_records'], seen['tls_covered']))

    def test_only_the_first_bytes_are_kept(self):
        tap = wan.Tap('fxwan0a', {FACE: 'memory'}, limit=1000)
        self.send(tap, record(23, b'z' * 3000), (600, 1200, 1800))
        [seen] = tap.describe()
        self.assertEqual(1000, seen['bytes'])
        self.assertEqual(2, len(tap.streams[(CLIENT, FACE)].parts))


class TestTlsRecords(testtools.TestCase):

    def test_partial_last_record_is_not_covered(self):
        data = record(22, b'x' * 10) + record(23, b'y' * 100)[:50]
        self.assertEqual(({'handshake': 1}, 15), wan.tls_records(data))

    def test_not_tls(self):
        self.assertEqual(({}, 0), wan.tls_records(b'\x00\x00\x00\x1c \x00\x80\x86'))
