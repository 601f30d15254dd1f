"""Parity across the devices of a shipment.

A stripe of data is cut into k equal shards (padded with zeros to a multiple
of ``ALIGN`` bytes) and m parity shards are added; any k of the k+m shards
rebuild the stripe. Every code here is systematic - the data shards *are*
the data - so a chunk is read straight off one device, without decoding,
whenever that device is present and the chunk checks out.

Codes (the name is recorded in each device's label and in the manifest):

``none``
    m = 0: no parity.
``xor``
    m = 1: the parity shard is the XOR of the data shards (RAID-5). numpy
    does it at memory speed, outside the GIL.
``isa_l_rs_cauchy``
    m >= 2: Reed-Solomon (Cauchy matrix) of Intel's ISA-L through
    liberasurecode and PyECLib (all BSD-licensed; the PyPI wheel of pyeclib
    carries both libraries).
"""

import numpy

from lsrp import exception

# Shard lengths are a multiple of this: whole 64-bit words for XOR, and the
# alignment ISA-L's vector code splits data on.
ALIGN = 64

NONE, XOR, RS = 'none', 'xor', 'isa_l_rs_cauchy'
CODES = (NONE, XOR, RS)


def code_for(m):
    """The code a new shipment with ``m`` parity shards uses."""
    return NONE if m == 0 else XOR if m == 1 else RS


def _words(buf, offset=0, length=None):
    return numpy.frombuffer(buf, dtype=numpy.uint64,
                            count=-1 if length is None else length // 8,
                            offset=offset)


class StripeCoder(object):

    def __init__(self, k, m, code=None):
        self.k, self.m = k, m
        self.n = k + m
        self.code = code or code_for(m)
        if self.code not in CODES or (self.code == NONE) != (m == 0) or (
                self.code == XOR and m != 1):
            raise exception.FedexException(
                'erasure code %r cannot make %d parity shards (known: %s)'
                % (self.code, m, ', '.join(CODES)))
        self._driver = None
        self._headers = (None, None)  # (shard length, fragment headers)
        if self.code == RS:
            self._driver = self._pyeclib(k, m)

    @staticmethod
    def _pyeclib(k, m):
        try:
            from pyeclib import ec_iface
        except ImportError as e:
            raise exception.FedexException(
                'parity over %d devices needs pyeclib (pip install pyeclib): '
                '%s' % (m, e))
        if RS not in ec_iface.VALID_EC_TYPES:
            raise exception.FedexException(
                'parity over %d devices needs the %s code of liberasurecode,'
                ' which this pyeclib lacks (it has: %s); install pyeclib '
                'from PyPI, whose wheel includes ISA-L'
                % (m, RS, ', '.join(ec_iface.VALID_EC_TYPES)))
        return ec_iface.ECDriver(k=k, m=m, ec_type=RS)

    def shard_length(self, data_length):
        length = -(-data_length // self.k)  # ceil
        return -(-length // ALIGN) * ALIGN

    def padding(self, data_length):
        """Zero bytes that make ``data_length`` k whole shards."""
        return self.shard_length(data_length) * self.k - data_length

    def encode(self, data):
        """The n shards of stripe ``data`` (its length: see ``padding``).

        Data shards are views of ``data``; parity shards are new buffers.
        """
        length = self.shard_length(len(data))
        if len(data) != length * self.k:
            data = bytes(data) + bytes(length * self.k - len(data))
        view = memoryview(data)
        shards = [view[i * length:(i + 1) * length] for i in range(self.k)]
        if self.code == XOR:
            parity = _words(data, 0, length).copy()
            for i in range(1, self.k):
                numpy.bitwise_xor(parity, _words(data, i * length, length),
                                  out=parity)
            shards.append(memoryview(parity).cast('B'))
        elif self.code == RS:
            fragments = self._driver.encode(bytes(data))
            header = len(fragments[0]) - length
            shards.extend(memoryview(f)[header:] for f in fragments[self.k:])
        return shards

    def encode_into(self, buf, shard_length):
        """The n shards of a stripe laid out in ``buf``, as views of it.

        ``buf`` holds n shards of ``shard_length`` bytes (a multiple of
        ``ALIGN``): the first k are the stripe's data; the parity is
        computed into the last m. No buffer is made (the writer's are
        page-aligned, for O_DIRECT).
        """
        view = memoryview(buf)
        shards = [view[i * shard_length:(i + 1) * shard_length]
                  for i in range(self.n)]
        if self.code == XOR:
            parity = _words(buf, self.k * shard_length, shard_length)
            numpy.copyto(parity, _words(buf, 0, shard_length))
            for i in range(1, self.k):
                numpy.bitwise_xor(parity,
                                  _words(buf, i * shard_length, shard_length),
                                  out=parity)
        elif self.code == RS:
            fragments = self._driver.encode(bytes(view[:self.k
                                                       * shard_length]))
            header = len(fragments[0]) - shard_length
            for i in range(self.k, self.n):
                shards[i][:] = memoryview(fragments[i])[header:]
        return shards

    def decode(self, shards, data_length):
        """Rebuild stripe data from a {shard index: bytes} of >= k shards."""
        if all(i in shards for i in range(self.k)):
            data = b''.join(shards[i] for i in range(self.k))
            return data[:data_length]
        if len(shards) < self.k:
            raise ValueError('%d shards of %d needed' % (len(shards), self.k))
        length = self.shard_length(data_length)
        if self.code == XOR:
            missing, = [i for i in range(self.k) if i not in shards]
            rebuilt = numpy.zeros(length // 8, dtype=numpy.uint64)
            for i in range(self.n):
                if i != missing:
                    numpy.bitwise_xor(rebuilt, _words(shards[i]), out=rebuilt)
            shards = dict(shards)
            shards[missing] = rebuilt.tobytes()
            return b''.join(shards[i] for i in range(self.k))[:data_length]
        headers = self._fragment_headers(length)
        have = sorted(shards)[:self.k]
        data = self._driver.decode([headers[i] + bytes(shards[i])
                                    for i in have])
        return data[:data_length]

    def _fragment_headers(self, length):
        """liberasurecode's fragment headers for shards of ``length`` bytes.

        Only the parity payloads are stored; the headers depend on the
        shard index and length alone (no checksums are asked for), so they
        are those of any stripe of that length - of zeros, say.
        """
        if self._headers[0] != length:
            fragments = self._driver.encode(bytes(length * self.k))
            header = len(fragments[0]) - length
            self._headers = (length, [f[:header] for f in fragments])
        return self._headers[1]
