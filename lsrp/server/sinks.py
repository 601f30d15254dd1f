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
from lsrp import sink

LOG = logging.getLogger(__name__)


class RbdImageSink(sink.GroupSink):
    """Applies replication rounds to ``pool/name`` of the local cluster."""

    parallel_streams = True     # writes may come in any order
    durable_progress = False    # a lost round is kept in memory to resume

    def __init__(self, cluster, spec, shipment):
        self.cluster = cluster
        self.spec = spec
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
                code='NOT_ALLOWED', reason='%s exists already' % self.spec)
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

    def start(self, snapshot, from_snapshot, size, resume=0, image=None):
        """Prepare a round N-1 -> N; returns the offset to go on from.

        That is ``size`` if N is here already; ``resume`` if this very round
        was interrupted and everything it changed below ``resume`` is
        applied (the server knows from the acknowledgements); else 0.
        """
        if self._image is not None and self._image.snapshot_exists(snapshot):
            return size
        wanted = (from_snapshot, snapshot, size)
        if resume and self.started and self.round == wanted:
            LOG.info('%s: round %s -> %s resumes at offset %d', self.spec,
                     from_snapshot, snapshot, resume)
            return resume
        self.round, self.prepared = wanted, None
        if from_snapshot is None:
            self._start_full(size)
            return 0
        if self._image is None or not self._image.snapshot_exists(
                from_snapshot):
            raise exception.ProtocolError(
                code='BAD_STATE', reason='%s has no snapshot %s to start '
                'from: import the seed first' % (self.spec, from_snapshot))
        if any(True for _ in self._image.extents(from_snapshot)):
            # A round that failed here, or a write to the replica: either
            # way the head is not N-1 any more.
            LOG.warning('%s: head differs from %s; rolling back before the '
                        'round', self.spec, from_snapshot)
            self._rollback(from_snapshot)
        if self._image.size() != size:
            self._image.resize(size)
        self.base, self.started = from_snapshot, True
        return 0

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

    def zero(self, offset, length):
        self._image.zero(offset, length)

    def complete(self, snapshot, digest=None, final=False):
        """Take snapshot N; with ``digest``, check the whole image first.

        ``final`` ends a full replication: the staging image takes its name.
        """
        if final and self.name_open == self.staging and not digest:
            raise exception.ProtocolError(
                code='BAD_STATE', reason='%s: a final round needs the image '
                'digest' % self.spec)
        self._image.flush()
        self._image.create_snapshot(snapshot)
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
                self.started = False
                raise exception.ProtocolError(
                    code='DIGEST_MISMATCH', reason='%s@%s has digest %s, the '
                    'source says %s; %s' % (self.spec, snapshot, actual,
                                            digest, done))
        self.started = False
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
                'a group could commit' % (self.spec, snapshot))
        self._image.flush()
        if digest:
            actual = self._image.digest('blake3')
            if actual != digest:
                self._rollback(self.base)
                self.started = False
                raise exception.ProtocolError(
                    code='DIGEST_MISMATCH', reason='%s has digest %s after '
                    'the round to %s, the source says %s; rolled back to %s'
                    % (self.spec, actual, snapshot, digest, self.base))
        self.prepared = snapshot

    def has_snapshot(self, snapshot):
        return (self._image is not None
                and self._image.snapshot_exists(snapshot))

    def commit(self, snapshot):
        """The group's commit: take snapshot N (again: nothing to do)."""
        if not self._image.snapshot_exists(snapshot):
            self._image.create_snapshot(snapshot)
        self.started, self.prepared = False, None

    def abort(self):
        """The round did not complete: back to N-1."""
        if self.started and self.base:
            LOG.warning('%s: round from %s did not complete; rolling back',
                        self.spec, self.base)
            self._rollback(self.base)
        self.started = False

    def _rollback(self, snapshot):
        # A terminal that died mid-round may still hold the image's lock.
        self._image.break_locks()
        self._image.rollback_to_snapshot(snapshot)
