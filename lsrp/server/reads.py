"""A terminal as a source: the reads lsrp-server serves (READ_* requests).

A peer that the shipment's access list allows (``lsrp.access``, the same
list that lets it send) opens an image of this site's cluster at a snapshot
(READ_OPEN), asks for its changes since an earlier snapshot or all of it,
from an offset (READ_CHANGES), and takes the pieces one READ_NEXT at a time;
the last piece carries the image's BLAKE3 digest when asked. Every method
blocks (librbd): the handler runs them in its worker threads.
"""

from lsrp import digest as digest_mod
from lsrp import exception
from lsrp.server import records

# The largest piece a READ_NEXT answer carries (a frame holds 16 MiB).
PIECE = 4 << 20
ALGORITHMS = ('blake3', 'sha256')


class ImageRead(object):
    """One image of this site at one snapshot, read by one connection."""

    def __init__(self, cluster, disk, snapshot):
        self.disk, self.snapshot = disk, snapshot
        self.where = '%s@%s at %s' % (disk, snapshot, cluster.site)
        image_at = '%s at %s' % (disk, cluster.site)
        pool_name, name = disk.split('/', 1)
        self._pool = cluster.pool(pool_name)
        try:
            if not self._pool.image_exists(name):
                raise exception.ProtocolError(
                    code='BAD_STATE', reason='no image %s' % image_at)
            try:
                self._image = self._pool.open_image(name, snapshot=snapshot)
            except exception.SnapshotNotFound:
                # A cutover's final state: in its record, once complete.
                if not records.complete(self._pool, name, snapshot):
                    raise exception.ProtocolError(
                        code='BAD_STATE', reason='%s has no snapshot %s, '
                        'nor a complete record of it (%s)' % (
                            image_at, snapshot,
                            records.record_name(name, snapshot)))
                self._image = self._pool.open_image(
                    records.record_name(name, snapshot), snapshot=snapshot)
        except BaseException:
            self._pool.close()
            raise
        self._pieces = None
        self._digest = None     # OrderedDigest of a stream from offset 0
        self._with_digest = False
        self._blake3 = None

    def describe(self):
        """READ_OPEN's answer, without the read id."""
        body = {'size': self._image.size()}
        for key, value in self._image.describe().items():
            if value is not None:
                body[key] = value
        return body

    def start(self, from_snapshot, offset, with_digest):
        """READ_CHANGES: a new stream of pieces replaces any earlier one."""
        self._stop()
        if from_snapshot is not None and not self._image.snapshot_exists(
                from_snapshot):
            raise exception.ProtocolError(
                code='BAD_STATE', reason='%s: no snapshot %s to read the '
                'changes from' % (self.where, from_snapshot))
        self._pieces = iter(self._image.changes(from_snapshot, start=offset,
                                                chunk_size=PIECE))
        # A whole image sent from its start is hashed on the way; anything
        # else (a delta, a resumed stream) is read once more at the end.
        self._digest = (digest_mod.OrderedDigest('blake3')
                        if from_snapshot is None and offset == 0 else None)
        self._with_digest = with_digest
        return offset

    def next(self):
        """READ_NEXT: the next piece, or the end (``last``)."""
        if self._pieces is None:
            raise exception.ProtocolError(
                code='BAD_STATE', reason='%s: READ_NEXT before READ_CHANGES'
                % self.where)
        for piece, data in self._pieces:
            body = {'offset': piece.offset, 'length': piece.length}
            if data is not None:
                body['data'] = data
                body['digest'] = digest_mod.block_digest(data)
            if self._digest is not None:
                if data is None:
                    self._digest.zeros(piece.offset, piece.length)
                else:
                    self._digest.data(piece.offset, data)
            return body
        body = {'offset': self._image.size(), 'length': 0, 'last': True}
        if self._with_digest:
            body['image_digest'] = self._image_digest()
        return body

    def _image_digest(self):
        if self._blake3 is None and self._digest is not None:
            self._blake3 = self._digest.hexdigest(self._image.size())
        if self._blake3 is None:
            self._blake3 = self._image.digest('blake3')
        self._digest = None
        return self._blake3

    def digest(self, algorithm):
        """READ_DIGEST: the whole image's digest, holes as zeros."""
        if algorithm not in ALGORITHMS:
            raise exception.ProtocolError(
                code='NOT_ALLOWED', reason='digest algorithm %r: one of %s'
                % (algorithm[:32], ', '.join(ALGORITHMS)))
        if algorithm == 'blake3' and self._blake3:
            return self._blake3
        return self._image.digest(algorithm)

    def _stop(self):
        pieces, self._pieces = self._pieces, None
        if pieces is not None and hasattr(pieces, 'close'):
            pieces.close()

    def close(self):
        try:
            self._stop()
            self._image.close()
        finally:
            self._pool.close()
