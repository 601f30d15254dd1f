"""A destination-driven copy: an image read from a source into a sink.

``lsrp pull`` reads one image of another terminal's cluster at a snapshot
(``lsrp.protocol.remote_source.RemoteSource``) and writes it into this
site's cluster (``lsrp.server.sinks.RbdImageSink``): under a staging name
``<name>.importing-<shipment>``, which takes the image's name only after
the image read back has the BLAKE3 digest the source terminal sent at the
end of the stream. A pull that fails removes its staging image (killed, it
cannot: run again, it writes the staging image again from its start, a
write being idempotent).
"""

from lsrp import exception


def pull(source, sink, snapshot, report=None):
    """Copy ``source`` (at ``snapshot``) into ``sink``; its BLAKE3 digest.

    ``report(offset, size)`` is called after each piece. Raises
    ``VerificationFailed`` when the copy's digest is not the source's (the
    staging image is then removed by the sink).
    """
    size = source.size()
    offset = sink.start(snapshot, None, size, image=source.describe())
    try:
        for piece, data in source.changes(None, start=offset):
            if data is None:
                sink.zero(piece.offset, piece.length)
            else:
                sink.write(piece.offset, data)
            if report:
                report(piece.offset + piece.length, size)
        digest = source.digest('blake3')
        sink.complete(snapshot, digest, final=True)
    except exception.ProtocolError as e:
        sink.discard()
        if e.code == 'DIGEST_MISMATCH':
            raise exception.VerificationFailed(
                shipment=getattr(source, 'shipment', '?'),
                reason=e.kwargs.get('reason', str(e))) from e
        raise
    except BaseException:
        # Half a copy under the staging name helps no one: gone.
        sink.discard()
        raise
    return digest
