"""Import: a device set -> images and snapshots in the destination cluster.

Each image is written to a staging image ``<name>.importing-<shipment>``,
snapshot by snapshot, and every snapshot's whole digest is checked against
the manifest before the next one starts; only when all of them match is the
staging image renamed to its real name. What is checked is what is written:
every chunk's keyed digest as it is decoded, and the image digest of the
very buffers handed to librbd, holes as zeros (a snapshot not written from
its start in one run is hashed from the devices' layers instead).
``readback=True`` reads each snapshot back from Ceph as well.

An interrupted import never looks finished, and running it again continues
from its journaled offset: the runs of one snapshot define every byte of
their ranges, so applying them twice gives the same image. The journal
names the staging image by id: one that is gone or another image is a
stale journal, and that image starts over.
"""

import collections
import concurrent.futures
import fcntl
import os
import queue
import threading
import time

from oslo_log import log as logging

from lsrp import access
from lsrp.device import deviceset as deviceset_mod
from lsrp.device import export as export_mod
from lsrp.device import journal as journal_mod
from lsrp.device import layers as layers_mod
from lsrp.device import manifest as manifest_mod
from lsrp.device import reader as reader_mod
from lsrp.device import serial as serial_mod
from lsrp import digest as digest_mod
from lsrp import exception
from lsrp import progress as progress_mod
from lsrp.rbd import bounded
from lsrp.rbd import snaprecord

LOG = logging.getLogger(__name__)

WRITE_BATCH = 4 << 20
# Threads decrypting groups of chunks, and groups (of up to WRITE_BATCH)
# decoded ahead of the writes: enough to keep two cores busy, few enough
# that a 4 MiB group is not held three times over.
DECODERS = 2
DECODE_AHEAD = 3
CURSOR_EVERY = 256 << 20


def open_shipment(devices, key_store, expect_digest=None):
    """Open, authenticate and check a device set: (devset, crypto, manifest).

    Raises DevicesMissing, MixedShipments, KeyMissing, WrongKey,
    ManifestTampered or ManifestDigestMismatch with what is wrong.
    """
    devset = deviceset_mod.DeviceSet.open(devices)
    devset.require_readable()
    crypto = export_mod.open_crypto(devset, key_store)
    manifest, blob = export_mod.load_manifest(devset, crypto)
    if expect_digest:
        actual = digest_mod.manifest_digest(blob)
        if actual != expect_digest:
            raise exception.ManifestDigestMismatch(
                shipment=devset.shipment_id, actual=actual,
                expected=expect_digest)
    return devset, crypto, manifest


def write_groups(runs):
    """Split runs into groups that are written at once.

    A group is adjacent runs of one kind; data groups hold at most
    WRITE_BATCH bytes.
    """
    group, size = [], 0
    for run in runs:
        if group and (run[0] != group[-1][0]
                      or run[1] != group[-1][1] + group[-1][2]
                      or (run[0] == manifest_mod.DATA
                          and size + run[2] > WRITE_BATCH)):
            yield group
            group, size = [], 0
        group.append(run)
        size += run[2]
    if group:
        yield group


class _Held(object):
    """A pooled buffer in use: its view, and who still reads it."""

    def __init__(self, buffers, buf, size):
        self._buffers = buffers
        self.buf = buf
        self.view = memoryview(buf)[:size]
        self.data = buf if len(buf) == size else None
        self._users = 1
        self._lock = threading.Lock()

    def hold(self):
        with self._lock:
            self._users += 1

    def release(self):
        with self._lock:
            self._users -= 1
            last = self._users == 0
        if last:
            self._buffers.put(self.buf)


class _Buffers(object):
    """A fixed number of group buffers, reused; ``get`` waits for one.

    Bounds the memory of the import: a group is decoded, hashed and written
    from its buffer, so at most ``count`` groups are in any of these stages
    at once (allocated once each: a fresh 4 MiB buffer is a fresh mapping,
    see lsrp.memory).
    """

    def __init__(self, count):
        self._free = queue.Queue()
        for _ in range(count):
            self._free.put(None)

    def get(self, size):
        buf = self._free.get()
        if buf is None or len(buf) < size:
            buf = bytearray(max(size, WRITE_BATCH))
        return _Held(self, buf, size)

    def put(self, buf):
        self._free.put(buf)


def _hash_and_release(stream, offset, held):
    try:
        stream.data(offset, held.view)
    finally:
        held.release()


class _Writes(object):
    """The writes in flight to one image: asynchronous, bounded, checked."""

    def __init__(self, image):
        self.image = image
        self._cond = threading.Condition()
        self._flying = 0
        self._completed = 0
        self._futures = collections.deque()
        self._error = None
        # librados does not always fail an aio write whose OSD is gone: a
        # wait in which no write completes for the operation timeout (and
        # the grace of lsrp.rbd.bounded) ends with an error naming the site.
        self._cluster = getattr(getattr(image, 'pool', None), 'cluster', None)
        timeout = getattr(self._cluster, 'op_timeout', None)
        self._bound = timeout + bounded.GRACE if timeout else None
        self._timed_out = False

    def write(self, offset, held):
        """Write a decoded group; its buffer is released when written."""
        # The binding takes bytes or a bytearray, not a view: a group that
        # fills its buffer goes as it is, a shorter one as a copy.
        data = held.data if held.data is not None else bytes(held.view)

        def done(error):
            # ``data`` is referenced here so that it lives until librbd is
            # done with it (a copy is not held by ``held``).
            del data_alive[:]
            held.release()
            with self._cond:
                self._flying -= 1
                self._completed += 1
                if error is not None and self._error is None:
                    self._error = error
                self._cond.notify_all()
        data_alive = [data]
        with self._cond:
            self._flying += 1
        try:
            self.image.aio_write(offset, data, done)
        except BaseException:
            done(None)
            raise

    def add(self, futures):
        """Writes done on threads (``image.zero``): futures."""
        self._futures.extend(futures)

    def _wait_for(self, ready):
        """With the condition held: until ``ready()``, or CephError.

        The error comes when no write has completed for the bound.
        """
        seen = self._completed
        deadline = self._bound and time.monotonic() + self._bound
        while not ready():
            if not deadline:
                self._cond.wait()
                continue
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._timed_out = True
                if self._cluster is not None:
                    # Its closes would wait on the same dead OSD.
                    self._cluster.wedged = True
                raise exception.CephError(
                    site=self.image.site, operation='write',
                    target=self.image.spec,
                    reason='no answer within %d s (the operation timeout, '
                    '[ceph] op_timeout); an OSD may be down or full: see '
                    '"ceph -s" at that site' % self._bound)
            self._cond.wait(remaining)
            if self._completed != seen:
                seen = self._completed
                deadline = time.monotonic() + self._bound

    def wait(self, limit):
        """Until at most ``limit`` writes are in flight; raises an error."""
        while len(self._futures) > limit:
            self._futures.popleft().result()
        with self._cond:
            self._wait_for(lambda: self._flying <= limit or
                           self._error is not None)
            if self._error is not None:
                raise self._error

    def settle(self):
        """Wait for every write started, whatever happened.

        Writes that got no answer are left to librbd: their buffers stay
        referenced by their callbacks, never reused.
        """
        for future in self._futures:
            concurrent.futures.wait([future])
        with self._cond:
            if self._timed_out:
                return
            try:
                self._wait_for(lambda: not self._flying)
            except exception.CephError as e:
                # Only ever after the error that ended the import (settle
                # runs in its clean-up): that one is what the user sees.
                LOG.debug('%s', e)


class Importer(object):

    def __init__(self, cluster, key_store, state_dir, pool_map=None,
                 workers=4, progress=None, check_space=True, readback=False):
        self.cluster = cluster
        self.readback = readback
        self.key_store = key_store
        self.state_dir = state_dir
        self.pool_map = pool_map or {}
        self.workers = workers
        self.progress = progress or progress_mod.Progress('none')
        self.check_space = check_space

    def run(self, devices, expect_digest=None, require_sealed=True):
        devset, crypto, manifest = open_shipment(devices, self.key_store,
                                                 expect_digest)
        if require_sealed and not manifest.sealed:
            raise exception.ShipmentError(
                shipment=manifest.shipment_id, reason='the shipment is not '
                'sealed: seal it at the sending site before importing')
        self.shipment_id = manifest.shipment_id
        self.reader = reader_mod.ChunkReader(devset, crypto, manifest)
        state = os.path.join(self.state_dir, manifest.shipment_id)
        os.makedirs(state, exist_ok=True)
        # One import of a shipment at a time on this terminal: then a lock
        # left on a staging image can only be a dead import's.
        self._lock = open(os.path.join(state, 'import.lock'), 'w')
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise exception.ShipmentError(
                shipment=manifest.shipment_id,
                reason='another import of this shipment is running')
        self.journal = journal_mod.Journal(os.path.join(state,
                                                        'import.journal'))
        self.state = collections.defaultdict(dict)
        for entry in self.journal.entries():
            if entry.get('stale'):
                self.state[entry['image']] = {}
            else:
                self.state[entry['image']].update(entry)
        try:
            if self.check_space:
                self._check_space(manifest)
            results = [self._import_image(i, img)
                       for i, img in enumerate(manifest.images)]
            # This terminal now accepts catch-up rounds for these images.
            access.authorize(self.state_dir, manifest.shipment_id, results,
                             manifest.data['source'])
        finally:
            self.reader.close()
            self.journal.close()
            devset.close()
            self._lock.close()
        return results

    def _check_space(self, manifest):
        """Refuse before writing when a pool cannot hold what comes."""
        needed = collections.Counter()
        for index, img in enumerate(manifest.images):
            if not self.state[index].get('renamed'):
                pool = self.pool_map.get(img['pool'], img['pool'])
                needed[pool] += sum(run[2] for snap in img['snapshots']
                                    for run in snap['runs']
                                    if run[0] == manifest_mod.DATA)
        for pool, need in sorted(needed.items()):
            space = self.cluster.pool_space(pool)
            if need > space['left']:
                raise exception.CephNoSpace(
                    site=self.cluster.site, operation='import',
                    target='pool %s' % pool,
                    reason='the shipment writes up to %d MiB, the pool has '
                    '%d MiB left%s' % (need >> 20, space['left'] >> 20,
                                       ' (quota %d MiB)' % (space['quota'] >> 20)
                                       if space['quota'] else ''))

    def _import_image(self, index, img):
        pool_name = self.pool_map.get(img['pool'], img['pool'])
        try:
            return self._import_into(index, img, pool_name)
        except exception.CephError as e:
            if isinstance(e, exception.CephNoSpace):
                raise
            # A write that timed out on a full pool says only "timeout".
            try:
                full = self.cluster.pool_space(pool_name)['full']
            except exception.CephError:
                full = False
            if full:
                raise exception.CephNoSpace(
                    site=self.cluster.site, operation='import',
                    target='pool %s' % pool_name,
                    reason='the pool became full during the import (quota '
                    'or cluster full); progress is saved: make room, then '
                    'run the same import again', cause=e) from e
            raise

    def _import_into(self, index, img, pool_name):
        final = img['name']
        staging = '%s.importing-%s' % (final, self.shipment_id)
        target = '%s/%s' % (pool_name, final)
        with self.cluster.pool(pool_name) as pool:
            if pool.image_exists(final):
                if self.state[index].get('renamed'):
                    return target
                raise exception.DestinationExists(
                    shipment=self.shipment_id, target=target,
                    site=self.cluster.site)
            resumed = self._check_journal(index, pool, staging, target)
            if not resumed:
                first = img['snapshots'][0]
                pool.create_image(staging, first['size'],
                                  features=img['features'],
                                  object_size=img['object_size'])
                with pool.open_image(staging) as image:
                    self._record(index, staging_id=image.info().id)
            with pool.open_image(staging) as image:
                if resumed:
                    broken = image.break_locks()
                    if broken:
                        LOG.info('%s: broke the lock of a dead import on %s',
                                 self.shipment_id, staging)
                for snap_index, snap in enumerate(img['snapshots']):
                    self._import_snapshot(index, img, snap_index, snap, image,
                                          pool, staging)
                    # Verified: a catch-up from it proves N-1 cheaply.
                    snaprecord.record(image, snap['name'],
                                      digest=snap['digest'])
            pool.rename_image(staging, final)
        self._record(index, renamed=True)
        LOG.info('%s: imported %s at %s', self.shipment_id, target,
                 self.cluster.site)
        return target

    def _check_journal(self, index, pool, staging, target):
        """True when the staging image is the one the journal describes.

        Otherwise the journal of this image is stale - the image was
        imported and removed since, or its staging image was removed or
        made again - and it starts over: the journal is never trusted for
        an image it does not describe.
        """
        state = self.state[index]
        spec = '%s/%s' % (pool.name, staging)
        found = None
        if pool.image_exists(staging):
            with pool.open_image(staging) as image:
                found = image.info().id
        if found is not None and found == state.get('staging_id'):
            return True
        if state:
            why = ('%s was imported by it and is gone' % target
                   if state.get('renamed') else
                   '%s (id %s) no longer exists' % (spec, state.get(
                       'staging_id')) if found is None else
                   '%s is another image (id %s, not %s)' % (
                       spec, found, state.get('staging_id')))
            LOG.warning('%s: the import journal %s is stale for %s: %s; '
                        'importing it from the start', self.shipment_id,
                        self.journal.path, target, why)
            self.journal.append({'image': index, 'stale': True})
            self.state[index] = {}
        if found is not None:
            # A staging image no journal line vouches for (made just before
            # a crash, or by another state directory): it may hold anything.
            LOG.warning('%s: removing %s, which this import\'s journal does '
                        'not describe', self.shipment_id, spec)
            with pool.open_image(staging) as image:
                image.break_locks()
                for snap in image.list_snapshots():
                    if snap.namespace == 'user':
                        image.remove_snapshot(snap.name)
            pool.remove_image(staging)
        return False

    def _record(self, index, **fields):
        self.journal.append(dict(fields, image=index))
        self.state[index].update(fields)

    def _import_snapshot(self, index, img, snap_index, snap, image, pool,
                         staging):
        key = 'verified_%d' % snap_index
        if image.snapshot_exists(snap['name']):
            if not self.state[index].get(key):
                # Made, then the import died before it was checked: what
                # was written is not at hand, so read it back.
                self._verify(index, img, snap_index, snap, pool, staging,
                             self._readback(img, snap, pool, staging))
            return
        start = self.state[index].get('cursor_%d' % snap_index, 0)
        if image.size() != snap['size']:
            image.resize(snap['size'])
        # The digest of the bytes written, when they are the whole image.
        stream = (digest_mod.OrderedDigest() if snap_index == 0
                  and start == 0 else None)
        self._apply(index, img, snap_index, snap, image, start, stream)
        image.flush()
        if stream is not None:
            actual = stream.hexdigest(snap['size'])
            how = 'as written'
        else:
            actual = self._layers_digest(img, snap_index)
            how = 'as the devices\' layers'
        self._verify(index, img, snap_index, snap, pool, staging,
                     (actual, how))
        image.create_snapshot(snap['name'])
        if self.readback:
            self._verify(index, img, snap_index, snap, pool, staging,
                         self._readback(img, snap, pool, staging))
        self._record(index, **{key: snap['digest']})

    def _apply(self, index, img, snap_index, snap, image, start, stream):
        """Write the runs of one snapshot from ``start`` on.

        ``stream``, an OrderedDigest, is fed what is written, holes and
        zero runs as zeros.

        A group's chunks are decoded by a worker straight into one of a few
        reused buffers (no per-chunk bytes, no join) and handed to librbd
        as an asynchronous write that sends it from there (no copy); the
        image digest reads the same buffer on its own thread. The buffer
        goes back to the pool once both are done with it. Up to
        ``workers`` writes are in flight while the next groups decode.
        """
        spec = '%s/%s@%s' % (img['pool'], img['name'], snap['name'])
        self.progress.start('import %s' % spec, snap['size'])
        runs = [r for r in snap['runs'] if r[1] >= start]
        writes = _Writes(image)
        buffers = _Buffers(DECODE_AHEAD + 1 + self.workers)
        next_cursor = start + CURSOR_EVERY
        done = start
        if start:
            self.progress.advance(start)    # imported before a restart

        def decode(group, held):
            # A worker fetches, decrypts and checks a group's chunks, while
            # others do the groups after it and librbd writes those before.
            # When the image digest is taken of what is written, it checks
            # the plaintexts: hashing each chunk too was a second BLAKE3
            # pass (AES-GCM still authenticates every record).
            self.reader.read_into([(r[3], spec, r[1], r[2]) for r in group],
                                  held.view, check_digest=stream is None)
            return held

        def groups():
            """(group, future of its decoded buffer) a few groups ahead."""
            ahead = collections.deque()
            for group in write_groups(runs):
                if group[0][0] == manifest_mod.ZERO:
                    future = None
                else:
                    held = buffers.get(sum(r[2] for r in group))
                    future = decoders.submit(decode, group, held)
                ahead.append((group, future))
                if len(ahead) > DECODE_AHEAD:
                    yield ahead.popleft()
            while ahead:
                yield ahead.popleft()

        with concurrent.futures.ThreadPoolExecutor(self.workers) as pool, \
                concurrent.futures.ThreadPoolExecutor(
                    DECODERS) as decoders, serial_mod.Serial() as hashing:
            try:
                for group, future in groups():
                    if future is None:
                        # A new image reads as zeros: only deltas write them.
                        if snap_index > 0:
                            writes.add(pool.submit(image.zero, r[1], r[2])
                                       for r in group)
                        if stream is not None:
                            for r in group:
                                hashing.submit(stream.zeros, r[1], r[2])
                    else:
                        held = future.result()
                        if stream is not None:
                            held.hold()
                            hashing.submit(_hash_and_release, stream,
                                           group[0][1], held)
                        writes.write(group[0][1], held)
                    writes.wait(self.workers)
                    offset = group[-1][1] + group[-1][2]
                    # Holes between runs count as done, as the export
                    # counts them: a sparse 1 GiB disk with 20 MiB of data
                    # read "2 %" when imported whole.
                    self.progress.advance(offset - done)
                    done = offset
                    if offset >= next_cursor:
                        writes.wait(0)
                        image.flush()
                        self._record(index,
                                     **{'cursor_%d' % snap_index: offset})
                        next_cursor = offset + CURSOR_EVERY
                writes.wait(0)
                hashing.drain()
                self.progress.advance(max(snap['size'] - done, 0))
            finally:
                # librbd must be done with every buffer before it goes.
                writes.settle()
        self.progress.finish()

    def _layers_digest(self, img, snap_index):
        """The image digest of a snapshot rebuilt from the devices."""
        for i, (snap, segments) in enumerate(layers_mod.layers(img)):
            if i == snap_index:
                self.progress.start('verify %s@%s' % (img['name'],
                                                      snap['name']),
                                    snap['size'])
                actual = layers_mod.image_digest(self.reader, segments,
                                                 snap['size'])
                self.progress.finish()
                return actual

    def _readback(self, img, snap, pool, staging):
        with pool.open_image(staging, snapshot=snap['name']) as at_snap:
            self.progress.start('readback %s@%s' % (img['name'],
                                                    snap['name']),
                                snap['size'])
            actual = at_snap.digest('blake3')
            self.progress.finish()
        return actual, 'read back from Ceph'

    def _verify(self, index, img, snap_index, snap, pool, staging, found):
        actual, how = found
        if actual != snap['digest']:
            raise exception.ImageDigestMismatch(
                shipment=self.shipment_id,
                image='%s/%s' % (pool.name, staging), snapshot=snap['name'],
                where='at %s (%s)' % (self.cluster.site, how), actual=actual,
                expected=snap['digest'])
