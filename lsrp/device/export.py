"""Export: RBD snapshots of a shipment's images -> its device set.

``export`` writes manifest version 1 with one snapshot per image;
``consolidate`` appends what changed up to a newer snapshot as version N+1
(the thesis' delta consolidation); ``seal`` writes the final version and
returns its digest. All three resume from their journal after a crash.
"""

import os
import uuid

from oslo_log import log as logging

from lsrp.device import crypto as crypto_mod
from lsrp.device import deviceset as deviceset_mod
from lsrp.device import manifest as manifest_mod
from lsrp.device import record as record_mod
from lsrp.device import serial as serial_mod
from lsrp.device import writer as writer_mod
from lsrp import digest as digest_mod
from lsrp import exception
from lsrp import progress as progress_mod

LOG = logging.getLogger(__name__)

# 4 MiB pieces read ahead of the writer: enough to keep librbd busy; each
# piece is held until the writer has sealed it, so few (peak RSS).
READ_AHEAD = 4


def default_parity(devices):
    return 1 if devices >= 3 else 0


def device_layout(shipment_id, devices, parity):
    """The devices as absolute paths, and the parity (checked, defaulted)."""
    devices = [os.path.abspath(d) for d in devices]
    if parity is None:
        parity = default_parity(len(devices))
    if not 0 <= parity < len(devices):
        raise exception.ShipmentError(
            shipment=shipment_id, reason='parity must be between 0 and %d '
            'for %d devices' % (len(devices) - 1, len(devices)))
    return devices, parity


def check_same(shipment_id, rec, wanted, doing):
    """Raise unless the record was made with the ``wanted`` values."""
    for key, value in wanted.items():
        if rec.get(key) != value:
            raise exception.ShipmentError(
                shipment=shipment_id, reason='%s with %s=%s, but it was '
                'started with %s' % (doing, key, value, rec.get(key)))


def new_shipment_id():
    return 'fedex-%s' % uuid.uuid4().hex[:12]


def load_manifest(devset, crypto):
    """The newest manifest, authenticated on every device that holds one.

    Returns ``(manifest, blob)``.
    """
    blobs = devset.manifest_blobs()
    if not blobs:
        raise exception.ShipmentError(shipment=devset.shipment_id,
                                      reason='no manifest on the devices: '
                                      'the export did not finish')
    newest = max(version for version, _ in blobs.values())
    chosen = None
    # The devices hold copies of one manifest: bytes equal to a copy that
    # was authenticated are authentic (AES-GCM), and are not decrypted,
    # decompressed and parsed again (0.06 s a copy for 2 GiB of data).
    opened = {}
    for index, (version, blob) in sorted(blobs.items()):
        manifest = opened.get(blob)
        if manifest is None:
            manifest = opened[blob] = manifest_mod.Manifest.from_blob(
                blob, crypto, devset.describe(index))
        if manifest.version != version:
            # Authentic, but under another version's name (files renamed
            # or swapped on the device): not the manifest that file is.
            raise exception.ManifestTampered(
                shipment=devset.shipment_id, device='%s (%s holds version '
                '%d)' % (devset.describe(index),
                         deviceset_mod.manifest_name(version),
                         manifest.version))
        if version == newest and chosen is None:
            chosen = (manifest, blob)
    return chosen


def open_crypto(devset, key_store, zstd_level=1, compression='lz4',
                lz4_acceleration=crypto_mod.LZ4_ACCELERATION):
    key = key_store.get(devset.shipment_id)
    crypto = crypto_mod.ShipmentCrypto(key, devset.shipment_id, zstd_level,
                                       compression, lz4_acceleration)
    if crypto.key_check != devset.key_check:
        raise exception.WrongKey(shipment=devset.shipment_id,
                                 store=key_store)
    return crypto


class Exporter(object):
    """Writes and refreshes the devices of one shipment from a site."""

    def __init__(self, cluster, key_store, state_dir, shard_size=4 << 20,
                 zstd_level=1, workers=2, read_workers=4, progress=None,
                 checkpoint_bytes=256 << 20, compression='lz4',
                 lz4_acceleration=crypto_mod.LZ4_ACCELERATION):
        self.cluster = cluster
        self.key_store = key_store
        self.state_dir = state_dir
        self.shard_size = shard_size
        self.zstd_level = zstd_level
        self.compression = compression
        self.lz4_acceleration = lz4_acceleration
        self.workers = workers
        self.read_workers = read_workers
        self.progress = progress or progress_mod.Progress('none')
        self.checkpoint_bytes = checkpoint_bytes

    # --- export -----------------------------------------------------------

    def export(self, images, snapshot, devices, shipment_id=None, parity=None,
               chunk_size=64 << 10, create_snapshot=False):
        """Export ``images`` (``pool/name``) at ``snapshot`` onto ``devices``.

        Run again with the same arguments after a crash: it resumes.
        Returns the shipment id.
        """
        shipment_id = shipment_id or new_shipment_id()
        record = record_mod.ShipmentRecord(self.state_dir, shipment_id)
        devices, parity = device_layout(shipment_id, devices, parity)
        wanted = {'images': list(images), 'snapshots': [snapshot],
                  'devices': devices, 'parity': parity,
                  'chunk_size': chunk_size}
        if record.exists():
            rec = record.load()
            check_same(shipment_id, rec, wanted, 'resuming')
            if rec['state'] != 'exporting':
                LOG.info('%s: already exported', shipment_id)
                return shipment_id
            key = self.key_store.get(shipment_id)
        else:
            if create_snapshot:
                self.cluster.snapshot_images(images, snapshot)
            key = self.key_store.create(shipment_id)
            rec = dict(wanted, shipment_id=shipment_id, state='exporting',
                       source={'site': self.cluster.site,
                               'fsid': self.cluster.fsid},
                       versions=[])
            record.save(rec)
        crypto = crypto_mod.ShipmentCrypto(key, shipment_id, self.zstd_level,
                                           self.compression,
                                           self.lz4_acceleration)
        devset = deviceset_mod.DeviceSet.create(
            devices, shipment_id, len(devices) - parity, parity,
            crypto.key_check)
        manifest = manifest_mod.Manifest.new(
            shipment_id, rec['source'], chunk_size, devset.k, devset.m,
            [devset.labels[i]['device_id'] for i in range(devset.n)],
            self.shard_size, compression=crypto.compression)
        for spec in images:
            manifest.images.append(self._describe(spec, snapshot))
        self._write_version(record, rec, devset, crypto, manifest, 1,
                            snapshot, None)
        return shipment_id

    def _describe(self, spec, snapshot):
        pool_name, name = spec.split('/', 1)
        with self.cluster.pool(pool_name) as pool:
            with pool.open_image(name, snapshot=snapshot) as img:
                info = img.info()
        return {'pool': pool_name, 'name': name,
                'object_size': info.object_size,
                'features': info.feature_names,
                'snapshots': [{'name': snapshot, 'from': None,
                               'size': info.size, 'digest': None,
                               'runs': []}]}

    # --- consolidate --------------------------------------------------------

    def consolidate(self, shipment_id, snapshot, create_snapshot=False):
        """Append the changes up to ``snapshot`` as a new manifest version."""
        record = record_mod.ShipmentRecord(self.state_dir, shipment_id)
        rec = record.load()
        if rec['state'] == 'sealed':
            raise exception.ShipmentSealed(shipment=shipment_id)
        if rec['state'] == 'exporting':
            raise exception.ShipmentError(
                shipment=shipment_id, reason='the export has not finished: '
                'run the same export command again first')
        devset = deviceset_mod.DeviceSet.open(rec['devices'])
        if devset.missing():
            raise exception.DevicesMissing(
                shipment=shipment_id, missing=', '.join(
                    'device %d' % i for i in devset.missing()),
                parity=0, total=devset.n)
        crypto = open_crypto(devset, self.key_store, self.zstd_level,
                             self.compression, self.lz4_acceleration)
        manifest, _ = load_manifest(devset, crypto)
        version = manifest.version
        if len(rec['versions']) < len(rec['snapshots']):
            # A consolidation was interrupted: only that one may go on.
            if rec['snapshots'][-1] != snapshot:
                raise exception.ShipmentError(
                    shipment=shipment_id, reason='the consolidation to %s '
                    'did not finish: run it again first'
                    % rec['snapshots'][-1])
        elif snapshot == rec['snapshots'][-1]:
            LOG.info('%s: %s already consolidated', shipment_id, snapshot)
            return version
        elif snapshot in rec['snapshots']:
            raise exception.ShipmentError(
                shipment=shipment_id, reason='snapshot %s is already in the '
                'shipment' % snapshot)
        else:
            if create_snapshot:
                self.cluster.snapshot_images(rec['images'], snapshot)
            rec['snapshots'].append(snapshot)
            record.save(rec)
        previous = manifest.snapshot_names()[-1]
        for img in manifest.images:
            with self.cluster.pool(img['pool']) as pool:
                with pool.open_image(img['name'], snapshot=snapshot) as i:
                    size = i.size()
            img['snapshots'].append({'name': snapshot, 'from': previous,
                                     'size': size, 'digest': None,
                                     'runs': []})
        self._write_version(record, rec, devset, crypto, manifest,
                            version + 1, snapshot, previous)
        return version + 1

    # --- seal -------------------------------------------------------------

    def seal(self, shipment_id):
        """Write the final manifest and return its SHA-256.

        Give the digest to the receiver. Sealing twice returns the same one.
        """
        record = record_mod.ShipmentRecord(self.state_dir, shipment_id)
        rec = record.load()
        if rec['state'] == 'sealed':
            return rec['manifest_digest']
        if rec['state'] == 'exporting':
            raise exception.ShipmentError(
                shipment=shipment_id, reason='the export has not finished')
        devset = deviceset_mod.DeviceSet.open(rec['devices'])
        crypto = open_crypto(devset, self.key_store)
        manifest, _ = load_manifest(devset, crypto)
        manifest.data['sealed'] = True
        manifest.data['version'] += 1
        blob = manifest.to_blob(crypto)
        digest = digest_mod.manifest_digest(blob)
        # Record the digest first: a crash between the two leaves a record
        # that names a manifest that is then written by the next seal.
        rec.update(state='sealing', manifest_digest=digest)
        record.save(rec)
        devset.write_manifest(manifest.version, blob)
        rec['state'] = 'sealed'
        record.save(rec)
        return digest

    # --- the shared path ------------------------------------------------

    def _write_version(self, record, rec, devset, crypto, manifest, version,
                       snapshot, previous):
        journal = record.journal(version)
        self._record = (record, rec)
        writer = writer_mod.ShipmentWriter(devset, crypto, manifest, journal,
                                           self.shard_size, self.workers,
                                           self.checkpoint_bytes)
        try:
            for index, img in enumerate(manifest.images):
                snap_index = len(img['snapshots']) - 1
                if writer.is_done(index, snap_index):
                    continue
                digest = self._export_image(writer, index, snap_index, img,
                                            snapshot, previous)
                writer.end_snapshot(index, snap_index, digest)
            writer.flush()
            manifest.data['version'] = version
            devset.write_manifest(version, manifest.to_blob(crypto))
            rec['state'] = 'exported'
            rec['versions'].append(version)
            record.save(rec)
        finally:
            writer.close()
        LOG.info('%s: manifest version %d written: %d chunks, %d bytes of '
                 'records', rec['shipment_id'], version,
                 len(manifest.chunks), manifest.payload_bytes())

    def _export_image(self, writer, index, snap_index, img, snapshot,
                      previous):
        spec = '%s/%s@%s' % (img['pool'], img['name'], snapshot)
        start = writer.resume_offset(index, snap_index)
        try:
            with self.cluster.pool(img['pool']) as pool:
                snap_id = self._snapshot_id(pool, img['name'], snapshot)
                self._pin(writer.manifest.shipment_id, spec, snap_id)
                with pool.open_image(img['name'], snapshot=snapshot) as image:
                    if previous is None:
                        digest = self._export_full(writer, index, snap_index,
                                                   image, start)
                    else:
                        self._export_delta(writer, index, snap_index, image,
                                           previous, start)
                        self.progress.start('digest %s' % spec, image.size())
                        digest = image.digest('blake3')
                # NOTE: librbd goes on reading from an open snapshot that
                # was deleted meanwhile, without an error. Snapshot ids are
                # never reused: the same id at the end proves the snapshot
                # existed all along, so what we read is what it holds.
                if self._snapshot_id(pool, img['name'], snapshot) != snap_id:
                    raise exception.SnapshotNotFound(site=self.cluster.site,
                                                     target=spec)
                return digest
        except (exception.SnapshotNotFound, exception.ImageNotFound) as e:
            raise exception.ShipmentError(
                shipment=writer.manifest.shipment_id,
                reason='source %s is gone (%s); progress is saved, but the '
                'export cannot go on without it' % (spec, e))

    def _pin(self, shipment_id, spec, snap_id):
        """Remember which snapshot (by id) a spec named when work began.

        A resumed export must read the same snapshot, not one deleted and
        made again under the same name in between.
        """
        record, rec = self._record
        pins = rec.setdefault('snapshot_ids', {})
        if spec not in pins:
            pins[spec] = snap_id
            record.save(rec)
        elif pins[spec] != snap_id:
            raise exception.ShipmentError(
                shipment=shipment_id, reason='source %s was deleted and made '
                'again since this export began; its content is not what the '
                'devices hold: start a new shipment' % spec)

    @staticmethod
    def _snapshot_id(pool, name, snapshot):
        with pool.open_image(name) as image:
            for snap in image.list_snapshots():
                if snap.namespace == 'user' and snap.name == snapshot:
                    return snap.id
        return None

    def _export_full(self, writer, index, snap_index, image, start):
        size = image.size()
        self.progress.start('export %s' % image.spec, size)
        hasher = digest_mod.new_hash('blake3')
        # The image digest is computed on a thread of its own, in order,
        # while this one hands the next pieces to the writer.
        with serial_mod.Serial(depth=2) as hashing:
            for piece, data in image.iter_content(
                    workers=self.read_workers, window=READ_AHEAD):
                end = piece.offset + piece.length
                if data is None:
                    hashing.submit(digest_mod.update_zeros, hasher,
                                   piece.length)
                else:
                    hashing.submit(hasher.update, data)
                    if piece.offset >= start:
                        writer.add_data(piece.offset, data)
                if end > start:
                    writer.end_piece(index, snap_index, end)
                self.progress.advance(piece.length)
            hashing.drain()
        self.progress.finish()
        return hasher.hexdigest()

    def _export_delta(self, writer, index, snap_index, image, previous, start):
        self.progress.start('consolidate %s' % image.spec, image.size())
        for piece, data in image.iter_changes(previous,
                                              workers=self.read_workers,
                                              window=READ_AHEAD):
            end = piece.offset + piece.length
            if piece.offset >= start:
                if data is None:
                    writer.add_zeros(piece.offset, piece.length)
                else:
                    writer.add_data(piece.offset, data)
                writer.end_piece(index, snap_index, end)
            self.progress.advance(piece.length)
        self.progress.finish()
