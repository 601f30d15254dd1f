"""An open RBD image: info, snapshots, extents, sparse-aware I/O, digests."""

import collections
import concurrent.futures
import errno
import os

from lsrp import digest as digest_mod
from lsrp import exception
from lsrp.rbd import bindings
from lsrp.rbd import bounded
from lsrp.rbd import errors
from lsrp.rbd import extents as extents_mod
from lsrp.rbd.extents import Extent
from lsrp import source


def feature_names():
    """librbd's feature bits -> the names ``rbd info`` gives them."""
    rbd = bindings.librbd()
    return {
        rbd.RBD_FEATURE_LAYERING: 'layering',
        rbd.RBD_FEATURE_STRIPINGV2: 'striping',
        rbd.RBD_FEATURE_EXCLUSIVE_LOCK: 'exclusive-lock',
        rbd.RBD_FEATURE_OBJECT_MAP: 'object-map',
        rbd.RBD_FEATURE_FAST_DIFF: 'fast-diff',
        rbd.RBD_FEATURE_DEEP_FLATTEN: 'deep-flatten',
        rbd.RBD_FEATURE_JOURNALING: 'journaling',
        rbd.RBD_FEATURE_DATA_POOL: 'data-pool',
    }


ImageInfo = collections.namedtuple(
    'ImageInfo', 'name size object_size order features feature_names '
                 'stripe_unit stripe_count block_name_prefix id')

Snapshot = collections.namedtuple(
    'Snapshot', 'id name size namespace protected group group_snapshot')
Snapshot.__doc__ = """One snapshot of an image.

``namespace`` is 'user' for snapshots made by name, 'group' for the member
snapshots of an RBD group snapshot (then ``group`` and ``group_snapshot``
name it), or 'trash'/'mirror'.
"""

GroupSnapshotRef = collections.namedtuple('GroupSnapshotRef', 'group name')
GroupSnapshotRef.__doc__ = """Names the member snapshot of an RBD group
snapshot, for :meth:`lsrp.rbd.Pool.open_image`."""


def _namespaces():
    """librbd's snapshot namespace types -> their names."""
    rbd = bindings.librbd()
    return {
        rbd.RBD_SNAP_NAMESPACE_TYPE_USER: 'user',
        rbd.RBD_SNAP_NAMESPACE_TYPE_GROUP: 'group',
        rbd.RBD_SNAP_NAMESPACE_TYPE_TRASH: 'trash',
        rbd.RBD_SNAP_NAMESPACE_TYPE_MIRROR: 'mirror',
    }


# diff_iterate is called on windows of this many bytes so that an image with
# millions of small extents never needs them all in memory at once.
EXTENT_WINDOW = 1 << 30


class Image(bounded.Closing, source.Source):
    """Wraps ``rbd.Image``; every error names site, pool, image and snapshot.

    Use as a context manager, or call :meth:`close`. Opened at a snapshot it
    is a ``lsrp.source.Source``: the snapshot, or the delta since an earlier
    one.
    """

    def __init__(self, pool, name, handle, snapshot=None):
        self.pool = pool
        self.site = pool.site
        self.name = name
        self.snapshot = snapshot
        self._image = handle

    def close(self):
        """Close; bounded by the operation timeout (see lsrp.rbd.bounded)."""
        if self._image is not None:
            handle, self._image = self._image, None
            with self._translate('close image'):
                bounded.close(handle.close, self.pool.cluster, 'close image',
                              self.spec)

    def _translate(self, operation, snapshot=None, **kw):
        return errors.translate(self.site, operation, pool=self.pool.name,
                                image=self.name,
                                snapshot=snapshot or self._snap_label(), **kw)

    def _snap_label(self):
        snap = self.snapshot
        if isinstance(snap, GroupSnapshotRef):
            return '%s (group %s)' % (snap.name, snap.group)
        return snap

    @property
    def spec(self):
        return errors.target_spec(self.pool.name, self.name,
                                  self._snap_label())

    # --- info -------------------------------------------------------------

    def size(self):
        with self._translate('get size'):
            return self._image.size()

    def info(self):
        with self._translate('stat'):
            st = self._image.stat()
            features = self._image.features()
            stripe_unit = self._image.stripe_unit()
            stripe_count = self._image.stripe_count()
            image_id = self._image.id()
        names = [n for bit, n in sorted(feature_names().items())
                 if features & bit]
        return ImageInfo(self.name, st['size'], st['obj_size'], st['order'],
                         features, names, stripe_unit, stripe_count,
                         st['block_name_prefix'], image_id)

    def describe(self):
        info = self.info()
        return {'object_size': info.object_size,
                'features': list(info.feature_names)}

    def resize(self, size):
        with self._translate('resize'):
            self._image.resize(size)

    def break_locks(self):
        """Break the exclusive lock of a client that died holding it.

        Only for images that no live client of ours may use: the broken
        owner is blocklisted by Ceph. Returns the owners broken.
        """
        with self._translate('break lock'):
            if self._image.is_exclusive_lock_owner():
                return []  # ours: breaking it would blocklist ourselves
            owners = list(self._image.lock_get_owners())
            for owner in owners:
                self._image.lock_break(owner['mode'], owner['owner'])
        return [o['owner'] for o in owners]

    # --- snapshots ----------------------------------------------------------

    def create_snapshot(self, name, quiesce=True):
        """Snapshot ``name`` of the head.

        ``quiesce=False``: no quiesce notification to the image's other
        clients (a replica's snapshot: nothing runs on it to quiesce, and
        at a cutover B's paused QEMU has it open). Each notification is a
        round trip to every watcher.
        """
        flags = 0 if quiesce else bindings.librbd().RBD_SNAP_CREATE_SKIP_QUIESCE
        with self._translate('create snapshot', snapshot=name,
                             exists=exception.SnapshotExists):
            self._image.create_snap(name, flags)

    def remove_snapshot(self, name):
        with self._translate('remove snapshot', snapshot=name,
                             missing=exception.SnapshotNotFound):
            self._image.remove_snap(name)

    def protect_snapshot(self, name):
        with self._translate('protect snapshot', snapshot=name,
                             missing=exception.SnapshotNotFound):
            self._image.protect_snap(name)

    def unprotect_snapshot(self, name):
        with self._translate('unprotect snapshot', snapshot=name,
                             missing=exception.SnapshotNotFound):
            self._image.unprotect_snap(name)

    def is_protected(self, name):
        with self._translate('check protection', snapshot=name,
                             missing=exception.SnapshotNotFound):
            return self._image.is_protected_snap(name)

    def rollback_to_snapshot(self, name):
        """Make the image head equal to snapshot ``name`` again."""
        with self._translate('roll back', snapshot=name,
                             missing=exception.SnapshotNotFound):
            self._image.rollback_to_snap(name)

    def list_snapshots(self):
        """All snapshots (user and group namespaces), oldest first."""
        namespaces = _namespaces()
        with self._translate('list snapshots'):
            snaps = []
            for s in self._image.list_snaps():
                namespace = namespaces.get(s.get('namespace', 0), 'user')
                group = s.get('group') or {}
                protected = (namespace == 'user'
                             and self._image.is_protected_snap(s['name']))
                snaps.append(Snapshot(s['id'], s['name'], s['size'],
                                      namespace, protected,
                                      group.get('name'),
                                      group.get('snap_name')))
        return snaps

    def snapshot_id(self, name):
        """The id of user snapshot ``name`` (unique in the image), or None.

        A snapshot removed and taken again under the same name gets a new
        id: records keyed by it never outlive the content they describe.
        """
        for s in self.list_snapshots():
            if s.name == name and s.namespace == 'user':
                return s.id
        return None

    def image_id(self):
        with self._translate('get id'):
            return self._image.id()

    def metadata_get(self, key):
        """The image's metadata value for ``key``, or None."""
        with self._translate('get metadata %s' % key):
            try:
                return self._image.metadata_get(key)
            except KeyError:
                return None

    def metadata_set(self, key, value):
        with self._translate('set metadata %s' % key):
            self._image.metadata_set(key, value)

    def snapshot_exists(self, name):
        return any(s.name == name and s.namespace == 'user'
                   for s in self.list_snapshots())

    def snapshot_timestamp(self, name):
        """When the user snapshot ``name`` was taken, in epoch seconds.

        librbd keeps it to the second.
        """
        for s in self.list_snapshots():
            if s.name == name and s.namespace == 'user':
                with self._translate('read snapshot timestamp', snapshot=name):
                    return self._image.get_snap_timestamp(s.id).timestamp()
        raise exception.SnapshotNotFound(site=self.site,
                                         target='%s@%s' % (self.spec, name))

    def _use_snapshot(self, snapshot):
        """Point reads at a user snapshot name or a GroupSnapshotRef."""
        if isinstance(snapshot, GroupSnapshotRef):
            for s in self.list_snapshots():
                if (s.namespace == 'group' and s.group == snapshot.group
                        and s.group_snapshot == snapshot.name):
                    with self._translate('open group snapshot',
                                         missing=exception.SnapshotNotFound):
                        self._image.set_snap_by_id(s.id)
                    return
            raise exception.SnapshotNotFound(site=self.site,
                                             target=self.spec)
        with self._translate('open snapshot',
                             missing=exception.SnapshotNotFound):
            self._image.set_snap(snapshot)

    # --- extents ------------------------------------------------------------

    def extents(self, from_snapshot=None, offset=0, length=None,
                whole_object=False):
        """Yield the Extents changed since ``from_snapshot``, in order.

        Without ``from_snapshot``: every allocated range since creation (for a
        clone, including the parent's data). ``whole_object=True`` is much
        faster with fast-diff but reports whole objects.
        """
        size = self.size()
        if length is None:
            length = size - offset
        self._check_range(offset, length, size)
        if isinstance(from_snapshot, GroupSnapshotRef):
            # NOTE: Ceph 16 looks the starting snapshot up by name in the
            # user namespace only; a group snapshot cannot start a diff.
            raise exception.CephError(
                site=self.site, operation='list changed extents',
                target=self.spec,
                reason='cannot diff from group snapshot %s: Ceph 16 diffs '
                       'only from user snapshots' % (from_snapshot,))
        return extents_mod.merge(self._raw_extents(
            from_snapshot, offset, length, whole_object))

    def _raw_extents(self, from_snapshot, offset, length, whole_object):
        end = offset + length
        window = offset
        while window < end:
            found = []
            this = min(EXTENT_WINDOW - window % EXTENT_WINDOW, end - window)
            with self._translate('list changed extents',
                                 missing=exception.SnapshotNotFound,
                                 snapshot=from_snapshot and '%s..%s' % (
                                     from_snapshot,
                                     self._snap_label() or 'HEAD')):
                self._image.diff_iterate(
                    window, this, from_snapshot,
                    lambda o, n, e: found.append(Extent(o, n, bool(e))),
                    include_parent=True, whole_object=whole_object)
            found.sort()
            for ext in found:
                # whole-object extents may reach beyond the window asked for.
                start = max(ext.offset, window)
                stop = min(ext.offset + ext.length, window + this)
                if stop > start:
                    yield Extent(start, stop - start, ext.exists)
            window += this

    def _check_range(self, offset, length, size=None):
        size = self.size() if size is None else size
        if offset < 0 or length < 0 or offset + length > size:
            raise exception.InvalidExtent(target=self.spec, offset=offset,
                                          length=length, size=size)

    # --- I/O ------------------------------------------------------------------

    def read(self, offset, length):
        with self._translate('read'):
            data = self._image.read(offset, length)
        if len(data) != length:
            raise exception.CephError(
                site=self.site, operation='read', target=self.spec,
                reason='short read at offset %d: %d of %d bytes' % (
                    offset, len(data), length))
        return data

    def write(self, offset, data):
        with self._translate('write'):
            written = self._image.write(data, offset)
        if written != len(data):
            raise exception.CephError(
                site=self.site, operation='write', target=self.spec,
                reason='short write at offset %d: %d of %d bytes' % (
                    offset, written, len(data)))

    def aio_write(self, offset, data, done):
        """Start writing ``data`` at ``offset``; ``done(error)`` follows.

        ``data`` is bytes or a bytearray (the binding takes no views) and
        must stay unchanged until ``done`` is called: with zero-copy writes
        (see :class:`lsrp.rbd.Cluster`) librbd sends it from there, and it
        calls back only once it has let go of it. ``done`` runs on a librbd
        thread, with None or the CephError (CephNoSpace) of a failed write.
        """
        def complete(completion):
            # Always calls ``done``: a caller waits for it (an exception
            # raised here would only be printed by the binding).
            error = None
            try:
                ret = completion.get_return_value()
                if ret < 0:
                    cls = (exception.CephNoSpace
                           if -ret in (errno.ENOSPC, errno.EDQUOT)
                           else exception.CephError)
                    error = cls(site=self.site, operation='write',
                                target=self.spec,
                                reason='%s at offset %d (errno %d)' % (
                                    os.strerror(-ret), offset, -ret))
            except Exception as e:
                error = e
            done(error)
        with self._translate('write'):
            self._image.aio_write(data, offset, complete)

    def zero(self, offset, length):
        """Make a range read as zeros, exactly, at any alignment.

        NOTE: ``discard`` skips partial objects by default and left stale
        data behind in our tests; ``write_zeroes`` deallocates whole objects
        and zeroes the partial ones.
        """
        self._check_range(offset, length)
        with self._translate('zero'):
            self._image.write_zeroes(offset, length)

    def discard(self, offset, length):
        """Deallocate a range, as a guest's TRIM does.

        NOTE: librbd skips the parts of partial objects by default, so they
        may keep their old data; use :meth:`zero` when the range must read as
        zeros afterwards.
        """
        self._check_range(offset, length)
        with self._translate('discard'):
            self._image.discard(offset, length)

    def flush(self):
        with self._translate('flush'):
            self._image.flush()

    def iter_content(self, offset=0, length=None, chunk_size=4 << 20,
                     workers=4, window=8):
        """Yield ``(Extent, data)`` covering the range in order.

        Holes (never written, or discarded) come as ``(Extent(.., False),
        None)`` and are not read. Data is read ahead by ``workers`` threads
        (librbd releases the GIL), at most ``window`` chunks in memory.
        """
        size = self.size()
        if length is None:
            length = size - offset
        self._check_range(offset, length, size)
        allocated = (e for e in self._raw_extents(None, offset, length, True)
                     if e.exists)
        pieces = extents_mod.split(extents_mod.with_holes(
            extents_mod.merge(allocated), offset, length), chunk_size)
        return self._read_ahead(pieces, workers, window)

    def iter_changes(self, from_snapshot, whole_object=False,
                     chunk_size=4 << 20, workers=4, window=8, start=0):
        """Yield ``(Extent, data)`` for what changed since ``from_snapshot``.

        Ranges that no longer exist come as ``(Extent(.., False), None)``:
        they read as zeros now. Pieces that end at or before ``start`` are
        left out (a resumed transfer).
        """
        pieces = extents_mod.split(self.extents(
            from_snapshot, whole_object=whole_object), chunk_size)
        if start:
            pieces = (p for p in pieces if p.offset + p.length > start)
        return self._read_ahead(pieces, workers, window)

    def changes(self, from_snapshot, start=0, chunk_size=4 << 20):
        """``iter_changes``: the ``lsrp.source.Source`` method."""
        return self.iter_changes(from_snapshot, chunk_size=chunk_size,
                                 start=start)

    def _read_ahead(self, pieces, workers, window):
        pending = collections.deque()
        pool = concurrent.futures.ThreadPoolExecutor(workers)
        try:
            for piece in pieces:
                future = (pool.submit(self.read, piece.offset, piece.length)
                          if piece.exists else None)
                pending.append((piece, future))
                if len(pending) >= window:
                    piece, future = pending.popleft()
                    yield piece, future and future.result()
            while pending:
                piece, future = pending.popleft()
                yield piece, future and future.result()
        finally:
            # An abandoned generator may be finished by the garbage
            # collector, in any thread - once inside a thread's start, where
            # joining threads deadlocks. So: no join; the reads still
            # running are waited for (the image must outlive them).
            futures = [f for _, f in pending if f is not None]
            for future in futures:
                future.cancel()
            concurrent.futures.wait(futures)
            pool.shutdown(wait=False)

    def digest(self, algorithm='sha256'):
        """Digest of the whole image (at the open snapshot), holes as zeros.

        Equals ``rbd export <spec> - | sha256sum`` for algorithm sha256.
        """
        hexdigest, _ = digest_mod.digest_pieces(self.iter_content(),
                                                algorithm)
        return hexdigest
