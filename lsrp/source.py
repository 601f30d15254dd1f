"""The source interface: one image at one snapshot, whole or as a delta.

Whatever is sent somewhere (onto devices, over LSRP to a terminal) is read
from a source: the changes since an earlier snapshot, or every allocated
range for a full copy, and the image digest the receiving side checks.

Implementations (``IMPLEMENTATIONS``, checked by
``tests/unit/lsrp/test_compliance.py``):

* ``rbd``: ``lsrp.rbd.image.Image`` opened at a snapshot: an RBD snapshot,
  or with ``from_snapshot`` the delta between two (``rbd diff``);
* ``devices``: ``lsrp.device.source.DeviceSetImage``, one snapshot of an
  image on a device set (what ``lsrp import --remote`` sends);
* ``terminal``: ``lsrp.protocol.remote_source.RemoteSource``, an image of
  another terminal's cluster, read over LSRP (READ_* requests, served by
  ``lsrp.server.reads`` to the peers the shipment's access list allows).
"""

import abc

IMPLEMENTATIONS = {
    'rbd': 'lsrp.rbd.image.Image',
    'devices': 'lsrp.device.source.DeviceSetImage',
    'terminal': 'lsrp.protocol.remote_source.RemoteSource',
}


class Source(metaclass=abc.ABCMeta):
    """The bytes of one image at one snapshot."""

    @abc.abstractmethod
    def size(self):
        """The image's size in bytes at this snapshot."""

    @abc.abstractmethod
    def describe(self):
        """What a new copy of the image needs.

        :returns: ``{'object_size': int, 'features': [feature names]}``;
            values are None where the source does not know them.
        """

    @abc.abstractmethod
    def changes(self, from_snapshot, start=0):
        """Yield ``(Extent, data)`` for what changed since ``from_snapshot``.

        :param from_snapshot: the snapshot the receiver holds; None for a
            full copy (every allocated range of the image).
        :param start: leave out the pieces that end at or before this
            offset (a resumed transfer).
        :returns: an iterator of ``(lsrp.rbd.extents.Extent, bytes)`` in
            offset order, pieces not overlapping; a range that must read
            as zeros comes as ``(Extent(offset, length, False), None)``.
            Raises ``FedexException`` for a ``from_snapshot`` the source
            cannot diff against.
        """

    @abc.abstractmethod
    def digest(self, algorithm):
        """The digest of the whole image at this snapshot, holes as zeros.

        :param algorithm: ``'blake3'`` (what sinks check) or ``'sha256'``
            (``rbd export ... - | sha256sum``).
        :returns: the hex digest. An RBD source computes it from the
            content; a device set returns the one recorded from the source
            cluster (sinks check the content against it) and raises
            ``FedexException`` for an algorithm it did not record.
        """

    @abc.abstractmethod
    def close(self):
        """Let go of the image or devices."""
