"""The manifest: everything a shipment holds and how to find it.

Stored on every device as ``MAGIC | version | AES-GCM(zstd(JSON))``: the
authentication tag is the signature (only holders of the shipment key can
make or read one), and a SHA-256 of the whole blob, recorded by ``seal``, pins
the exact final version for the receiver. Layout of the JSON: see
``doc/source/device-format.rst``.
"""

import json
import struct
import time

import zstandard

from lsrp.device import erasure
from lsrp import exception

MAGIC = b'FEDEXMF1'
HEADER = struct.Struct('>8sI')
FORMAT_VERSION = 2

# A run of an image snapshot: data chunk, or zeros.
DATA, ZERO = 'd', 'z'


class Manifest(object):

    def __init__(self, data):
        self.data = data

    @classmethod
    def new(cls, shipment_id, source, chunk_size, k, m, device_ids,
            shard_size, code=None, compression='lz4'):
        return cls({
            'format': 'fedex-shipment', 'format_version': FORMAT_VERSION,
            'shipment_id': shipment_id, 'version': 0, 'sealed': False,
            'created_at': time.time(), 'source': source,
            'chunk_size': chunk_size, 'chunk_digest': 'blake3-keyed',
            'image_digest': 'blake3',
            # Of new chunks; each record's flags say how it is stored.
            'compression': compression,
            'cipher': 'AES-256-GCM',
            'erasure': {'code': code or erasure.code_for(m),
                        'data_shards': k,
                        'parity_shards': m, 'shard_size': shard_size},
            'devices': device_ids,
            # [data length, shard length, offset in shards.dat]
            'stripes': [],
            # chunk digest -> [stripe, offset in stripe data, record length]
            'chunks': {},
            'images': [],
        })

    # --- accessors ---------------------------------------------------------

    shipment_id = property(lambda self: self.data['shipment_id'])
    version = property(lambda self: self.data['version'])
    sealed = property(lambda self: self.data['sealed'])
    chunk_size = property(lambda self: self.data['chunk_size'])
    stripes = property(lambda self: self.data['stripes'])
    chunks = property(lambda self: self.data['chunks'])
    images = property(lambda self: self.data['images'])

    def shards_end(self):
        """Bytes of shards.dat on each device that the manifest accounts for."""
        if not self.stripes:
            return 0
        _, shard_length, offset = self.stripes[-1]
        return offset + shard_length

    def snapshot_names(self):
        """Names of the snapshots in shipping order (same for every image)."""
        return [s['name'] for s in self.images[0]['snapshots']] \
            if self.images else []

    def payload_bytes(self):
        return sum(length for _, _, length in self.chunks.values())

    # --- storage ---------------------------------------------------------

    def to_blob(self, crypto):
        plain = zstandard.ZstdCompressor(level=6).compress(
            json.dumps(self.data, separators=(',', ':')).encode())
        return HEADER.pack(MAGIC, self.version) + crypto.seal_manifest(plain)

    @classmethod
    def from_blob(cls, blob, crypto, where):
        try:
            magic, version = HEADER.unpack_from(blob)
        except struct.error:
            magic, version = None, None
        if magic != MAGIC:
            raise exception.ManifestTampered(shipment=crypto.shipment_id,
                                             device=where)
        plain = crypto.open_manifest(blob[HEADER.size:])
        if plain is None:
            raise exception.ManifestTampered(shipment=crypto.shipment_id,
                                             device=where)
        data = json.loads(zstandard.ZstdDecompressor().decompress(plain))
        if data.get('version') != version or \
                data.get('shipment_id') != crypto.shipment_id:
            raise exception.ManifestTampered(shipment=crypto.shipment_id,
                                             device=where)
        return cls(data)
