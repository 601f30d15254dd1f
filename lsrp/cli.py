"""``lsrp``: the terminal operator's command for shipments.

    lsrp export IMAGE... --snapshot S --device D1 --device D2 --device D3
    lsrp consolidate --shipment-id ID --snapshot S2
    lsrp seal --shipment-id ID            prints the manifest digest
    lsrp verify --device D1 ...           checks devices without importing
    lsrp show --device D1 ...             what a device set holds
    lsrp import --device D1 ... --expect-digest DIGEST
    lsrp catchup --shipment-id ID --base SNAP --server HOST:PORT POOL/IMAGE...
    lsrp pull --from HOST:PORT --shipment-id ID --snapshot S POOL/IMAGE

Exit codes: 0 success, 3 verification failed (damaged or altered data, wrong
digest), 2 usage or any other error.
"""

import asyncio
import json
import ssl
import sys

from oslo_config import cfg
from oslo_log import log as logging

from lsrp import access
from lsrp import catchup
from lsrp import cmdline
from lsrp.device import deviceset as deviceset_mod
from lsrp.device import export as export_mod
from lsrp.device import importer as importer_mod
from lsrp.device import keystore
from lsrp.device import receiver as receiver_mod
from lsrp.device import remote as remote_mod
from lsrp.device import verify as verify_mod
from lsrp import exception
from lsrp import memory
from lsrp import opts
from lsrp import progress as progress_mod
from lsrp.protocol import client as client_mod
from lsrp.protocol import remote_source
from lsrp.protocol import sender as sender_mod
from lsrp import pull as pull_mod
from lsrp.rbd import Cluster
from lsrp.server import sinks as sinks_mod
from lsrp import tls

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

EXIT_OK, EXIT_ERROR, EXIT_VERIFY = 0, 2, 3
# What a peer answers when the bytes (or the snapshot to start from) are not
# the ones the source has: a verification failure, like a local one.
REMOTE_VERIFY_CODES = ('DIGEST_MISMATCH', 'BASE_DIFFERS')
EXIT_CODES = ('Exit codes: 0 done, 3 verification failed (damaged or altered '
              'data, wrong digest), 2 any other error.')


COMMAND_LIST = [
    cmdline.Command(
        'export', 'Export images at a snapshot onto a new device set.',
        'lsrp export --ceph-conf /etc/ceph/ceph.conf --snapshot fedex-base '
        '--create-snapshot --shipment-id ship1 --device /mnt/usb0 '
        '--device /mnt/usb1 --device /mnt/usb2 vms/disk0 vms/disk1'),
    cmdline.Command(
        'consolidate', 'Append the changes up to a newer snapshot to the '
        'devices of a shipment.',
        'lsrp consolidate --shipment-id ship1 --snapshot fedex-c1 '
        '--create-snapshot'),
    cmdline.Command(
        'seal', 'Write the final manifest and print its digest for the '
        'receiver.', 'lsrp seal --shipment-id ship1'),
    cmdline.Command(
        'verify', 'Check a device set without importing it.',
        'lsrp verify --device /mnt/usb0 --device /mnt/usb1 --device '
        '/mnt/usb2 --expect-digest DIGEST'),
    cmdline.Command(
        'show', 'Show what a device set holds.',
        'lsrp show --device /mnt/usb0 --device /mnt/usb1 --device /mnt/usb2'),
    cmdline.Command(
        'authorize', 'Let this terminal\'s lsrp-server accept images of a '
        'shipment, or write them onto devices here.',
        'lsrp authorize --shipment-id ship1 --peer terminal-site-a '
        'vms/disk0 vms/disk1'),
    cmdline.Command(
        'import', 'Import a sealed device set into the local cluster, '
        'verified.',
        'lsrp import --ceph-conf /etc/ceph/ceph.conf --expect-digest DIGEST '
        '--device /mnt/usb0 --device /mnt/usb1 --device /mnt/usb2'),
    cmdline.Command(
        'catchup', 'Send the changes since the seed to the destination '
        'terminal, round after round, until they fit a threshold.',
        'lsrp catchup --shipment-id ship1 --base fedex-c1 --server '
        '10.0.0.2:15500 --server-name terminal-site-b vms/disk0 vms/disk1'),
    cmdline.Command(
        'pull', 'Copy an image at a snapshot from another terminal\'s '
        'cluster into this one, verified.',
        'lsrp pull --from 10.0.0.1:15500 --server-name terminal-site-a '
        '--shipment-id ship1 --snapshot fedex-base vms/disk0'),
]
_BY_NAME = {c.name: c for c in COMMAND_LIST}


def _devices(parser, required=True):
    parser.add_argument('--device', dest='devices', action='append',
                        required=required, metavar='DIR',
                        help='A shipping device (directory); repeat for each '
                        'device, in order.')


def _progress(parser):
    parser.add_argument('--progress', choices=['bar', 'json', 'none'],
                        help='Progress output (default: bar on a terminal, '
                        'none otherwise).')


def _peer(parser, required=False):
    parser.add_argument('--server-name', required=required,
                        help='The name of the terminal at the other end, as '
                        'in its certificate.')
    cmdline.add_setting_flags(parser, cmdline.TERMINAL_FLAGS)


def _remote(parser, what):
    parser.add_argument('--remote', metavar='HOST:PORT', help=what)
    _peer(parser)


def _command(subparsers, name, description=None):
    return cmdline.add_command(subparsers, 'lsrp', _BY_NAME[name],
                               description)


def add_parsers(subparsers):
    p = _command(subparsers, 'export', 'Export images at a snapshot onto a '
                 'new device set: deduplicated, compressed, encrypted with '
                 'a key that stays in this terminal\'s key store, with '
                 'parity. Running it again after a crash continues.')
    p.add_argument('images', nargs='+', metavar='POOL/IMAGE',
                   help='The images to export, at --snapshot.')
    _remote(p, 'Send the images to the lsrp-server of the terminal the '
            'devices are plugged into (declared there with "lsrp authorize '
            '--device"), instead of writing local devices.')
    p.add_argument('--snapshot', required=True,
                   help='The snapshot of every image to export.')
    p.add_argument('--create-snapshot', action='store_true',
                   help='Take the snapshot on every image first (pause the '
                   'writers for a consistent set).')
    p.add_argument('--shipment-id', help='Name of the shipment (default: a '
                   'new one, printed).')
    p.add_argument('--parity', type=int, help='Devices that may be lost '
                   '(default 1 with 3 or more devices, else 0).')
    p.add_argument('--chunk-size', type=int, help='Bytes per deduplicated '
                   'chunk (default: [shipment] chunk_size).')
    _devices(p, required=False)
    cmdline.add_setting_flags(p, cmdline.CEPH_FLAGS)
    _progress(p)

    p = _command(subparsers, 'consolidate')
    p.add_argument('--shipment-id', required=True,
                   help='The shipment whose devices get the changes.')
    p.add_argument('--snapshot', required=True,
                   help='The newer snapshot of every image.')
    p.add_argument('--create-snapshot', action='store_true',
                   help='Take the snapshot on every image first.')
    p.add_argument('images', nargs='*', metavar='POOL/IMAGE', help='With '
                   '--remote: the images of the shipment.')
    _remote(p, 'The terminal the devices are plugged into (see export).')
    cmdline.add_setting_flags(p, cmdline.CEPH_FLAGS)
    _progress(p)

    p = _command(subparsers, 'seal', 'Write the final manifest onto the '
                 'devices and print its digest: give it to the receiver '
                 'by another way than the devices, for "lsrp import '
                 '--expect-digest".')
    p.add_argument('--shipment-id', required=True,
                   help='The shipment to seal.')

    for name in ('verify', 'show'):
        p = _command(subparsers, name)
        _devices(p)
        p.add_argument('--expect-digest', help='The digest printed by seal '
                       'at the sending site.')

    p = _command(subparsers, 'catchup', 'Send the changes since the seed to '
                 'the destination terminal over LSRP (mutual TLS), round '
                 'after round, until the next round fits the threshold. '
                 'Prints one JSON line per round.')
    p.add_argument('disks', nargs='+', metavar='POOL/IMAGE',
                   help='The images of the shipment to catch up.')
    p.add_argument('--shipment-id', required=True,
                   help='The shipment whose seed the destination imported.')
    p.add_argument('--base', required=True, help='The last snapshot both '
                   'sites hold (the seed, or the last round).')
    # (dest: CONF.command.server would be the [server] group's name.)
    p.add_argument('--server', dest='server_address', required=True,
                   metavar='HOST:PORT',
                   help='The destination terminal\'s lsrp-server.')
    _peer(p, required=True)
    p.add_argument('--threshold-mib', type=float, default=8,
                   help='Stop when the next round would send at most this.')
    p.add_argument('--threshold-seconds', type=float,
                   help='Or when it would take at most this long at the '
                   'rate the last round reached.')
    p.add_argument('--max-rounds', type=int, default=10,
                   help='Give up after this many rounds.')
    p.add_argument('--retries', type=int, default=3, help='Times a round '
                   'whose connections were lost is resumed (from the offset '
                   'the destination acknowledged) before giving up.')
    p.add_argument('--rate-limit-mib', type=float, default=0,
                   help='Cap in MiB/s over all streams (0: none).')
    p.add_argument('--no-dedup', action='store_true',
                   help='Send changed blocks without asking first whether '
                   'the destination has them.')
    p.add_argument('--streams', type=int, default=2,
                   help='TCP connections per disk.')
    p.add_argument('--verify', action='store_true', help='Check the whole '
                   'image digest at the destination after the last round.')
    cmdline.add_setting_flags(p, cmdline.CEPH_FLAGS)

    p = _command(subparsers, 'authorize', 'Let this terminal\'s '
                 'lsrp-server accept these images of a shipment (a remote '
                 'import, catch-up), or, with --device, write them onto these '
                 'devices (a remote export).')
    p.add_argument('--shipment-id', required=True,
                   help='The shipment the images belong to.')
    p.add_argument('images', nargs='+', metavar='POOL/IMAGE',
                   help='The images peers may send.')
    _devices(p, required=False)
    p.add_argument('--parity', type=int, help='With --device: devices that '
                   'may be lost (default 1 with 3 or more devices, else 0).')
    p.add_argument('--peer', dest='peers', action='append', metavar='NAME',
                   help='Only this terminal (its certificate name) may send '
                   'them; repeat for more. Default: any terminal of the CA.')

    p = _command(subparsers, 'import', 'Import a sealed device set into the '
                 'local cluster: every image is written under a staging '
                 'name, checked against the manifest\'s digests, then '
                 'renamed.')
    _devices(p)
    p.add_argument('--expect-digest', help='The digest printed by seal at '
                   'the sending site.')
    _remote(p, 'Send the images to the lsrp-server of the terminal next '
            'to the destination cluster, instead of writing to a local one.')
    p.add_argument('--skip-space-check', action='store_true',
                   help='Import even when a pool seems too small for the '
                   'shipment.')
    p.add_argument('--pool-map', action='append', default=[],
                   metavar='SRC=DST', help='Import images of pool SRC into '
                   'pool DST.')
    p.add_argument('--verify-readback', action='store_true', default=None,
                   help='Also read every imported snapshot back from Ceph '
                   'and check its digest (default: [shipment] '
                   'import_readback; what is written is always checked as '
                   'it is written).')
    cmdline.add_setting_flags(p, cmdline.CEPH_FLAGS)
    _progress(p)
    _add_pull(subparsers)


def _add_pull(subparsers):
    p = _command(subparsers, 'pull', 'Copy an image at a snapshot from the '
                 'cluster of the terminal at --from into this site\'s '
                 'cluster (a transfer driven by the destination). That '
                 'terminal must allow this one to read it (lsrp authorize '
                 '--peer THIS-TERMINAL there). The copy is written under '
                 'the name POOL/IMAGE.importing-SHIPMENT, read back, checked '
                 'against the digest the source sends, then renamed; run '
                 'again after a failure, it starts over.')
    p.add_argument('image', metavar='POOL/IMAGE',
                   help='The image at the other terminal.')
    p.add_argument('--from', dest='from_address', required=True,
                   metavar='HOST:PORT', help='The lsrp-server of the '
                   'terminal whose cluster holds the image.')
    p.add_argument('--shipment-id', required=True, help='The shipment '
                   'whose access list at that terminal names the image.')
    p.add_argument('--snapshot', required=True,
                   help='The snapshot of the image to copy.')
    p.add_argument('--to', metavar='POOL/IMAGE', help='The name of the '
                   'copy here (default: the same as there); it must not '
                   'exist.')
    _peer(p)
    cmdline.add_setting_flags(p, cmdline.CEPH_FLAGS)
    _progress(p)


def _flag(args, dest):
    try:
        return getattr(args, dest)
    except (AttributeError, cfg.NoSuchOptError):
        return None     # not a flag of this subcommand


def _site_name(args):
    """The name of the site of the cluster this command uses, or None.

    ``--site``, else ``[ceph] site_name`` of the configuration file, but
    only for the cluster of that file: a ``--ceph-conf`` given alone names
    another cluster, which that name may not be (it said "imported at
    site-a" of site B's cluster).
    """
    if _flag(args, 'site'):
        return args.site
    if _flag(args, 'ceph_conf'):
        return None
    return CONF.ceph.site_name


def _where(args, cluster):
    """(site name or None, fsid, words) naming the cluster in an answer."""
    name, fsid = _site_name(args), cluster.fsid
    if name:
        return name, fsid, name
    return None, fsid, 'cluster %s (%s)' % (fsid, cluster.conffile)


def _cluster(args):
    c = CONF.ceph
    # Without a site name, errors name the conf file's directory.
    return Cluster(c.conf_file, c.keyring, client=c.client_name,
                   site=_site_name(args), connect_timeout=c.connect_timeout,
                   # We write and read in large pieces and flush ourselves:
                   # librbd's cache would only add memory and copies.
                   options={'rbd_cache': 'false'}, op_timeout=c.op_timeout)


def _progress_for(args):
    mode = getattr(args, 'progress', None) or (
        'bar' if sys.stderr.isatty() else 'none')
    return progress_mod.Progress(mode)


def _keys():
    return keystore.FileKeyStore(CONF.shipment.key_dir)


def _print(args, obj, text):
    if getattr(args, 'progress', None) == 'json':
        print(json.dumps(obj))
    else:
        print(text)


def _exporter(args, cluster):
    s = CONF.shipment
    return export_mod.Exporter(
        cluster, _keys(), s.state_dir, s.shard_size, s.zstd_level, s.workers,
        CONF.ceph.read_workers, _progress_for(args), s.checkpoint_mib << 20,
        s.compression, s.lz4_acceleration)


def _send_remote(args, cluster, consolidate):
    connect = _terminal(args.remote, args)

    def report(spec, changed, wire):
        _print(args, {'event': 'sent', 'image': spec, 'changed_bytes':
                      changed, 'wire_bytes': wire},
               'sent %s: %d bytes (%d on the wire)' % (spec, changed, wire))
    if args.create_snapshot:
        cluster.snapshot_images(args.images, args.snapshot)
    asyncio.run(remote_mod.send_images(
        connect, cluster, args.shipment_id, args.images, args.snapshot,
        consolidate, report=report))


def do_export(args):
    if args.remote:
        if not args.shipment_id or args.devices:
            raise exception.FedexException(
                'export --remote needs --shipment-id (as declared at the '
                'terminal) and no --device: the devices are over there')
        with _cluster(args) as cluster:
            _send_remote(args, cluster, consolidate=False)
        _print(args, {'event': 'exported', 'shipment_id': args.shipment_id},
               'exported through %s: %s' % (args.remote, args.shipment_id))
        return
    if not args.devices:
        raise exception.FedexException('export needs --device (or --remote)')
    with _cluster(args) as cluster:
        shipment_id = _exporter(args, cluster).export(
            args.images, args.snapshot, args.devices, args.shipment_id,
            args.parity, args.chunk_size or CONF.shipment.chunk_size,
            args.create_snapshot)
        site, fsid, where = _where(args, cluster)
    _print(args, {'event': 'exported', 'shipment_id': shipment_id,
                  'site': site, 'fsid': fsid},
           'exported from %s (%s): %s' % (
               where, ', '.join(args.images), shipment_id))


def do_consolidate(args):
    if args.remote:
        if not args.images:
            raise exception.FedexException(
                'consolidate --remote needs the images of the shipment')
        with _cluster(args) as cluster:
            _send_remote(args, cluster, consolidate=True)
        _print(args, {'event': 'consolidated',
                      'shipment_id': args.shipment_id},
               'consolidated through %s: %s' % (args.remote,
                                                args.shipment_id))
        return
    with _cluster(args) as cluster:
        version = _exporter(args, cluster).consolidate(
            args.shipment_id, args.snapshot, args.create_snapshot)
    _print(args, {'event': 'consolidated', 'shipment_id': args.shipment_id,
                  'version': version},
           'consolidated: %s manifest version %d'
           % (args.shipment_id, version))


def do_seal(args):
    exporter = export_mod.Exporter(None, _keys(), CONF.shipment.state_dir)
    digest = exporter.seal(args.shipment_id)
    print('sealed: %s manifest digest %s' % (args.shipment_id, digest))


def do_verify(args):
    report = verify_mod.verify(args.devices, _keys(), args.expect_digest)
    print(json.dumps(report, indent=1))


def do_show(args):
    devset = deviceset_mod.DeviceSet.open(args.devices)
    out = {'shipment_id': devset.shipment_id,
           'devices': {i: devset.describe(i) for i in range(devset.n)},
           'data_shards': devset.k, 'parity_shards': devset.m,
           'missing': devset.missing()}
    try:
        _, _, manifest = importer_mod.open_shipment(args.devices, _keys(),
                                                    args.expect_digest)
    except (exception.KeyMissing, exception.DevicesMissing) as e:
        out['manifest'] = 'not readable here: %s' % e
    else:
        # Zeros after a stripe's last record: stripes written with O_DIRECT
        # are rounded up to whole 4 KiB shards.
        ends = {}
        for stripe, start, length in manifest.chunks.values():
            ends[stripe] = max(ends.get(stripe, 0), start + length)
        out.update(stripes=len(manifest.stripes), padding_bytes=sum(
            s[0] - ends.get(i, 0) for i, s in enumerate(manifest.stripes)))
        out.update(version=manifest.version, sealed=manifest.sealed,
                   source=manifest.data['source'],
                   chunks=len(manifest.chunks),
                   record_bytes=manifest.payload_bytes(),
                   stripe_data_bytes=sum(s[0] for s in manifest.stripes),
                   shard_bytes_per_device=manifest.shards_end(),
                   images=[{'image': '%s/%s' % (i['pool'], i['name']),
                            'snapshots': [(s['name'], s['size'], s['digest'])
                                          for s in i['snapshots']]}
                           for i in manifest.images])
    print(json.dumps(out, indent=1))


def _terminal(address, args):
    """An async factory of connections to the terminal at HOST:PORT."""
    t = CONF.server
    missing = [flag for flag, value in (
        ('--server-name', args.server_name), ('--tls-ca', t.tls_ca),
        ('--tls-cert', t.tls_cert), ('--tls-key', t.tls_key))
        if not value]
    if missing:
        raise exception.FedexException(
            'talking to the terminal at %s needs %s'
            % (address, ', '.join(missing)))
    host, port = address.rsplit(':', 1)
    context = tls.client_context(t.tls_ca, t.tls_cert, t.tls_key)

    async def connect():
        return await client_mod.TerminalClient(
            host, int(port), context, args.server_name, t.name).connect()
    return connect


def do_authorize(args):
    if args.devices:
        receiver_mod.declare(CONF.shipment.state_dir, _keys(),
                             args.shipment_id, args.images, args.devices,
                             args.parity, CONF.shipment.chunk_size,
                             args.peers)
        print('authorized: %s for %s, onto %s' % (
            ', '.join(args.images), args.shipment_id,
            ', '.join(args.devices)))
        return
    access.authorize(CONF.shipment.state_dir, args.shipment_id,
                     args.images, peers=args.peers)
    print('authorized: %s for %s' % (', '.join(args.images),
                                     args.shipment_id))


def do_import(args):
    pool_map = dict(m.split('=', 1) for m in args.pool_map)
    if args.remote:
        connect = _terminal(args.remote, args)

        async def remote():
            client = await connect()
            try:
                return await remote_mod.send_device_set(
                    client, args.devices, _keys(), args.expect_digest,
                    pool_map)
            finally:
                await client.close()
        images = asyncio.run(remote())
        _print(args, {'event': 'imported', 'images': images},
               'imported through %s: %s' % (args.remote, ', '.join(images)))
        return
    with _cluster(args) as cluster:
        importer = importer_mod.Importer(
            cluster, _keys(), CONF.shipment.state_dir, pool_map,
            progress=_progress_for(args),
            check_space=not args.skip_space_check,
            readback=bool(args.verify_readback
                          or CONF.shipment.import_readback))
        images = importer.run(args.devices, args.expect_digest)
        site, fsid, where = _where(args, cluster)
    _print(args, {'event': 'imported', 'images': images,
                  'site': site, 'fsid': fsid},
           'imported at %s: %s' % (where, ', '.join(images)))


def do_pull(args):
    connect = _terminal(args.from_address, args)
    target = args.to or args.image
    progress = _progress_for(args)
    with _cluster(args) as cluster:
        pool_name, name = target.split('/', 1)
        with cluster.pool(pool_name) as pool:
            if pool.image_exists(name):
                # Never overwritten: a copy here is someone's data.
                raise exception.ImageExists(site=cluster.site, target=target)
        source = remote_source.RemoteSource(connect, args.image,
                                            args.shipment_id, args.snapshot)
        try:
            sink = sinks_mod.RbdImageSink(cluster, target, args.shipment_id)
            try:
                progress.start('pull %s' % target, source.size())
                done = [0]

                def report(offset, size):
                    progress.advance(offset - done[0])
                    done[0] = offset
                digest = pull_mod.pull(source, sink, args.snapshot, report)
                progress.finish()
            finally:
                sink.close()
        finally:
            source.close()
        site, fsid, where = _where(args, cluster)
    _print(args, {'event': 'pulled', 'image': target,
                  'snapshot': args.snapshot, 'blake3': digest,
                  'source': '%s at %s' % (args.server_name,
                                          args.from_address),
                  'site': site, 'fsid': fsid},
           'pulled %s@%s from %s at %s into %s at %s (blake3 %s)' % (
               args.image, args.snapshot, args.server_name,
               args.from_address, target, where, digest))


def do_catchup(args):
    connect = _terminal(args.server_address, args)

    def report(r):
        print(json.dumps({'event': 'round', 'round': r.round,
                          'snapshot': r.snapshot,
                          'changed_bytes': r.changed_bytes,
                          'wire_bytes': r.wire_bytes,
                          'seconds': round(r.seconds, 3),
                          'dirty_rate': r.dirty_rate and round(r.dirty_rate),
                          'wire_rate': r.wire_rate and round(r.wire_rate),
                          'estimate': round(r.estimate),
                          'resumes': r.resumes}), flush=True)

    with _cluster(args) as cluster:
        engine = catchup.CatchUp(
            cluster, connect, args.shipment_id, args.disks, args.base,
            threshold_bytes=int(args.threshold_mib * (1 << 20)),
            max_rounds=args.max_rounds,
            limiter=sender_mod.RateLimiter(int(args.rate_limit_mib * (1 << 20))),
            report=report, dedup=not args.no_dedup, streams=args.streams,
            threshold_seconds=args.threshold_seconds, retries=args.retries)
        rounds = asyncio.run(engine.run())
        if args.verify:
            final = asyncio.run(engine.round(len(rounds) + 1, verify=True))
            rounds.append(final)
        where = _where(args, cluster)[2]
    print(json.dumps({'event': 'converged', 'rounds': len(rounds),
                      'last_snapshot': rounds[-1].snapshot,
                      'source': where,
                      'destination': '%s at %s' % (args.server_name,
                                                   args.server_address)}))


COMMANDS = {'export': do_export, 'consolidate': do_consolidate,
            'seal': do_seal, 'verify': do_verify, 'show': do_show,
            'authorize': do_authorize, 'import': do_import,
            'catchup': do_catchup, 'pull': do_pull}


def main(argv=None):
    memory.tune()
    argv = sys.argv[1:] if argv is None else argv
    cmdline.register_logging(CONF, argv)
    # stdout carries results (JSON with --progress json): logs go to stderr.
    CONF.set_default('use_stderr', True)
    opts.register_opts(CONF)
    # No site is named unless the operator names one (--site or [ceph]
    # site_name): a made-up default would name the wrong site.
    CONF.set_default('site_name', None, group='ceph')
    # This terminal's name and TLS files: [server], as lsrp-server reads them.
    CONF.register_opts(opts.server_opts, group='server')
    # Shipment options are command-line options too: --shipment-state_dir.
    CONF.register_cli_opts(opts.shipment_opts, group='shipment')
    CONF.register_cli_opt(cmdline.subcommand_opt(add_parsers))
    CONF(cmdline.argv_for_oslo(argv), project='lsrp', prog='lsrp',
         usage=cmdline.usage('lsrp', '[OPTIONS] COMMAND [ARGS]',
                             COMMAND_LIST, EXIT_CODES),
         default_config_files=cfg.find_config_files('lsrp'))
    setup_logging()
    args = CONF.command
    cmdline.apply_settings(CONF, cmdline.SETTING_FLAGS, args)
    return run_command(args)


def setup_logging():
    """On stderr, only warnings and errors unless --debug.

    The report and progress lines are then not interleaved with INFO
    lines. A --log-file gets lsrp's from INFO up. Libraries log only their
    errors: asyncio's warnings go too ("SSL connection is closed" comes
    from writes after the peer hung up, which the command's own error line
    already says).
    """
    cmdline.setup_logging(CONF, 'lsrp', [
        'lsrp=INFO' if CONF.log_file else 'lsrp=WARN'])


def run_command(args):
    """Run a command; one line on stderr when it fails, and the exit code."""
    def fail(kind, e, code):
        print('lsrp %s: %s: %s' % (args.name, kind, e), file=sys.stderr)
        return code

    try:
        COMMANDS[args.name](args)
    except exception.VerificationFailed as e:
        return fail('verification failed', e, EXIT_VERIFY)
    except exception.RemoteError as e:
        if e.code in REMOTE_VERIFY_CODES:
            return fail('verification failed', e, EXIT_VERIFY)
        return fail('error', e, EXIT_ERROR)
    except exception.FedexException as e:
        return fail('error', e, EXIT_ERROR)
    except ssl.SSLError as e:
        return fail('error', 'TLS: %s' % (e.reason or e), EXIT_ERROR)
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError) as e:
        return fail('error', str(e) or type(e).__name__, EXIT_ERROR)
    return EXIT_OK


if __name__ == '__main__':
    sys.exit(main())
