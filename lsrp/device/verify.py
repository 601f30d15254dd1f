"""Check a device set without Ceph: every chunk, and every image snapshot.

Every chunk is read, decrypted and checked against its digest (repaired from
parity where needed); then each snapshot of each image is rebuilt in memory
as a map of ranges (chunk or zeros), streamed through the image digest, and
compared with the digest recorded from the source cluster.
"""

from lsrp.device import importer as importer_mod
from lsrp.device import layers as layers_mod
from lsrp.device import reader as reader_mod
from lsrp import exception

# Kept here too: callers and tests that knew them as verify's.
overlay = layers_mod.overlay
layers = layers_mod.layers
image_digest = layers_mod.image_digest


def verify(devices, key_store, expect_digest=None):
    """Return a report dict; raise a VerificationFailed error on damage."""
    devset, crypto, manifest = importer_mod.open_shipment(
        devices, key_store, expect_digest)
    reader = reader_mod.ChunkReader(devset, crypto, manifest)
    try:
        for digest, _ in sorted(manifest.chunks.items(),
                                key=lambda kv: kv[1][:2]):
            reader.read(digest, '(chunk scan)')
        images = []
        for img in manifest.images:
            for snap, segments in layers_mod.layers(img):
                actual = layers_mod.image_digest(reader, segments, snap['size'])
                spec = '%s/%s' % (img['pool'], img['name'])
                if actual != snap['digest']:
                    raise exception.ImageDigestMismatch(
                        shipment=manifest.shipment_id, image=spec,
                        snapshot=snap['name'], where='on the devices',
                        actual=actual,
                        expected=snap['digest'])
                images.append({'image': spec, 'snapshot': snap['name'],
                               'size': snap['size'], 'digest': actual})
    finally:
        reader.close()
        devset.close()
    return {'shipment_id': manifest.shipment_id, 'version': manifest.version,
            'sealed': manifest.sealed, 'chunks': len(manifest.chunks),
            'repaired_chunks': reader.repaired,
            'missing_devices': devset.missing(), 'images': images}
