"""LSRP frames: a fixed header, then a msgpack body.

Header (big endian, 32 bytes: ``HEADER_SIZE``)::

    magic "LSRP" | version u8 | type u8 | flags u16 | session u64 | seq u64
    | length u32 | crc32 u32

``crc32`` (zlib) covers the header with the crc field zeroed, then the body.
The decoder is incremental (feed it bytes as they arrive) and validates
everything before a body is decoded: magic, version, type, flags, length
bound, checksum; then the body against the message's schema.
"""

import struct
import zlib

import msgpack

from lsrp import exception
from lsrp.protocol import messages

MAGIC = b'LSRP'
VERSION = 1
HEADER = struct.Struct('>4sBBHQQII')
HEADER_SIZE = HEADER.size
MAX_BODY = (16 << 20) + 4096   # a 16 MiB block plus its fields

FLAG_RESPONSE = 0x0001        # an answer to the request of the same seq
KNOWN_FLAGS = FLAG_RESPONSE


class Frame(object):
    __slots__ = ('type', 'flags', 'session', 'seq', 'body')

    def __init__(self, type, body=None, session=0, seq=0, flags=0):
        self.type = type
        self.flags = flags
        self.session = session
        self.seq = seq
        self.body = body if body is not None else {}

    @property
    def name(self):
        return messages.NAMES.get(self.type, hex(self.type))

    @property
    def is_response(self):
        return bool(self.flags & FLAG_RESPONSE)

    def __eq__(self, other):
        return (isinstance(other, Frame) and
                all(getattr(self, a) == getattr(other, a)
                    for a in self.__slots__))

    def __repr__(self):
        return 'Frame(%s, session=%d, seq=%d, flags=%#x, %s)' % (
            self.name, self.session, self.seq, self.flags,
            sorted(self.body))


def encode(frame):
    """Bytes of a frame; the body is validated like a received one."""
    messages.validate(frame.type, frame.body, frame.is_response)
    body = msgpack.packb(frame.body, use_bin_type=True)
    if len(body) > MAX_BODY:
        raise exception.ProtocolError(code='TOO_LARGE',
                                      reason='body of %d bytes' % len(body))
    header = HEADER.pack(MAGIC, VERSION, frame.type, frame.flags,
                         frame.session, frame.seq, len(body), 0)
    crc = zlib.crc32(body, zlib.crc32(header))
    return header[:-4] + struct.pack('>I', crc) + body


def _unpack_body(data):
    try:
        body = msgpack.unpackb(
            data, raw=False, strict_map_key=True, use_list=True,
            max_str_len=4096, max_bin_len=MAX_BODY, max_array_len=1 << 20,
            max_map_len=64, max_ext_len=0)
    except Exception as e:  # msgpack raises many types for bad input
        raise exception.ProtocolError(code='BAD_BODY',
                                      reason='undecodable body: %s' % e)
    if not isinstance(body, dict):
        raise exception.ProtocolError(code='BAD_BODY',
                                      reason='body is not a map')
    return body


class Decoder(object):
    """Turns a byte stream into validated frames.

    ``feed(data)`` returns the frames completed by ``data``; any violation
    raises ProtocolError, after which the stream cannot be trusted: the
    connection must be closed.
    """

    def __init__(self, max_body=MAX_BODY):
        self._buffer = bytearray()
        self._max_body = max_body

    def feed(self, data):
        self._buffer += data
        frames = []
        while len(self._buffer) >= HEADER_SIZE:
            magic, version, type_, flags, session, seq, length, crc = \
                HEADER.unpack_from(self._buffer)
            if magic != MAGIC:
                raise exception.ProtocolError(code='BAD_MAGIC',
                                              reason='not an LSRP stream')
            if version != VERSION:
                raise exception.ProtocolError(
                    code='BAD_VERSION', reason='version %d, this peer speaks '
                    '%d' % (version, VERSION))
            if type_ not in messages.NAMES:
                raise exception.ProtocolError(code='UNKNOWN_TYPE',
                                              reason='type %#x' % type_)
            if flags & ~KNOWN_FLAGS:
                raise exception.ProtocolError(code='BAD_FLAGS',
                                              reason='flags %#x' % flags)
            if length > self._max_body:
                raise exception.ProtocolError(
                    code='TOO_LARGE', reason='body of %d bytes, limit %d'
                    % (length, self._max_body))
            if len(self._buffer) < HEADER_SIZE + length:
                break
            body = bytes(self._buffer[HEADER_SIZE:HEADER_SIZE + length])
            zeroed = bytes(self._buffer[:HEADER_SIZE - 4]) + b'\0\0\0\0'
            if zlib.crc32(body, zlib.crc32(zeroed)) != crc:
                raise exception.ProtocolError(code='BAD_CHECKSUM',
                                              reason='frame seq %d' % seq)
            del self._buffer[:HEADER_SIZE + length]
            fields = _unpack_body(body)
            messages.validate(type_, fields, bool(flags & FLAG_RESPONSE))
            frames.append(Frame(type_, fields, session, seq, flags))
        return frames

    @property
    def pending(self):
        """Bytes of an incomplete frame; non-zero at EOF means truncation."""
        return len(self._buffer)
