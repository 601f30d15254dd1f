"""One snapshot of an image on a device set, as a ``lsrp.source.Source``.

What ``lsrp import --remote`` sends to the terminal next to the destination
cluster: the runs the manifest records for the snapshot (the changes since
the snapshot before it), or the whole image rebuilt from every snapshot up
to it. Chunks are read, decrypted and checked against their digests by the
``ChunkReader`` (repaired from parity where needed).
"""

from lsrp.device import importer as importer_mod
from lsrp.device import layers as layers_mod
from lsrp.device import manifest as manifest_mod
from lsrp import exception
from lsrp.rbd.extents import Extent
from lsrp import source


class DeviceSetImage(source.Source):
    """Snapshot ``snap_index`` of image ``index`` of a manifest.

    The ``reader`` belongs to the caller, who closes it.
    """

    def __init__(self, reader, manifest, index, snap_index):
        self.reader = reader
        self.manifest = manifest
        self.index = index
        self.snap_index = snap_index
        self.img = manifest.images[index]
        self.snap = self.img['snapshots'][snap_index]
        self.spec = '%s/%s@%s' % (self.img['pool'], self.img['name'],
                                  self.snap['name'])

    def size(self):
        return self.snap['size']

    def describe(self):
        return {'object_size': self.img.get('object_size'),
                'features': self.img.get('features')}

    def changes(self, from_snapshot, start=0):
        if from_snapshot == self.snap['from']:
            return self._runs(start)
        if from_snapshot is None:
            return self._whole(start)
        raise exception.ShipmentError(
            shipment=self.manifest.shipment_id, reason='%s: the devices hold '
            'the changes since %s, not since %s' % (
                self.spec, self.snap['from'], from_snapshot))

    def _runs(self, start):
        for group in importer_mod.write_groups(self.snap['runs']):
            if group[-1][1] + group[-1][2] <= start:
                continue
            if group[0][0] == manifest_mod.ZERO:
                for run in group:
                    yield Extent(run[1], run[2], False), None
                continue
            data = b''.join(self.reader.read_many(
                [(r[3], self.spec, r[1]) for r in group]))
            yield Extent(group[0][1], len(data), True), data

    def _whole(self, start):
        layers = layers_mod.layers(self.img)
        for _ in range(self.snap_index + 1):
            _, segments = next(layers)
        size = self.size()
        pending, offset = [], None
        for begin, end, digest, chunk_start in segments:
            end = min(end, size)
            if end <= max(begin, start):
                continue
            if digest is None:
                if pending:
                    yield Extent(offset, sum(map(len, pending)), True), \
                        b''.join(pending)
                    pending = []
                yield Extent(begin, end - begin, False), None
                continue
            if pending and (offset + sum(map(len, pending)) != begin or
                            sum(map(len, pending)) >= importer_mod.WRITE_BATCH):
                yield Extent(offset, sum(map(len, pending)), True), \
                    b''.join(pending)
                pending = []
            if not pending:
                offset = begin
            chunk = self.reader.read(digest, self.spec, begin)
            pending.append(chunk[begin - chunk_start:end - chunk_start])
        if pending:
            yield Extent(offset, sum(map(len, pending)), True), \
                b''.join(pending)

    def digest(self, algorithm):
        recorded = self.manifest.data.get('image_digest', 'blake3')
        if algorithm != recorded:
            raise exception.ShipmentError(
                shipment=self.manifest.shipment_id, reason='%s: the devices '
                'record the %s digest of each snapshot, not %s' % (
                    self.spec, recorded, algorithm))
        return self.snap['digest']

    def close(self):
        """Nothing to let go: the reader is the caller's."""
