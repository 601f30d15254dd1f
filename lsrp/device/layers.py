"""An image snapshot as the manifest defines it: layers of runs.

The runs of each snapshot overlay those of the snapshots before it; the
result, a list of segments (a chunk's bytes or zeros), is the whole image at
that snapshot. ``lsrp verify``, the import and the device terminal hash it
to check an image's digest without reading the image from Ceph.
"""

import bisect

from lsrp.device import manifest as manifest_mod
from lsrp import digest as digest_mod


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
