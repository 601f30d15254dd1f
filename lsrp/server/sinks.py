"""The RBD image sink: rounds applied to a replica on this site's cluster.

(The other sink, a device set, is ``lsrp.device.receiver.DeviceSetSink``.)

A round is atomic: it starts from snapshot N-1 and ends with snapshot N.
Before applying anything the sink makes sure the image head equals N-1
(``rbd import-diff`` only checks that a snapshot of that name exists), and a
round that does not complete is rolled back to N-1 - unless a new session
resumes it first (the server decides; see doc/source/protocol.rst).

A round without N-1 is a full replication (a device set imported through
this terminal): it goes to ``<name>.importing-<shipment>``, which becomes
``<name>`` only when a round marked final has checked its digest - so an
interrupted import never looks finished.
"""

from oslo_log import log as logging

from lsrp import digest as digest_mod
from lsrp import exception
from lsrp.rbd import snaprecord
from lsrp.server import inflight as inflight_mod
from lsrp.server import records
from lsrp import sink

LOG = logging.getLogger(__name__)


class RbdImageSink(sink.GroupSink):
    """Applies replication rounds to ``pool/name`` of the local cluster."""

    parallel_streams = True     # writes may come in any order
    durable_progress = False    # a lost round is kept in memory to resume

    def __init__(self, cluster, spec, shipment, state_dir=None):
        self.cluster = cluster
        # Rounds under way, remembered for a restart after kill -9.
        self.inflight = inflight_mod.InFlight(state_dir) if state_dir else None
        self.spec = spec
        # What messages name: the peer and the logs of a terminal with
        # several sites' images must tell this site's copy from the source.
        self.where = '%s at %s' % (spec, cluster.site)
        self.pool_name, self.name = spec.split('/', 1)
        self.staging = '%s.importing-%s' % (self.name, shipment)
        self._pool = cluster.pool(self.pool_name)
        self._image = None
        self.name_open = None
        for name in (self.name, self.staging):
            if self._pool.image_exists(name):
                self._image = self._pool.open_image(name)
                self.name_open = name
                break
        self.base = None      # N-1 of the round in progress
        self.started = False
        self.round = None     # (N-1, N, size) of the round in progress
        self.prepared = None  # N, applied, waiting for its group's commit
        self.target_id = None  # the source's identity of N (proof of N-1)
        self.prepared_digest = None
        # A round with a record (a cutover's final delta): its blocks, kept
        # for the record written after the resume (lsrp.server.records).
        self.journal = None

    def close(self):
        if self._image is not None:
            self._image.close()
        self._pool.close()

    def info(self):
        if self._image is None:
            return 0, None
        snaps = [s.name for s in self._image.list_snapshots()
                 if s.namespace == 'user']
        return self._image.size(), (snaps[-1] if snaps else None)

    def _start_full(self, size):
        """The first snapshot of a new image: into the staging image."""
        if self.name_open == self.name:
            raise exception.ProtocolError(
                code='NOT_ALLOWED', reason='%s exists already' % self.where)
        if self._image is None:
            self._pool.create_image(self.staging, size)
            self._image = self._pool.open_image(self.staging)
            self.name_open = self.staging
        else:
            # Left by an interrupted import: writing again is idempotent.
            self._image.break_locks()
            if self._image.size() != size:
                self._image.resize(size)
        self.base, self.started = None, True

    def start(self, snapshot, from_snapshot, size, resume=0, image=None,
              proof=None, record=False):
        """Prepare a round N-1 -> N; returns the offset to go on from.

        That is ``size`` if N is here already (and its record says it is
        the source's N); ``resume`` if this very round was interrupted and
        everything it changed below ``resume`` is applied (the server knows
        from the acknowledgements); else 0. ``proof``: ``base_id``,
        ``snapshot_id`` and ``base_digest`` of REPLICATION_START; N-1 must
        be proven equal to the source's before anything is written.
        ``record``: keep B's state at N in a record written after the group
        commit (``commit(defer=True)``), not in snapshot N.
        """
        proof = proof or {}
        if self._image is not None and self._image.snapshot_exists(snapshot):
            if _vouches(snaprecord.lookup(self._image, snapshot),
                        proof.get('snapshot_id')):
                return size
            if self.name_open != self.staging or from_snapshot:
                raise exception.ProtocolError(
                    code='BAD_STATE', reason='%s already has a snapshot %s, '
                    'and nothing here says it is a copy of the source\'s %s:'
                    ' remove it at the destination (rbd snap rm %s@%s) and '
                    'run again' % (self.where, snapshot, snapshot,
                                   self.spec, snapshot))
            # A staging image's unverified snapshot (a terminal killed
            # before its digest was checked): taken again below.
            self._image.remove_snapshot(snapshot)
        wanted = (from_snapshot, snapshot, size)
        if resume and self.started and self.round == wanted:
            LOG.info('%s: round %s -> %s resumes at offset %d', self.where,
                     from_snapshot, snapshot, resume)
            return resume
        self.round, self.prepared = wanted, None
        self.target_id = proof.get('snapshot_id')
        self.journal = None
        if from_snapshot is None:
            self._start_full(size)
            return 0
        if self._image is None or not self._image.snapshot_exists(
                from_snapshot):
            raise exception.ProtocolError(
                code='BAD_STATE', reason='%s has no snapshot %s to start '
                'from: import the seed first' % (self.where, from_snapshot))
        self._prove(from_snapshot, proof)
        if self.inflight is not None:
            # Before the first write: a restart after kill -9 rolls back.
            self.inflight.begin(self.spec, from_snapshot, snapshot)
        if any(True for _ in self._image.extents(from_snapshot)):
            # A round that failed here, or a write to the replica: either
            # way the head is not N-1 any more.
            LOG.warning('%s: head differs from %s; rolling back before the '
                        'round', self.where, from_snapshot)
            self._rollback(from_snapshot)
        if self._image.size() != size:
            self._image.resize(size)
        if record:
            records.prepare(self._pool, self._image, self.name,
                            from_snapshot, snapshot)
            self.journal = records.Journal()
        self.base, self.started = from_snapshot, True
        return 0

    def _prove(self, base, proof):
        """Raise unless snapshot ``base`` here equals the source's N-1.

        Cheap when the record of ``base`` names the source snapshot the
        source says it starts from (``base_id``): both are immutable, and
        the record was written when the round that made ``base`` was
        complete. Else by content: the source's digest of N-1
        (``base_digest``, asked for with BASE_UNPROVEN) against ours
        (recorded, or read whole once and recorded).
        """
        base_id, digest = proof.get('base_id'), proof.get('base_digest')
        record = snaprecord.lookup(self._image, base)
        if _vouches(record, base_id):
            return
        if base_id and base_id.startswith(_DIGEST):
            digest = base_id[len(_DIGEST):]
        if not digest:
            raise exception.ProtocolError(
                code='BASE_UNPROVEN', reason='%s, snapshot %s: no record '
                'here ties it to the source\'s %s; send its digest'
                % (self.where, base, base))
        ours = record and record.get('digest')
        if not ours:
            LOG.info('%s, snapshot %s: no digest recorded; reading it whole '
                     'to prove it equals the source\'s', self.where, base)
            with self._pool.open_image(self.name_open, snapshot=base) as snap:
                ours = snap.digest('blake3')
        if ours != digest:
            raise exception.ProtocolError(
                code='BASE_DIFFERS', reason='%s, snapshot %s differs from the'
                ' source\'s %s (digest %s here, %s there): it is not the '
                'snapshot the source has. Nothing was written. Remove it at '
                'the destination (rbd snap rm %s@%s), or start from an older '
                'snapshot both sites hold' % (self.where, base, base, ours,
                                              digest, self.spec, base))
        snaprecord.record(self._image, base, source=None if (
            base_id or '').startswith(_DIGEST) else base_id, digest=ours)

    def _record(self, snapshot, digest=None):
        """Snapshot N is taken: what it is a copy of, kept with it."""
        source = self.target_id
        if source and source.startswith(_DIGEST):
            source = None   # a claimed digest: recorded only once checked
        if source or digest:
            snaprecord.record(self._image, snapshot, source, digest)

    def _end(self):
        """No round under way any more (N taken, or rolled back)."""
        self.started = False
        if self.inflight is not None:
            self.inflight.end(self.spec)

    def differing(self, offset, block, digests):
        """Indexes of the blocks whose content here has another digest."""
        size = self._image.size()
        out = []
        for i, digest in enumerate(digests):
            start = offset + i * block
            length = min(block, size - start)
            if length <= 0:
                out.append(i)
                continue
            if digest_mod.block_digest(self._image.read(start,
                                                        length)) != digest:
                out.append(i)
        return out

    def write(self, offset, data):
        self._image.write(offset, data)
        if self.journal is not None:
            self.journal.add(offset, data=data)

    def zero(self, offset, length):
        self._image.zero(offset, length)
        if self.journal is not None:
            self.journal.add(offset, length=length)

    def discard(self):
        """Remove the staging image of a first copy that failed.

        Only a staging image (never an image under its real name, which a
        catch-up round may be updating); best effort: an error is logged,
        the caller's error is the one to report.
        """
        if self.name_open != self.staging:
            return
        try:
            if self._image is not None:
                image, self._image = self._image, None
                for snap in image.list_snapshots():
                    if snap.namespace == 'user':
                        image.remove_snapshot(snap.name)
                image.close()
            self.name_open = None
            self._pool.remove_image(self.staging)
            LOG.info('%s: removed %s after a failed copy', self.where,
                     self.staging)
        except exception.FedexException as e:
            LOG.warning('%s: could not remove %s after a failed copy: %s',
                        self.where, self.staging, e)
        self._end()

    def complete(self, snapshot, digest=None, final=False):
        """Take snapshot N; with ``digest``, check the whole image first.

        ``final`` ends a full replication: the staging image takes its name.
        """
        if final and self.name_open == self.staging and not digest:
            raise exception.ProtocolError(
                code='BAD_STATE', reason='%s: a final round needs the image '
                'digest' % self.where)
        self._image.flush()
        self._image.create_snapshot(snapshot, quiesce=False)
        if digest:
            with self._pool.open_image(self.name_open,
                                       snapshot=snapshot) as snap:
                actual = snap.digest('blake3')
            if actual != digest:
                self._image.remove_snapshot(snapshot)
                if self.base:
                    self._rollback(self.base)
                    done = 'rolled back to %s' % self.base
                else:
                    # A first snapshot: holes the next attempt does not
                    # write would keep this content. Start from nothing.
                    self._image.close()
                    self._image = self.name_open = None
                    self._pool.remove_image(self.staging)
                    done = '%s removed' % self.staging
                self._end()
                raise exception.ProtocolError(
                    code='DIGEST_MISMATCH', reason='%s, snapshot %s has '
                    'digest %s, the source says %s; %s' % (
                        self.where, snapshot, actual, digest, done))
        self._record(snapshot, digest)
        self._end()
        if final and self.name_open == self.staging:
            self._image.close()
            self._pool.rename_image(self.staging, self.name)
            self._image = self._pool.open_image(self.name)
            self.name_open = self.name
        return digest

    def prepare(self, snapshot, digest=None):
        """Round N is applied; snapshot N waits for the group's commit.

        The head is flushed (durable), and with ``digest`` checked whole.
        """
        if not self.started or self.round[1] != snapshot or not self.base:
            raise exception.ProtocolError(
                code='BAD_STATE', reason='%s: no round to %s under way that '
                'a group could commit' % (self.where, snapshot))
        self._image.flush()
        if digest:
            actual = self._image.digest('blake3')
            if actual != digest:
                self._rollback(self.base)
                self._end()
                raise exception.ProtocolError(
                    code='DIGEST_MISMATCH', reason='%s has digest %s after '
                    'the round to %s, the source says %s; rolled back to %s'
                    % (self.where, actual, snapshot, digest, self.base))
        self.prepared = snapshot
        self.prepared_digest = digest

    def has_snapshot(self, snapshot):
        return (self._image is not None
                and self._image.snapshot_exists(snapshot))

    def release(self):
        """Close the image now (a cutover's resumed guest writes it next).

        Its rbd exclusive lock goes with it: the guest's first write then
        takes a free lock instead of asking this process for it.
        """
        if self._image is not None:
            self._image.close()
        self._image = self.name_open = None

    def commit(self, snapshot, defer=False):
        """The group's commit: take snapshot N (again: nothing to do).

        ``defer`` (a round started with ``record``, its journal whole): no
        snapshot; the round ends and the record to write after the answer
        is returned: the arguments of ``lsrp.server.records.write``.
        """
        journal, self.journal = self.journal, None
        if defer and journal is not None and not journal.overflowed:
            record = (self.cluster, self.pool_name, self.name, snapshot,
                      journal,
                      self._image.size(), self.target_id)
            self._end()
            self.prepared = None
            return record
        if journal is not None:
            LOG.info('%s: the round to %s wrote more than %d bytes; its '
                     'snapshot is taken now instead of a record',
                     self.where, snapshot, journal.limit)
            records.remove(self._pool, self.name, snapshot)
        if not self._image.snapshot_exists(snapshot):
            # No quiesce round trip: a replica's snapshot is what the
            # source's was; nothing runs on it to quiesce (at a cutover,
            # the guest waits paused at B for this very snapshot).
            self._image.create_snapshot(snapshot, quiesce=False)
        self._record(snapshot, self.prepared_digest)
        self._end()
        self.prepared = None
        return None

    def abort(self):
        """The round did not complete: back to N-1."""
        if self.journal is not None and self.round:
            self.journal = None
            try:
                records.remove(self._pool, self.name, self.round[1])
            except exception.FedexException as e:
                LOG.warning('%s: %s', self.where, e)
        if self.started and self.base:
            LOG.warning('%s: round from %s did not complete; rolling back',
                        self.where, self.base)
            self._rollback(self.base)
        self._end()

    def _rollback(self, snapshot):
        # A terminal that died mid-round may still hold the image's lock.
        self._image.break_locks()
        self._image.rollback_to_snapshot(snapshot)


# An identity that is a content digest (a device set's snapshot, whose
# digest its manifest holds) rather than a source snapshot's ids.
_DIGEST = 'blake3:'


def _vouches(record, identity):
    """Whether ``record`` says its snapshot is a copy of ``identity``."""
    if not record or not identity:
        return False
    if identity.startswith(_DIGEST):
        return record.get('digest') == identity[len(_DIGEST):]
    return record.get('source') == identity
