"""Device sets and a remote terminal, both ways, over LSRP.

``send_device_set``: a device set imported through a remote terminal (the
thesis' Import Client): this terminal reads the devices and streams every
image, snapshot by snapshot, to the terminal next to the destination cluster.
``send_images``: the other way round, images streamed from the source
cluster to the terminal the devices are plugged into (lsrp.device.receiver).

The remote sink writes a staging image and names it only after the final
snapshot's digest matched the manifest's, so an interrupted remote import
never looks finished; running it again continues (see lsrp.server.sinks),
from the offset the remote terminal acknowledged if it kept the round.
"""

import asyncio

from oslo_log import log as logging
import tenacity

from lsrp.device import importer as importer_mod
from lsrp.device import reader as reader_mod
from lsrp.device import source as source_mod
from lsrp import digest as digest_mod
from lsrp import exception
from lsrp.protocol import messages as m
from lsrp.protocol import sender as sender_mod

LOG = logging.getLogger(__name__)
WINDOW = 16
BATCH = 4 << 20


async def send_device_set(client, devices, key_store, expect_digest=None,
                          pool_map=None, progress=None):
    """Stream every image of a sealed device set; returns the targets."""
    devset, crypto, manifest = importer_mod.open_shipment(
        devices, key_store, expect_digest)
    reader = reader_mod.ChunkReader(devset, crypto, manifest)
    pool_map = pool_map or {}
    targets = []
    try:
        for index, img in enumerate(manifest.images):
            disk = '%s/%s' % (pool_map.get(img['pool'], img['pool']),
                              img['name'])
            await _send_image(client, reader, manifest, index, disk)
            targets.append(disk)
    finally:
        reader.close()
        devset.close()
    return targets


async def _send_image(client, reader, manifest, img_index, disk):
    """Every snapshot of an image, each from the devices' source."""
    conn = client.conn
    session = (await conn.request(m.INIT_SESSION, {
        'disk': disk, 'shipment': manifest.shipment_id}))['session']
    snapshots = manifest.images[img_index]['snapshots']
    previous = None
    for index, snap in enumerate(snapshots):
        src = source_mod.DeviceSetImage(reader, manifest, img_index, index)
        # The manifest's digests are the identities of its snapshots: the
        # destination proves N-1 with them (doc/source/protocol.rst).
        start = {'snapshot': snap['name'], 'size': src.size(),
                 'snapshot_id': 'blake3:' + snap['digest']}
        if previous:
            start.update(from_snapshot=previous['name'],
                         base_id='blake3:' + previous['digest'])
        started = await conn.request(m.REPLICATION_START, start, session)
        resume = started['offset']
        if resume < src.size():   # else there already, from an earlier run
            # Pieces acknowledged before the connection was lost are left
            # out; a new image reads as zeros.
            await _stream(conn, session,
                          src.changes(previous and previous['name'], resume),
                          zeros=index > 0)
            await conn.request(m.REPLICATION_COMPLETE, {
                'snapshot': snap['name'],
                'image_digest': src.digest('blake3'),
                'final': index == len(snapshots) - 1}, session)
        previous = snap


async def _stream(conn, session, changes, zeros):
    """Send a source's changes, at most WINDOW requests in flight."""
    done = object()
    pending = []
    while True:
        item = await asyncio.to_thread(next, changes, done)
        if item is done:
            break
        piece, data = item
        if data is not None:
            pending.append(await conn.submit(m.REPLICATION_UPDATE, {
                'offset': piece.offset, 'data': data,
                'digest': digest_mod.block_digest(data)}, session))
        elif zeros:
            pending.append(await conn.submit(m.REPLICATION_ZERO, {
                'offset': piece.offset, 'length': piece.length}, session))
        while len(pending) >= WINDOW:
            conn.check(await pending.pop(0), m.REPLICATION_UPDATE)
    for future in pending:
        conn.check(await future, m.REPLICATION_UPDATE)


def _lost(error):
    """Whether to go on after ``error``: a connection lost mid-way.

    A terminal that cannot be reached at all is said at once, in one line.
    """
    return (isinstance(error, sender_mod.CONNECTION_LOST) and
            not isinstance(error, exception.TerminalUnreachable))


async def send_images(connect, cluster, shipment_id, images, snapshot,
                      consolidate=False, retries=3, retry_delay=1.0,
                      report=None):
    """Stream images at ``snapshot`` to the terminal holding the devices.

    The thesis' Export Driver: that terminal writes them onto the device
    set of ``shipment_id`` (declared there with ``lsrp authorize
    --device``). Without ``consolidate`` the snapshot is the seed (every
    allocated extent); with it, what changed since the newest snapshot the
    devices hold. One image after the other; an image whose connection
    was lost goes on from the offset the devices' journal holds.
    Returns ``{image: (changed bytes, bytes on the wire)}``.
    """
    base = sender_mod.AT_DESTINATION if consolidate else None
    sent = {}
    for spec in images:
        async def send_image():
            client = await connect()
            # Over the LAN: no checksum exchange (the devices have nothing
            # to compare with) and no zstd (the terminal compresses each
            # chunk for the devices anyway; twice cost the CPU both ends).
            sender = sender_mod.DiskSender(client, cluster, spec,
                                           shipment_id, compress=False,
                                           dedup=False)
            try:
                return await sender.send(base, snapshot, verify=True,
                                         describe=True)
            finally:
                await client.close()

        def going_on(state, spec=spec):
            LOG.warning('%s: connection lost (%s); going on in %.0f s',
                        spec, state.outcome.exception(), retry_delay)
        sent[spec] = await tenacity.AsyncRetrying(
            stop=tenacity.stop_after_attempt(retries + 1),
            wait=tenacity.wait_fixed(retry_delay),
            retry=tenacity.retry_if_exception(_lost), before_sleep=going_on,
            reraise=True)(send_image)
        if report:
            report(spec, *sent[spec])
    return sent
