"""Parity across the devices of a shipment (Reed-Solomon, via zfec).

A stripe of data is cut into k equal shards (the last padded with zeros) and
m parity shards are added; any k of the k+m shards rebuild the stripe. zfec's
code is systematic by contract - the first k blocks it returns *are* the data
shards - so a chunk is read straight off one device, without decoding,
whenever that device is present and the chunk checks out.
"""

import zfec


class StripeCoder(object):

    def __init__(self, k, m):
        self.k, self.m = k, m
        self.n = k + m
        self._encoder = zfec.Encoder(k, self.n) if m else None

    def shard_length(self, data_length):
        return -(-data_length // self.k)  # ceil

    def encode(self, data):
        """Cut ``data`` into k data shards and add m parity shards."""
        length = self.shard_length(len(data))
        view = memoryview(data)
        shards = [view[i * length:(i + 1) * length] for i in range(self.k)]
        # Only the tail of a stripe is short: pad just the shards there.
        shards = [s if len(s) == length else bytes(s) + bytes(length - len(s))
                  for s in shards]
        if not self.m:
            return shards
        return self._encoder.encode(shards, list(range(self.n)))

    def decode(self, shards, data_length):
        """Rebuild stripe data from a {shard index: bytes} of >= k shards."""
        if all(i in shards for i in range(self.k)):
            data = b''.join(shards[i] for i in range(self.k))
            return data[:data_length]
        have = sorted(shards)[:self.k]
        decoder = zfec.Decoder(self.k, self.n)
        blocks = decoder.decode([shards[i] for i in have], have)
        return b''.join(blocks)[:data_length]
