"""The frame decoder under fuzzing: it yields valid frames or raises
ProtocolError, never anything else, whatever the bytes."""

import struct

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from lsrp import exception
from lsrp.protocol import frames
from lsrp.protocol import messages as m


def update(seq=1, session=7, data=b'block'):
    return frames.Frame(m.REPLICATION_UPDATE, {
        'offset': 4096 * seq, 'data': data, 'digest': b'\x01' * 32},
        session=session, seq=seq)


valid_frames = st.builds(
    update, seq=st.integers(0, 2 ** 40), session=st.integers(0, 2 ** 40),
    data=st.binary(max_size=2000))


class TestFrames(testtools.TestCase):

    @given(st.lists(valid_frames, min_size=1, max_size=5), st.data())
    def test_round_trip_however_the_stream_is_cut(self, sent, data):
        stream = b''.join(frames.encode(f) for f in sent)
        cuts = sorted(data.draw(st.sets(st.integers(0, len(stream)),
                                        max_size=8)))
        decoder = frames.Decoder()
        got = []
        for a, b in zip([0] + cuts, cuts + [len(stream)]):
            got += decoder.feed(stream[a:b])
        self.assertEqual(sent, got)
        self.assertEqual(0, decoder.pending)

    @settings(max_examples=500)
    @given(st.binary(max_size=300))
    def test_garbage_only_raises_protocol_errors(self, junk):
        try:
            frames.Decoder().feed(junk)
        except exception.ProtocolError as e:
            self.assertIn(e.code, m.ERROR_CODES)

    @settings(max_examples=300)
    @given(valid_frames, st.data())
    def test_any_flipped_byte_is_caught(self, frame, data):
        raw = bytearray(frames.encode(frame))
        i = data.draw(st.integers(0, len(raw) - 1))
        raw[i] ^= data.draw(st.integers(1, 255))
        decoder = frames.Decoder()
        try:
            got = decoder.feed(bytes(raw))
        except exception.ProtocolError:
            return
        # A corrupted length field can make the frame look incomplete.
        self.assertEqual([], got)
        self.assertGreater(decoder.pending, 0)

    def test_truncated_frame_is_pending_not_accepted(self):
        raw = frames.encode(update())
        decoder = frames.Decoder()
        self.assertEqual([], decoder.feed(raw[:-1]))
        self.assertEqual(len(raw) - 1, decoder.pending)

    def _header(self, **kw):
        fields = dict(magic=b'LSRP', version=1, type=m.HANDSHAKE, flags=0,
                      session=0, seq=0, length=0, crc=0)
        fields.update(kw)
        return struct.pack('>4sBBHQQII', *fields.values())

    def _code(self, raw):
        e = self.assertRaises(exception.ProtocolError,
                              frames.Decoder().feed, raw)
        return e.code

    def test_header_violations_have_their_codes(self):
        self.assertEqual('BAD_MAGIC', self._code(self._header(magic=b'HTTP')))
        self.assertEqual('BAD_VERSION', self._code(self._header(version=2)))
        self.assertEqual('UNKNOWN_TYPE', self._code(self._header(type=0x55)))
        self.assertEqual('BAD_FLAGS', self._code(self._header(flags=0x8000)))
        # An oversize length is refused from the header alone.
        self.assertEqual('TOO_LARGE', self._code(self._header(
            length=frames.MAX_BODY + 1)))
        self.assertEqual('BAD_CHECKSUM', self._code(
            frames.encode(update())[:-1] + b'X'))

    def test_fields_are_validated(self):
        bad = [
            (m.REPLICATION_UPDATE, {'offset': -1, 'data': b'', 'digest':
                                    b'\0' * 32}),
            (m.REPLICATION_UPDATE, {'offset': 0, 'data': b''}),
            (m.REPLICATION_UPDATE, {'offset': 0, 'data': b'', 'digest':
                                    b'short'}),
            (m.HANDSHAKE, {'version': 1, 'id': 'x', 'peer': 'p',
                           'extra': 1}),
            (m.HANDSHAKE, {'version': True, 'id': 'x', 'peer': 'p'}),
            (m.INIT_SESSION, {'disk': 'd' * 5000, 'shipment': 's'}),
        ]
        for type_, body in bad:
            e = self.assertRaises(exception.ProtocolError, frames.encode,
                                  frames.Frame(type_, body))
            self.assertEqual('BAD_FIELD', e.code, body)

    def test_error_frames_encode_as_answers_and_alone(self):
        for flags in (0, frames.FLAG_RESPONSE):
            frame = frames.Frame(m.ERROR, {'code': 'BAD_STATE',
                                           'message': 'x'}, flags=flags)
            self.assertEqual([frame], frames.Decoder().feed(
                frames.encode(frame)))

    def test_every_thesis_message_is_defined(self):
        codes = set(m.THESIS_CODES.values())
        for family, count in (('D', 11), ('C', 6), ('E', 5)):
            for i in range(1, count + 1):
                self.assertIn('%s%d' % (family, i), codes)
