"""Check a device set without Ceph: every chunk, and every image snapshot.

Every chunk is read, decrypted and checked against its digest (repaired from
parity where needed); then each snapshot of each image is rebuilt in memory
as a map of ranges (chunk or zeros), streamed through the image digest, and
compared with the digest recorded from the source cluster.
"""

import bisect

from lsrp.device import importer as importer_mod
from lsrp.device import manifest as manifest_mod
from lsrp.device import reader as reader_mod
from lsrp import digest as digest_mod
from lsrp import exception


def overlay(segments, runs):
    """Apply sorted, non-overlapping runs over a sorted segment list.

    A segment is ``(start, end, digest or None, chunk_start)``: bytes
    [start, end) are bytes [start - chunk_start, ...) of that chunk, or zeros.
    """
    out = []
    starts = [s[0] for s in segments]
    pos = 0
    for run in runs:
        kind, offset, length = run[0], run[1], run[2]
        end = offset + length
        # Copy old segments before the run, cutting the one it overlaps.
        i = max(bisect.bisect_right(starts, pos) - 1, 0)
        while i < len(segments) and segments[i][0] < offset:
            s, e, d, c = segments[i]
            s, e = max(s, pos), min(e, offset)
            if s < e:
                out.append((s, e, d, c))
            i += 1
        digest = run[3] if kind == manifest_mod.DATA else None
        out.append((offset, end, digest, offset))
        pos = end
    i = max(bisect.bisect_right(starts, pos) - 1, 0)
    for s, e, d, c in segments[i:]:
        s = max(s, pos)
        if s < e:
            out.append((s, e, d, c))
    return out


def layers(img):
    """Yield ``(snapshot, segments)`` for each snapshot of a manifest image.

    The segments are the runs of every snapshot up to it, overlaid, cut at
    its size.
    """
    segments = []
    for snap in img['snapshots']:
        segments = [s for s in overlay(segments, snap['runs'])
                    if s[0] < snap['size']]
        yield snap, segments


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
            for snap, segments in layers(img):
                actual = image_digest(reader, segments, snap['size'])
                spec = '%s/%s' % (img['pool'], img['name'])
                if actual != snap['digest']:
                    raise exception.ImageDigestMismatch(
                        shipment=manifest.shipment_id, image=spec,
                        snapshot=snap['name'], actual=actual,
                        expected=snap['digest'])
                images.append({'image': spec, 'snapshot': snap['name'],
                               'size': snap['size'], 'digest': actual})
    finally:
        devset.close()
    return {'shipment_id': manifest.shipment_id, 'version': manifest.version,
            'sealed': manifest.sealed, 'chunks': len(manifest.chunks),
            'repaired_chunks': reader.repaired,
            'missing_devices': devset.missing(), 'images': images}


def image_digest(reader, segments, size):
    """The image digest of a snapshot rebuilt as ``segments``."""
    hasher = digest_mod.new_hash('blake3')
    pos = 0
    cached = (None, None)
    for start, end, digest, chunk_start in segments:
        end = min(end, size)
        if start > pos:
            digest_mod.update_zeros(hasher, start - pos)
        if digest is None:
            digest_mod.update_zeros(hasher, end - start)
        else:
            if cached[0] != digest:
                cached = (digest, reader.read(digest, '(digest)', start))
            hasher.update(cached[1][start - chunk_start:end - chunk_start])
        pos = end
    if pos < size:
        digest_mod.update_zeros(hasher, size - pos)
    return hasher.hexdigest()
