"""B's record of a cutover's final state, written after the resume.

A cutover's final round ends with the guest resumed on B's images, and
B's state at that moment must be kept somewhere the guest's writes cannot
change: nova_fedex compares it with A's stopped images after the resume,
and so do the tests with ``rbd export | sha256sum``. A snapshot of B's
image would be that record, but a snapshot asks the monitors for its id (a
Paxos proposal: about 70 ms), and it would have to be taken *inside* the
pause, before the guest runs again.

So a round that asks for a record (REPLICATION_START with ``record``)
keeps it another way:

* before the pause, at START: snapshot N-1 of B's image is protected and
  cloned as ``<image>.<N>`` (the record; :func:`record_name`);
* inside the pause: every block written to B's image is also kept in
  memory (:class:`Journal`), and the group commit with ``defer`` only
  ends the round (the blocks are flushed already): no snapshot;
* after the answer, while the guest runs: the journal is written to the
  record, flushed, and the record gets its snapshot ``N``
  (:func:`write`), which marks it complete. A record without it is
  unfinished and never read.

The record is N-1 (proven equal to the source's) plus exactly the bytes
B's image received and flushed in the pause, so it is B's state at the
resume. A round whose journal outgrows :data:`JOURNAL_LIMIT` gets the
snapshot inside the pause instead, as every round without ``record`` does.

A terminal killed before the record is complete loses it (the journal was
in memory): the group log (``lsrp.server.groups``) removes the unfinished
record when the terminal starts again, and a read of it says it is lost.
"""

import threading

from oslo_log import log as logging

from lsrp import exception
from lsrp.rbd import snaprecord

LOG = logging.getLogger(__name__)

# Bytes of blocks a round keeps for its record, per disk. A final delta
# is small by design (catch-up ends below the downtime budget).
JOURNAL_LIMIT = 256 << 20


def record_name(name, snapshot):
    """The record image of ``name``'s state named ``snapshot``."""
    return '%s.%s' % (name, snapshot)


def record_spec(spec, snapshot):
    """``pool/<image>.<snapshot>@<snapshot>``: what ``rbd export`` reads."""
    pool, name = spec.split('/', 1)
    return '%s/%s@%s' % (pool, record_name(name, snapshot), snapshot)


class Journal(object):
    """The blocks a round wrote, in order; None once over ``limit``."""

    def __init__(self, limit=None):
        self.limit = JOURNAL_LIMIT if limit is None else limit
        self.size = 0
        self._entries = []
        self._lock = threading.Lock()

    @property
    def overflowed(self):
        return self._entries is None

    def add(self, offset, data=None, length=None):
        """A write (``data``) or a zeroed range (``length``)."""
        with self._lock:
            if self._entries is None:
                return
            self.size += len(data) if data is not None else 0
            if self.size > self.limit:
                self._entries = None
                return
            self._entries.append((offset, data, length))

    def entries(self):
        with self._lock:
            return list(self._entries or ())


def prepare(pool, image, name, base, snapshot):
    """Clone ``base`` as the record of ``snapshot`` (before the pause).

    ``image``: ``name`` open (this terminal holds its lock, so protecting
    the snapshot costs no lock transfer). A record of the same name left by
    an earlier attempt is removed first.
    """
    remove(pool, name, snapshot)
    if not image.is_protected(base):
        image.protect_snapshot(base)
    pool.clone_image(name, base, record_name(name, snapshot))


def write(cluster, pool_name, name, snapshot, journal, size,
          source_id=None):
    """Apply ``journal`` to the record, flush it, and mark it complete."""
    with cluster.pool(pool_name) as pool, \
            pool.open_image(record_name(name, snapshot)) as rec:
        if rec.size() != size:
            rec.resize(size)
        for offset, data, length in journal.entries():
            if data is not None:
                rec.write(offset, data)
            else:
                rec.zero(offset, length)
        rec.flush()
        rec.create_snapshot(snapshot, quiesce=False)
        if source_id and ':' not in source_id:
            snaprecord.record(rec, snapshot, source_id)


def complete(pool, name, snapshot):
    """Whether the record of ``snapshot`` exists and is complete."""
    rec = record_name(name, snapshot)
    if not pool.image_exists(rec):
        return False
    with pool.open_image(rec) as image:
        return image.snapshot_exists(snapshot)


def remove(pool, name, snapshot=None, prefixes=None):
    """Remove ``name``'s records; returns those removed.

    The record of ``snapshot``, or of every snapshot named with one of
    ``prefixes``.
    """
    if snapshot is not None:
        wanted = [record_name(name, snapshot)]
    else:
        start = name + '.'
        wanted = [i for i in pool.list_images() if i.startswith(start)
                  and i[len(start):].startswith(tuple(prefixes or ()))]
    removed = []
    for rec in wanted:
        if not pool.image_exists(rec):
            continue
        try:
            with pool.open_image(rec) as image:
                for snap in image.list_snapshots():
                    if snap.namespace == 'user':
                        image.remove_snapshot(snap.name)
            pool.remove_image(rec)
        except exception.FedexException as e:
            raise exception.FedexException(
                'cannot remove %s/%s, the record of a final state: %s'
                % (pool.name, rec, e))
        removed.append('%s/%s' % (pool.name, rec))
    return removed


def remove_with_snapshots(pool, name, prefixes):
    """Remove ``name``'s records and snapshots named with ``prefixes``.

    The records first: they are clones of these snapshots (protected, so
    unprotected before their removal). Returns what was removed; an image
    that is gone has nothing left to remove.
    """
    removed = remove(pool, name, prefixes=prefixes)
    try:
        with pool.open_image(name) as image:
            for snap in image.list_snapshots():
                if snap.namespace != 'user' or \
                        not snap.name.startswith(tuple(prefixes)):
                    continue
                if snap.protected:
                    image.unprotect_snapshot(snap.name)
                image.remove_snapshot(snap.name)
                removed.append('%s/%s@%s' % (pool.name, name, snap.name))
    except exception.ImageNotFound:
        pass
    return removed


def release_recorded(pool, start, prefix):
    """Free the images named ``start...`` that hold a record, for removal.

    A record (``<image>.<prefix>...``, a clone of a snapshot of the image)
    marks the destination of a cutover, which keeps the migration's
    snapshots and records until the migration's cleanup. Their owner
    (Nova for a server's disks, Cinder for a volume) cannot remove such an
    image: this removes the records and the snapshots named with
    ``prefix`` (:func:`remove_with_snapshots`) first. Images without a
    record are left alone: at the source of a migration still running,
    the snapshots are that migration's. Returns what was removed
    (``pool/image@snapshot``, ``pool/record``).
    """
    mark = '.' + prefix
    names = [n for n in pool.list_images() if n.startswith(start)]
    images = sorted({n.split(mark, 1)[0] for n in names if mark in n})
    removed = []
    for name in images:
        removed += remove_with_snapshots(pool, name, (prefix,))
    return removed


def recover(cluster, disks, snapshot):
    """A terminal killed while writing records: remove the unfinished."""
    for spec in disks:
        pool_name, name = spec.split('/', 1)
        with cluster.pool(pool_name) as pool:
            if pool.image_exists(record_name(name, snapshot)) and not \
                    complete(pool, name, snapshot):
                remove(pool, name, snapshot)
                LOG.warning('%s: the record of its state %s was not finished '
                            'when the terminal stopped; removed (lost)',
                            spec, snapshot)
