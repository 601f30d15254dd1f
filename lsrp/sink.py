"""The sink interface: where the rounds of one image are applied.

A terminal's lsrp-server makes one sink per disk session (the kind named
by the shipment's access list, ``lsrp.access``) and applies to it what the
source terminal sends: ``start`` a round from snapshot N-1 to N, ``write``
and ``zero`` its changes (in any order when ``parallel_streams``), then
``complete`` (or ``prepare`` and ``commit`` for a group of disks).

Every method runs in a worker thread, never two at once on one sink except
``write``, ``zero`` and ``differing`` of a sink with ``parallel_streams``.
Errors the peer must hear are ``lsrp.exception.ProtocolError`` with a
protocol error code (``BAD_STATE``, ``NOT_ALLOWED``, ``DIGEST_MISMATCH``);
others are ``FedexException`` subclasses naming the site and image.

Implementations (``IMPLEMENTATIONS``, checked by
``tests/unit/lsrp/test_compliance.py``):

* ``rbd``: ``lsrp.server.sinks.RbdImageSink``, an image of this site's
  cluster (a ``GroupSink``);
* ``devices``: ``lsrp.device.receiver.DeviceSetSink``, the device set of a
  shipment plugged into this terminal;
* ``terminal``: ``lsrp.protocol.remote_sink.RemoteSink``, another terminal
  over LSRP, whose lsrp-server applies each call to one of the sinks above.

The senders (``lsrp.catchup.DiskSender`` for an RBD source,
``lsrp.device.remote.send_device_set`` for a device set) speak LSRP to a
terminal directly, with what a sink call cannot say: several streams, the
checksum exchange in flight, compression on the wire.
"""

import abc

IMPLEMENTATIONS = {
    'rbd': 'lsrp.server.sinks.RbdImageSink',
    'devices': 'lsrp.device.receiver.DeviceSetSink',
    'terminal': 'lsrp.protocol.remote_sink.RemoteSink',
}


class Sink(metaclass=abc.ABCMeta):
    """Applies the rounds of one image: snapshot N-1 -> N, atomically."""

    #: Writes of a round may come from several connections, in any order.
    parallel_streams = False
    #: The progress of a round survives the sink (a journal on disk): a
    #: round whose source was lost need not be kept in memory to resume.
    durable_progress = False
    #: The snapshot a group commit waits for (``GroupSink``), else None.
    prepared = None

    @abc.abstractmethod
    def info(self):
        """What is here: ``(size, newest snapshot name or None)``.

        The source sends the round from that snapshot (``lsrp consolidate
        --remote`` and catch-up start from what the destination holds).
        """

    @abc.abstractmethod
    def start(self, snapshot, from_snapshot, size, resume=0, image=None,
              proof=None):
        """Prepare the round ``from_snapshot`` -> ``snapshot``.

        :param snapshot: N, the snapshot the round ends with.
        :param from_snapshot: N-1, which the sink must hold; None for the
            first snapshot of an image (a full copy).
        :param size: the image's size at N.
        :param resume: the offset below which this same round was applied
            before its connections were lost (from the server's
            acknowledgements); 0 when nothing is known.
        :param image: ``{'object_size', 'features'}`` of the source image,
            for a sink that creates it.
        :param proof: ``base_id``, ``snapshot_id`` and ``base_digest`` of
            REPLICATION_START: the sink proves that its N-1 has the source's
            content (not only its name) before it writes anything.
        :returns: the offset the source goes on from: ``size`` when N is
            here already, an offset up to which this round is applied, or
            0. Raises ``ProtocolError(BAD_STATE)`` when N-1 is not here.
        """

    @abc.abstractmethod
    def differing(self, offset, block, digests):
        """Indexes of the blocks here whose content has another digest.

        :param offset: where the first block starts.
        :param block: the size of each block (the last may be cut by the
            image's end).
        :param digests: ``lsrp.digest.block_digest`` of each block at the
            source.
        :returns: the list of indexes the source must send; a sink with
            nothing to compare with returns all of them.
        """

    @abc.abstractmethod
    def write(self, offset, data):
        """Apply ``data`` at ``offset``; it was checked against its digest."""

    @abc.abstractmethod
    def zero(self, offset, length):
        """Make ``length`` bytes at ``offset`` read as zeros."""

    @abc.abstractmethod
    def complete(self, snapshot, digest=None, final=False):
        """End the round: snapshot N exists here and is durable.

        :param digest: the BLAKE3 image digest of N at the source; when
            given, the sink checks the whole image against it and raises
            ``ProtocolError(DIGEST_MISMATCH)`` (after undoing the round)
            if it differs.
        :param final: the last snapshot of a full copy: the copy becomes
            visible under its name only now.
        :returns: the digest checked, or None.
        """

    @abc.abstractmethod
    def has_snapshot(self, snapshot):
        """Whether snapshot ``snapshot`` is here (a round ended with it)."""

    @abc.abstractmethod
    def abort(self):
        """The round will not complete: undo it or keep its progress.

        Afterwards nothing reads a half-applied round as a snapshot.
        """

    @abc.abstractmethod
    def close(self):
        """Let go of the image or devices (called once, last)."""


class GroupSink(Sink):
    """A sink whose snapshot N may wait for a group commit (C4).

    The disks of a VM must show round N together: each disk's round is
    ``prepare``d (applied, flushed, checked), then ``commit`` takes N on
    every disk of the group (``lsrp.server.groups``).
    """

    @abc.abstractmethod
    def prepare(self, snapshot, digest=None):
        """The round to ``snapshot`` is applied and durable; N waits.

        With ``digest`` the whole image is checked first, as in
        ``complete``. Sets ``prepared`` to ``snapshot``.
        """

    @abc.abstractmethod
    def commit(self, snapshot, defer=False):
        """Take snapshot N (nothing to do when it is here already).

        ``defer``: a round started with a record may end without snapshot
        N and return the record to write once the group has answered
        (``lsrp.server.records``); otherwise returns None.
        """
