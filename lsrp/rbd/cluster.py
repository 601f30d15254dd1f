"""Connections to a site's Ceph cluster, its pools and RBD groups."""

import collections
import json
import os

from lsrp import exception
from lsrp.rbd import bindings
from lsrp.rbd import bounded
from lsrp.rbd import errors
from lsrp.rbd import image as image_mod

# The features every image we create gets by default: fast-diff makes
# extent listing nearly free, deep-flatten lets clones drop their parent.
DEFAULT_FEATURES = ('layering', 'exclusive-lock', 'object-map', 'fast-diff',
                    'deep-flatten')


def feature_bits(names):
    """``['layering', ...]`` -> the librbd feature bit mask."""
    bits = {name: bit for bit, name in image_mod.feature_names().items()}
    try:
        return sum(bits[n] for n in set(names))
    except KeyError as e:
        raise exception.FedexException(
            'unknown RBD feature %s (known: %s)' % (
                e, ', '.join(sorted(bits))))


class Cluster(bounded.Closing):
    """A connection to one site's Ceph cluster.

    ::

        with Cluster(conf, keyring, site='site-a') as cluster:
            with cluster.pool('vms') as pool:
                with pool.open_image('disk0', snapshot='base') as image:
                    print(image.digest())
    """

    def __init__(self, conffile, keyring=None, client='admin', site=None,
                 connect_timeout=15, options=None, op_timeout=None):
        self.conffile = conffile
        self.keyring = keyring
        self.client = client
        # Name the site in errors: given, else the conf's directory.
        self.site = site or os.path.basename(
            os.path.dirname(os.path.abspath(conffile))) or conffile
        self.connect_timeout = connect_timeout
        self.options = dict(options or {})
        # Bounds what librados does not (closing, shutting down).
        self.op_timeout = op_timeout
        self.wedged = False   # a close was abandoned (lsrp.rbd.bounded)
        if op_timeout:
            # NOTE: librados pauses writes to a full pool until space
            # appears; a timeout turns that into an error we can explain.
            self.options.setdefault('rados_osd_op_timeout', str(op_timeout))
            self.options.setdefault('rados_mon_op_timeout', str(op_timeout))
        # Asynchronous writes (the import's) are sent from the caller's
        # buffer instead of a copy of it; librbd completes them only once
        # it has let go of the buffer. Synchronous writes still copy.
        self.options.setdefault('rbd_disable_zero_copy_writes', 'false')
        self._rados = None

    def __enter__(self):
        self.connect()
        return self

    def connect(self):
        if not os.path.exists(self.conffile):
            raise exception.ClusterConnectError(
                site=self.site, conf=self.conffile, client=self.client,
                reason='the conf file does not exist')
        conf = dict(self.options)
        if self.keyring:
            conf['keyring'] = self.keyring
        # Both, before anything is opened: a cluster is only used for RBD.
        rados = bindings.librados()
        bindings.librbd()
        try:
            self._rados = rados.Rados(conffile=self.conffile,
                                      rados_id=self.client, conf=conf)
            self._rados.connect(timeout=self.connect_timeout)
        except rados.Error as e:
            self._rados = None
            raise exception.ClusterConnectError(
                site=self.site, conf=self.conffile, client=self.client,
                reason=str(e), cause=e) from e

    def close(self):
        if self._rados is not None:
            handle, self._rados = self._rados, None
            bounded.close(handle.shutdown, self, 'disconnect', '(cluster)')

    @property
    def fsid(self):
        with errors.translate(self.site, 'get fsid'):
            return self._rados.get_fsid()

    def mon_command(self, prefix, **args):
        """Run a monitor command; returns its parsed JSON output."""
        cmd = dict(args, prefix=prefix, format='json')
        with errors.translate(self.site, prefix):
            ret, out, status = self._rados.mon_command(json.dumps(cmd), b'')
        if ret != 0:
            raise exception.CephError(site=self.site, operation=prefix,
                                      target='(cluster)',
                                      reason='%s (errno %d)' % (status, -ret))
        return json.loads(out) if out else None

    def pool_space(self, pool):
        """Space of a pool: stored bytes, bytes left, quota, full flag.

        ``left`` is the smaller of what the quota and the cluster allow.
        """
        stats = next((p['stats'] for p in self.mon_command(
            'df', detail='detail')['pools'] if p['name'] == pool), None)
        if stats is None:
            raise exception.PoolNotFound(site=self.site, pool=pool)
        flags = next(p.get('flags_names', '') for p in self.mon_command(
            'osd dump')['pools'] if p['pool_name'] == pool)
        quota = stats.get('quota_bytes') or 0
        left = stats['max_avail']
        if quota:
            left = min(left, max(quota - stats['stored'], 0))
        return {'stored': stats['stored'], 'left': left, 'quota': quota,
                'full': 'full' in flags.split(',')}

    def list_pools(self):
        with errors.translate(self.site, 'list pools'):
            return self._rados.list_pools()

    def pool(self, name):
        """Open a pool; a :class:`Pool` to use as a context manager."""
        with errors.translate(self.site, 'open pool', pool=name,
                              missing=exception.PoolNotFound):
            ioctx = self._rados.open_ioctx(name)
        return Pool(self, name, ioctx)

    def snapshot_images(self, specs, snapshot):
        """Create ``snapshot`` on each ``pool/image``, pool by pool.

        See :meth:`Pool.snapshot_images` for when the set is consistent.
        """
        by_pool = collections.OrderedDict()
        for spec in specs:
            pool, name = spec.split('/', 1)
            by_pool.setdefault(pool, []).append(name)
        for pool, names in by_pool.items():
            with self.pool(pool) as p:
                p.snapshot_images(names, snapshot)


class Pool(bounded.Closing):
    """An open pool (an ioctx): images and groups in it."""

    def __init__(self, cluster, name, ioctx):
        self.cluster = cluster
        self.site = cluster.site
        self.name = name
        self.ioctx = ioctx
        self._rbd = bindings.librbd().RBD()

    def close(self):
        if self.ioctx is not None:
            ioctx, self.ioctx = self.ioctx, None
            bounded.close(ioctx.close, self.cluster, 'close pool', self.name)

    def _translate(self, operation, image=None, **kw):
        return errors.translate(self.site, operation, pool=self.name,
                                image=image, **kw)

    # --- images ---------------------------------------------------------

    def list_images(self):
        with self._translate('list images'):
            return sorted(self._rbd.list(self.ioctx))

    def image_exists(self, name):
        return name in self.list_images()

    def create_image(self, name, size, features=DEFAULT_FEATURES,
                     object_size=4 << 20):
        """Create an image of ``size`` bytes with the named features."""
        order = object_size.bit_length() - 1
        if object_size != 1 << order:
            raise exception.FedexException(
                'object size %d is not a power of two' % object_size)
        with self._translate('create image', image=name):
            self._rbd.create(self.ioctx, name, size, order=order,
                             old_format=False, features=feature_bits(features))

    def clone_image(self, parent, snapshot, name, features=DEFAULT_FEATURES):
        """Clone ``parent@snapshot`` as ``name``.

        The snapshot must be protected: the sandbox clusters allow pre-mimic
        clients, so librbd makes v1 clones.
        """
        with self._translate('clone', image=parent, snapshot=snapshot):
            self._rbd.clone(self.ioctx, parent, snapshot, self.ioctx, name,
                            features=feature_bits(features))

    def remove_image(self, name):
        with self._translate('remove image', image=name):
            self._rbd.remove(self.ioctx, name)

    def rename_image(self, name, new_name):
        with self._translate('rename image', image=name):
            self._rbd.rename(self.ioctx, name, new_name)

    def open_image(self, name, snapshot=None, read_only=None):
        """Open an image, at its head or at a snapshot.

        ``snapshot`` is a user snapshot name or an
        :class:`lsrp.rbd.GroupSnapshotRef`. Snapshots open read-only.
        """
        if read_only is None:
            read_only = snapshot is not None
        with self._translate('open image', image=name):
            handle = bindings.librbd().Image(self.ioctx, name, read_only=read_only)
        image = image_mod.Image(self, name, handle, snapshot)
        if snapshot is not None:
            try:
                image._use_snapshot(snapshot)
            except Exception:
                image.close()
                raise
        return image

    def snapshot_images(self, names, snapshot):
        """Create the user snapshot ``snapshot`` on each image, in order.

        Crash-consistent across the images only while the caller keeps their
        writers paused (guest paused or filesystems frozen). Unlike a group
        snapshot, these can start a diff and be rolled back one by one.
        """
        for name in names:
            with self.open_image(name) as img:
                img.create_snapshot(snapshot)

    # --- groups -----------------------------------------------------------

    def create_group(self, name):
        with self._translate('create group', group=name,
                             exists=exception.GroupExists):
            self._rbd.group_create(self.ioctx, name)
        return self.group(name)

    def list_groups(self):
        with self._translate('list groups'):
            return sorted(self._rbd.group_list(self.ioctx))

    def group(self, name):
        if name not in self.list_groups():
            raise exception.GroupNotFound(
                site=self.site, target=errors.target_spec(self.name,
                                                          group=name))
        return Group(self, name)

    def remove_group(self, name):
        with self._translate('remove group', group=name,
                             missing=exception.GroupNotFound):
            self._rbd.group_remove(self.ioctx, name)


class Group(object):
    """An RBD group: images that are snapshotted together.

    ``create_snapshot`` is Ceph's own crash-consistent group snapshot: it
    briefly blocks writes on every member image while it snapshots them all,
    without any help from the writers. NOTE: on Ceph 16 a group snapshot can
    be read (open_image with a GroupSnapshotRef) and rolled back as a whole,
    but cannot start an extent diff; see doc/source/rbd.rst.
    """

    def __init__(self, pool, name):
        self.pool = pool
        self.name = name
        self._group = bindings.librbd().Group(pool.ioctx, name)

    def _translate(self, operation, snapshot=None, **kw):
        return errors.translate(self.pool.site, operation, pool=self.pool.name,
                                group=self.name, snapshot=snapshot, **kw)

    def add_image(self, image):
        with self._translate('add image %s to group' % image):
            self._group.add_image(self.pool.ioctx, image)

    def remove_image(self, image):
        with self._translate('remove image %s from group' % image):
            self._group.remove_image(self.pool.ioctx, image)

    def list_images(self):
        with self._translate('list group images'):
            return sorted(i['name'] for i in self._group.list_images())

    def create_snapshot(self, name):
        with self._translate('create group snapshot', snapshot=name,
                             exists=exception.SnapshotExists):
            self._group.create_snap(name)
        return image_mod.GroupSnapshotRef(self.name, name)

    def list_snapshots(self):
        complete = bindings.librbd().RBD_GROUP_SNAP_STATE_COMPLETE
        with self._translate('list group snapshots'):
            return [s['name'] for s in self._group.list_snaps()
                    if s['state'] == complete]

    def remove_snapshot(self, name):
        with self._translate('remove group snapshot', snapshot=name,
                             missing=exception.SnapshotNotFound):
            self._group.remove_snap(name)

    def rollback_to_snapshot(self, name):
        with self._translate('roll back group', snapshot=name,
                             missing=exception.SnapshotNotFound):
            self._group.rollback_to_snap(name)
