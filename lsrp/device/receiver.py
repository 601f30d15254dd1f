"""A device set written at a terminal from images that arrive over LSRP.

The thesis' Export Server at the source terminal: the host that can read
the disks (``lsrp export --remote``) streams each image to the terminal
the devices are plugged into, which writes them as a local export would -
same format, same journal, same record - so ``seal``, ``verify``, ``show``
and ``import`` work on the result unchanged.

The shipment is declared at that terminal first (``lsrp authorize
--device ...``): its images, devices and parity. Its key is made there and
stays in that terminal's key store. Images are received one at a time; one
snapshot of every image makes a manifest version (the seed: version 1; each
later snapshot: the thesis' delta consolidation). Progress is the writer's
journal, so the offset a resumed session is told survives a restart of the
terminal too.
"""

import fcntl
import os

from oslo_log import log as logging

from lsrp import access
from lsrp.device import crypto as crypto_mod
from lsrp.device import deviceset as deviceset_mod
from lsrp.device import export as export_mod
from lsrp.device import layers as layers_mod
from lsrp.device import manifest as manifest_mod
from lsrp.device import reader as reader_mod
from lsrp.device import record as record_mod
from lsrp.device import writer as writer_mod
from lsrp import digest as digest_mod
from lsrp import exception
from lsrp import sink

LOG = logging.getLogger(__name__)


def declare(state_dir, key_store, shipment_id, images, devices, parity=None,
            chunk_size=64 << 10, peers=None):
    """Make the record of a shipment this terminal will receive.

    Declaring the same shipment again with the same layout does nothing.
    """
    record = record_mod.ShipmentRecord(state_dir, shipment_id)
    devices, parity = export_mod.device_layout(shipment_id, devices, parity)
    wanted = {'images': list(images), 'devices': devices, 'parity': parity,
              'chunk_size': chunk_size}
    if record.exists():
        export_mod.check_same(shipment_id, record.load(), wanted,
                              'declaring again')
        if peers is not None:
            access.authorize(state_dir, shipment_id, images,
                             sink='devices', peers=peers)
        return
    key_store.create(shipment_id)
    record.save(dict(wanted, shipment_id=shipment_id, state='receiving',
                     snapshots=[], versions=[], received={}))
    access.authorize(state_dir, shipment_id, images, sink='devices',
                     peers=peers)


def _protocol(code, reason):
    return exception.ProtocolError(code=code, reason=reason)


class DeviceSetSink(sink.Sink):
    """Receives the rounds of one image of a declared shipment.

    One stream only: the writer needs the image's blocks in offset order.
    No group commits: a manifest version is one already.
    """

    parallel_streams = False
    # Progress is the journal on disk: nothing to keep in memory for a
    # resume, and the shipment's lock is let go at once.
    durable_progress = True

    def __init__(self, state_dir, key_store, shipment_id, spec, peer,
                 shard_size=4 << 20, zstd_level=1, workers=2,
                 checkpoint_bytes=256 << 20, compression='lz4',
                 lz4_acceleration=crypto_mod.LZ4_ACCELERATION):
        self.record = record_mod.ShipmentRecord(state_dir, shipment_id)
        self.rec = self.record.load()
        self.key_store = key_store
        self.shipment_id = shipment_id
        self.spec = spec
        self.peer = peer
        self.index = self.rec['images'].index(spec)
        self.shard_size = shard_size
        self.zstd_level = zstd_level
        self.compression = compression
        self.lz4_acceleration = lz4_acceleration
        self.workers = workers
        self.checkpoint_bytes = checkpoint_bytes
        self.writer = None
        self.snap = None       # index of the snapshot being received
        self.size = None       # its size
        self.ordered = None    # its digest as it arrives, if from the start
        self._lock = None

    # --- what is here -------------------------------------------------------

    def _done(self):
        return self.rec['snapshots'][:len(self.rec['versions'])]

    def info(self):
        done = self._done()
        if not done:
            return 0, None
        return self.rec['received'][done[-1]][self.spec]['size'], done[-1]

    # --- a round ---------------------------------------------------------------

    def start(self, snapshot, from_snapshot, size, resume=0, image=None,
              proof=None):
        """Open the version ``snapshot`` belongs to; the offset to go on from.

        That offset is the journal's, not ``resume``: it is durable here.
        """
        self._close_writer()
        self._take_lock()
        # Another image's session may have moved the shipment on.
        rec = self.rec = self.record.load()
        if rec['state'] in ('sealing', 'sealed'):
            raise _protocol('NOT_ALLOWED', 'shipment %s is sealed'
                            % self.shipment_id)
        done = self._done()
        if snapshot in done:
            return size
        if len(rec['snapshots']) > len(done):
            pending = rec['snapshots'][-1]
            if pending != snapshot:
                raise _protocol('BAD_STATE', 'the devices of %s are taking '
                                'snapshot %s of every image: send that first'
                                % (self.shipment_id, pending))
        base = done[-1] if done else None
        if from_snapshot != base:
            raise _protocol('BAD_STATE', 'the devices of %s hold %s up to %s;'
                            ' a round from %s does not follow' % (
                                self.shipment_id, self.spec, base,
                                from_snapshot))
        if base is None and not (image and 'object_size' in image
                                 and 'features' in image):
            raise _protocol('BAD_FIELD', 'the first snapshot of %s on devices'
                            ' needs the image\'s object_size and features'
                            % self.spec)
        if len(rec['snapshots']) == len(done):
            rec['snapshots'].append(snapshot)
            rec['state'] = 'receiving'
        info = {'size': size}
        info.update(image or {})
        rec['received'].setdefault(snapshot, {})[self.spec] = info
        self.record.save(rec)
        self._open_writer()
        if self.writer.is_done(self.index, self.snap):
            return size
        offset = self.writer.resume_offset(self.index, self.snap)
        # A seed received from its start is checked on the way; anything
        # else is read back from the devices at the end.
        self.ordered = (digest_mod.OrderedDigest()
                        if base is None and offset == 0 else None)
        self.size = size
        return offset

    def _take_lock(self):
        if self._lock is not None:
            return
        path = os.path.join(self.record.dir, 'receive.lock')
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise _protocol('BAD_STATE', 'another image of %s is being '
                            'written to its devices: one at a time'
                            % self.shipment_id)
        self._lock = fd

    def _open_writer(self):
        rec = self.rec
        version = len(rec['versions']) + 1
        snapshot = rec['snapshots'][-1]
        received = rec['received'][snapshot]
        devices = rec['devices']
        if version == 1:
            key = self.key_store.get(self.shipment_id)
            crypto = crypto_mod.ShipmentCrypto(
                key, self.shipment_id, self.zstd_level, self.compression,
                self.lz4_acceleration)
            devset = deviceset_mod.DeviceSet.create(
                devices, self.shipment_id, len(devices) - rec['parity'],
                rec['parity'], crypto.key_check)
            manifest = manifest_mod.Manifest.new(
                self.shipment_id, {'terminal': self.peer}, rec['chunk_size'],
                devset.k, devset.m,
                [devset.labels[i]['device_id'] for i in range(devset.n)],
                self.shard_size, compression=crypto.compression)
            for spec in rec['images']:
                pool, name = spec.split('/', 1)
                info = received.get(spec, {})
                manifest.images.append({
                    'pool': pool, 'name': name,
                    'object_size': info.get('object_size'),
                    'features': info.get('features'), 'snapshots': []})
        else:
            devset = deviceset_mod.DeviceSet.open(devices)
            crypto = export_mod.open_crypto(devset, self.key_store,
                                            self.zstd_level, self.compression,
                                            self.lz4_acceleration)
            manifest, _ = export_mod.load_manifest(devset, crypto)
        previous = rec['snapshots'][-2] if version > 1 else None
        for spec, img in zip(rec['images'], manifest.images):
            img['snapshots'].append({
                'name': snapshot, 'from': previous,
                'size': received.get(spec, {}).get('size'), 'digest': None,
                'runs': []})
        self.snap = version - 1
        self.writer = writer_mod.ShipmentWriter(
            devset, crypto, manifest, self.record.journal(version),
            self.shard_size, self.workers, self.checkpoint_bytes)

    def has_snapshot(self, snapshot):
        return snapshot in self._done()

    def differing(self, offset, block, digests):
        # Nothing here to compare with: every block is wanted.
        return list(range(len(digests)))

    def write(self, offset, data):
        self.writer.add_data(offset, data)
        self.writer.end_piece(self.index, self.snap, offset + len(data))
        if self.ordered is not None:
            self.ordered.data(offset, data)

    def zero(self, offset, length):
        self.writer.add_zeros(offset, length)
        self.writer.end_piece(self.index, self.snap, offset + length)
        if self.ordered is not None:
            self.ordered.zeros(offset, length)

    def complete(self, snapshot, digest=None, final=False):
        """This image is whole at ``snapshot``; checked, read back.

        The image is read back from the devices and its digest compared;
        the last image of the snapshot writes the manifest version.
        """
        if not digest:
            raise _protocol('BAD_STATE', '%s: a device set needs the image '
                            'digest of every snapshot' % self.spec)
        writer = self.writer
        writer.flush()
        actual = self.ordered and self.ordered.hexdigest(self.size)
        how = 'arrived with'
        if actual is None:
            actual = self._digest_on_devices(writer)
            how = 'reads back from the devices as'
        if actual != digest:
            # Resuming over this content would never match: drop it.
            writer.reset(self.index, self.snap)
            raise _protocol('DIGEST_MISMATCH', '%s@%s %s digest %s, the '
                            'source says %s; what was received of it is '
                            'dropped: send it again' % (
                                self.spec, snapshot, how, actual, digest))
        writer.end_snapshot(self.index, self.snap, digest)
        writer.flush()
        manifest = writer.manifest
        if all(writer.is_done(i, self.snap)
               for i in range(len(manifest.images))):
            self._write_version(writer)
        self._close_writer()
        return digest

    def _digest_on_devices(self, writer):
        manifest = writer.manifest
        *_, (snap, segments) = layers_mod.layers(manifest.images[self.index])
        reader = reader_mod.ChunkReader(writer.devset, writer.crypto,
                                        manifest)
        try:
            return layers_mod.image_digest(reader, segments, snap['size'])
        finally:
            reader.close()

    def _write_version(self, writer):
        rec = self.rec
        version = len(rec['versions']) + 1
        manifest = writer.manifest
        manifest.data['version'] = version
        writer.devset.write_manifest(version, manifest.to_blob(writer.crypto))
        rec['versions'].append(version)
        rec['state'] = 'exported'
        self.record.save(rec)
        LOG.info('%s: manifest version %d written (%s): %d chunks',
                 self.shipment_id, version, rec['snapshots'][-1],
                 len(manifest.chunks))

    def abort(self):
        """The round did not complete: its progress stays journaled."""
        self._close_writer()

    def _close_writer(self):
        if self.writer is not None:
            writer, self.writer = self.writer, None
            try:
                writer.flush()
            finally:
                writer.close()

    def close(self):
        try:
            self._close_writer()
        finally:
            if self._lock is not None:
                os.close(self._lock)
                self._lock = None
