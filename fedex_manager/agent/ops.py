"""What a terminal does for the manager: one function per operation.

Each calls the same engine code as the ``lsrp`` command (the exporter,
importer and verifier of :mod:`lsrp.device`, the rounds of
:mod:`lsrp.catchup`); nothing here re-implements a step. Every operation is
idempotent: run again after a crash (or a second time by a resumed flow) it
finds its work done, or resumes it from the engine's journal.

An operation is ``fn(terminal, params, progress) -> result dict``;
``progress`` is a :class:`Reporter`, which also carries the cancel flag.
"""

import asyncio
import hashlib
import json
import os
import shutil
import time

from oslo_log import log as logging

from fedex_manager import keys as keys_mod
from lsrp import access
from lsrp import catchup
from lsrp.device import deviceset as deviceset_mod
from lsrp.device import export as export_mod
from lsrp.device import importer as importer_mod
from lsrp.device import verify as verify_mod
from lsrp import exception
from lsrp import progress as progress_mod
from lsrp.protocol import sender as sender_mod
from lsrp.server import records
from lsrp import tls

LOG = logging.getLogger(__name__)


class Cancelled(exception.ManagerError):
    message = 'operation %(op_id)s cancelled'


class Reporter(progress_mod.Progress):
    """The engine's progress sink, turned into E-events to the manager."""

    def __init__(self, op_id, send, interval=1.0):
        super().__init__('none')
        self.op_id, self.send, self.interval = op_id, send, interval
        self.cancelled = False
        self.bytes_done = 0
        self.bytes_total = 0
        self._base = 0          # bytes of earlier tasks of this operation
        self._sent = 0.0
        self._begin = time.monotonic()

    def check(self):
        if self.cancelled:
            raise Cancelled(op_id=self.op_id)

    def start(self, label, total):
        super().start(label, total)
        self._base = self.bytes_done
        self.bytes_total = max(self.bytes_total, self._base + total)
        self.report(force=True)

    def advance(self, n):
        super().advance(n)
        self.bytes_done = self._base + self.done
        self.report()
        self.check()

    def add(self, n, total=None):
        """Progress of operations that count for themselves."""
        self.bytes_done += n
        if total is not None:
            self.bytes_total = total
        self.report()

    def report(self, force=False):
        now = time.monotonic()
        if force or now - self._sent >= self.interval:
            self._sent = now
            seconds = now - self._begin
            rate = self.bytes_done / seconds if seconds > 0 else None
            self.send(self.op_id, self.bytes_done, self.bytes_total, rate)


def _keys(terminal, params):
    return keys_mod.EngineKeys(terminal.key_store, params['shipment_id'],
                               params['key_ref'])


def _exporter(terminal, params, progress):
    return export_mod.Exporter(terminal.cluster(), _keys(terminal, params),
                               terminal.state_dir, progress=progress,
                               **terminal.device_options)


def snapshot(terminal, params, progress):
    """Snapshot ``images`` as ``snapshot``; those that have it are kept."""
    cluster = terminal.cluster()
    missing = []
    sizes = {}
    for spec in params['images']:
        pool, name = spec.split('/', 1)
        with cluster.pool(pool) as p, p.open_image(name) as img:
            if not img.snapshot_exists(params['snapshot']):
                missing.append(spec)
            size = sizes[spec] = img.size()
        progress.add(0, (progress.bytes_total or 0) + size)
    if missing:
        cluster.snapshot_images(missing, params['snapshot'])
    return {'snapshot': params['snapshot'], 'created': missing,
            'bytes_total': progress.bytes_total, 'sizes': sizes}


def export(terminal, params, progress):
    """Export the images at the seed snapshot onto the devices (resumes)."""
    shipment = _exporter(terminal, params, progress).export(
        params['images'], params['snapshot'], params['devices'],
        params['shipment_id'], params.get('parity'),
        create_snapshot=False)
    return {'shipment_id': shipment, 'labels': labels(params['devices'])}


def consolidate(terminal, params, progress):
    version = _exporter(terminal, params, progress).consolidate(
        params['shipment_id'], params['snapshot'], create_snapshot=True
        if params.get('create_snapshot') else False)
    return {'version': version}


def seal(terminal, params, progress):
    """Seal: the manifest digest, and the seal digest over the devices."""
    digest = _exporter(terminal, params, progress).seal(
        params['shipment_id'])
    found = labels(params['devices'])
    return {'manifest_digest': digest, 'labels': found,
            'seal_digest': seal_digest(digest, found),
            'device_bytes': device_bytes(params['devices'])}


def device_bytes(devices):
    """{serial: bytes of its files}: what the shipment holds, as sealed.

    Recorded so that the dedup of a wave's shipment can be read (its
    clones' common chunks are stored once: fedex_manager.waves).
    """
    out = {}
    for path in devices:
        total = 0
        for root, _dirs, files in os.walk(path):
            for name in files:
                try:
                    total += os.path.getsize(os.path.join(root, name))
                except OSError:
                    pass        # a temporary file renamed meanwhile
        out[device_serial(path)] = total
    return out


def labels(devices):
    """{serial: device id in the label} of the device directories."""
    out = {}
    for path in devices:
        try:
            label = deviceset_mod.read_label(path)
        except exception.NotADevice:
            label = None
        out[device_serial(path)] = label and label.get('device_id')
    return out


def device_serial(path):
    """A device's serial: the name of its slot's mount point.

    (A device directory must be empty before its first export, so the
    serial is not kept inside it.)
    """
    return os.path.basename(os.path.normpath(path))


def seal_digest(manifest_digest, found):
    blob = json.dumps([manifest_digest, sorted(found.items())])
    return hashlib.sha256(blob.encode()).hexdigest()


def verify(terminal, params, progress):
    """The custody check and the full read-back at the destination.

    Compares the serials and device ids of the devices at hand with those
    recorded at seal, and the manifest with the digest recorded at seal;
    then reads every chunk back. Any mismatch raises CustodyMismatch.
    """
    present = [d for d in params['devices'] if os.path.isdir(d)]
    found = labels(present)
    sealed = params['labels']
    wrong = sorted(s for s, dev in found.items()
                   if s not in sealed or sealed[s] != dev)
    if wrong:
        raise exception.CustodyMismatch(
            shipment=params['shipment_id'], reason='devices %s do not match '
            'the seal record (serial or device id changed)' % ', '.join(wrong))
    missing = sorted(set(sealed) - set(found))
    if len(missing) > params.get('parity', 0):
        raise exception.CustodyMismatch(
            shipment=params['shipment_id'], reason='devices %s are missing, '
            'more than parity covers' % ', '.join(missing))
    try:
        report = verify_mod.verify(present, _keys(terminal, params),
                                   params['manifest_digest'])
    except exception.VerificationFailed as e:
        raise exception.CustodyMismatch(shipment=params['shipment_id'],
                                        reason=str(e))
    report['missing_serials'] = missing
    return report


def import_(terminal, params, progress):
    present = [d for d in params['devices'] if os.path.isdir(d)]
    importer = importer_mod.Importer(
        terminal.cluster(), _keys(terminal, params), terminal.state_dir,
        params.get('pool_map') or {}, progress=progress)
    images = importer.run(present, params['manifest_digest'])
    return {'images': images}


def _round(terminal, params, progress, number):
    cluster = terminal.cluster()
    snapshot = '%s-r%d' % (params['shipment_id'], number)
    # An interrupted run of this round left its snapshot at the source but
    # never committed it at the destination (the commit is the round's
    # last step): take it again. Never the base: the engine names a
    # round's snapshot past every round snapshot either site holds
    # (catchup.CatchUp.plan), so round N's may be r(N+1), the next round's
    # base, as after a cutover rolled back whose final delta left rN at
    # the destination only; removing it stranded the migration ("the
    # source site has no snapshot ... to start from", seen in the soak).
    for spec in params['images'] if snapshot != params['base'] else ():
        pool, name = spec.split('/', 1)
        with cluster.pool(pool) as p, p.open_image(name) as img:
            if img.snapshot_exists(snapshot):
                img.remove_snapshot(snapshot)
    peer = params['peer']
    context = tls.client_context(*terminal.tls_files())
    host, port = peer['address'].rsplit(':', 1)

    async def connect():
        return await catchup.TerminalClient(
            host, int(port), context, peer['name'], terminal.name).connect()

    limiter = catchup.RateLimiter(params.get('rate_cap') or None)
    engine = catchup.CatchUp(cluster, connect, params['shipment_id'],
                             params['images'], params['base'],
                             prefix='%s-r' % params['shipment_id'],
                             limiter=limiter, streams=params.get('streams', 1))
    try:
        report = asyncio.run(engine.round(number, verify=params.get(
            'verify', False)))
    except exception.TerminalUnreachable:
        raise
    except catchup.CONNECTION_LOST as e:
        # The engine's own resumes are spent: name the peer, so that the
        # manager waits for it rather than failing the migration.
        raise exception.TerminalUnreachable(
            peer='%s (%s)' % (peer['name'], peer['address']),
            reason='%s: %s' % (type(e).__name__, e))
    progress.add(report.wire_bytes, report.wire_bytes)
    return {'round': report.round, 'snapshot': report.snapshot,
            'changed_bytes': report.changed_bytes,
            'wire_bytes': report.wire_bytes,
            'seconds': round(report.seconds, 3),
            'wire_rate': report.wire_rate, 'estimate': report.estimate}


def catchup_round(terminal, params, progress):
    """One WAN round from the base snapshot to round ``number``."""
    return _round(terminal, params, progress, params['number'])


def final_delta(terminal, params, progress):
    """The last round, with the VM paused by the caller, verified whole."""
    params = dict(params, verify=True)
    return _round(terminal, params, progress, params['number'])


def erase(terminal, params, progress):
    """Crypto-erase: destroy the key, then wipe the device directories."""
    if params.get('key_ref'):
        terminal.key_store.delete(params['key_ref'])
    wiped = []
    for path in params.get('devices') or []:
        if os.path.isdir(path):
            serial = device_serial(path)
            for entry in os.listdir(path):
                full = os.path.join(path, entry)
                if os.path.isdir(full):
                    shutil.rmtree(full)
                else:
                    os.unlink(full)
            wiped.append(serial)
    return {'erased': wiped, 'key_destroyed': bool(params.get('key_ref'))}


def _prefixes(params):
    return tuple(params.get('prefixes') or [params['prefix']])


def remove_snapshots(terminal, params, progress):
    """Remove snapshots named with ``prefix``(es) from ``images``.

    And the records of final states (``lsrp.server.records``) first: they
    are clones of these snapshots.
    """
    cluster = terminal.cluster()
    prefixes = _prefixes(params)
    removed = []
    for spec in params['images']:
        pool, name = spec.split('/', 1)
        try:
            with cluster.pool(pool) as p:
                removed += records.remove_with_snapshots(p, name, prefixes)
        except exception.ImageNotFound:
            continue
    return {'removed': removed}


def remove_images(terminal, params, progress):
    """Remove the images a migration made at this site (an abort).

    Only an image whose every snapshot is ours (named with ``prefix``) and
    that has at least one: an image without our snapshots is not ours.
    """
    cluster = terminal.cluster()
    prefixes = _prefixes(params)
    removed = []
    for spec in params['images']:
        pool, name = spec.split('/', 1)
        with cluster.pool(pool) as p:
            if not p.image_exists(name):
                continue
            removed += records.remove(p, name, prefixes=prefixes)
            with p.open_image(name) as img:
                snaps = [x for x in img.list_snapshots()
                         if x.namespace == 'user']
                if not snaps or not all(x.name.startswith(prefixes)
                                        for x in snaps):
                    continue
                for snap in reversed(snaps):
                    if snap.protected:
                        img.unprotect_snapshot(snap.name)
                    img.remove_snapshot(snap.name)
            p.remove_image(name)
            removed.append(spec)
    return {'removed': removed}


def authorize(terminal, params, progress):
    """Let lsrp-server take rounds of ``images`` under the name ``name``.

    The catch-up of a migration whose images were not all imported from
    one shipment (they came in several, or are seeded over the WAN).
    """
    access.authorize(terminal.state_dir, params['name'], params['images'],
                     source=params.get('source'), sink='rbd')
    return {'authorized': sorted(params['images'])}


def seed_over_wan(terminal, params, progress):
    """A full copy of each image at ``snapshot`` to the peer, over LSRP.

    What a lost shipment would have carried. Each image lands in a staging
    image at the destination, named only once the copy's digest matched
    (``final``); run again, an image copied already is skipped and one
    interrupted is written again.
    """
    cluster = terminal.cluster()
    peer = params['peer']
    context = tls.client_context(*terminal.tls_files())
    host, port = peer['address'].rsplit(':', 1)
    limiter = catchup.RateLimiter(params.get('rate_cap') or None)

    async def copy(spec):
        client = await catchup.TerminalClient(
            host, int(port), context, peer['name'], terminal.name).connect()
        try:
            sender = sender_mod.DiskSender(client, cluster, spec,
                                           params['name'], limiter)
            return await sender.send(None, params['snapshot'], verify=True,
                                     final=True)
        finally:
            await client.close()

    done = {}
    for spec in params['images']:
        progress.check()
        changed, wire = asyncio.run(copy(spec))
        progress.add(wire)
        done[spec] = {'changed_bytes': changed, 'wire_bytes': wire}
    return {'images': done,
            'wire_bytes': sum(x['wire_bytes'] for x in done.values())}


OPERATIONS = {
    'authorize': authorize, 'seed_over_wan': seed_over_wan,
    'snapshot': snapshot, 'export': export, 'consolidate': consolidate,
    'seal': seal, 'verify': verify, 'import': import_,
    'catchup_round': catchup_round, 'final_delta': final_delta,
    'erase': erase, 'remove_snapshots': remove_snapshots,
    'remove_images': remove_images,
}
