"""Options of the lsrp package, for the sample-config generator.

Each option list lives next to the code that reads it; ``list_opts`` gathers
them for ``oslo-config-generator`` (see ``tox -e genconfig``).
"""

from oslo_config import cfg

ceph_opts = [
    cfg.StrOpt('site_name',
               default='site-a',
               help='Name of the site this terminal serves; it names the '
                    'site in every error and log line.'),
    cfg.StrOpt('conf_file',
               default='/etc/ceph/ceph.conf',
               help='Path of the Ceph configuration of the local site.'),
    cfg.StrOpt('keyring',
               help='Path of the cephx keyring of the client. Unset: the '
                    'keyring named in conf_file.'),
    cfg.StrOpt('client_name',
               default='admin',
               help='Ceph client name without the "client." prefix.'),
    cfg.IntOpt('connect_timeout',
               default=15, min=1,
               help='Seconds to wait for the Ceph monitors when connecting.'),
    cfg.IntOpt('op_timeout',
               default=60, min=0,
               help='Seconds after which a Ceph operation fails instead of '
                    'waiting. librados waits forever on a full pool; with a '
                    'timeout the error names the full pool. 0 waits '
                    'forever.'),
    cfg.IntOpt('read_workers',
               default=4, min=1, max=64,
               help='Threads reading an image in parallel for exports and '
                    'digests. librbd releases the GIL while it reads.'),
]


def register_opts(conf):
    conf.register_opts(ceph_opts, group='ceph')


shipment_opts = [
    cfg.StrOpt('state_dir',
               default='/var/lib/lsrp/shipments',
               help='Directory of this terminal\'s shipment records and '
                    'progress journals (never written to a device).'),
    cfg.StrOpt('key_dir',
               default='/var/lib/lsrp/keys',
               help='Directory of the file key store: one 0600 file per '
                    'shipment key. Keys never travel with the devices.'),
    cfg.IntOpt('chunk_size',
               default=64 << 10, min=4096, max=16 << 20,
               help='Bytes per deduplicated chunk. See the device format '
                    'page for why 64 KiB is the default.'),
    cfg.IntOpt('shard_size',
               default=4 << 20, min=64 << 10, max=256 << 20,
               help='Bytes of each device\'s shard of a stripe; a stripe '
                    'holds data_shards times this.'),
    cfg.IntOpt('checkpoint_mib',
               default=256, min=1,
               help='MiB of export written between checkpoints: the devices '
                    'are fsync\'d and the progress journaled. A crash redoes '
                    'at most this much (or 5 s of work); smaller values fsync '
                    'more often.'),
    cfg.IntOpt('zstd_level',
               default=1, min=1, max=19,
               help='zstd compression level of chunks (with compression = '
                    'zstd). Level 1 compresses a copy of /usr 1.5x faster '
                    'than level 3 for 4 percent more bytes (see the '
                    'shipments page).'),
    cfg.StrOpt('compression',
               default='lz4', choices=['lz4', 'zstd'],
               help='How new chunks are compressed: lz4 (about twice as '
                    'fast as zstd level 1 to compress and three times to '
                    'decompress, ~30 percent more bytes on the devices) or '
                    'zstd (fewer bytes, more CPU). Both are always read.'),
    cfg.IntOpt('workers',
               default=4, min=1, max=64,
               help='Threads hashing, compressing and encrypting chunks. '
                    'More than the cores helps where other work competes '
                    'for them: an export of a 2 GiB filesystem image took '
                    '15-25 percent less time with 4 than with 2 (load '
                    'average 40 on 2 cores).'),
    cfg.BoolOpt('import_readback',
                default=False,
                help='After each snapshot an import writes (and checks as '
                     'written), read the whole image back from Ceph and '
                     'check its digest again: a second pass over the '
                     'image. Also lsrp import --verify-readback.'),
    cfg.IntOpt('lz4_acceleration',
               default=8, min=1, max=65537,
               help='LZ4 acceleration of new chunks (compression = lz4): '
                    'higher is faster and keeps more bytes. On the 64 KiB '
                    'chunks of a copy of /usr, 1 kept 49 percent of the '
                    'bytes at 668 MiB/s, 4 kept 54 percent at 899, 8 kept '
                    '59 percent at 1118 (one thread; see the shipments '
                    'page). Any value reads back the same way.'),
]


def register_shipment_opts(conf):
    conf.register_opts(shipment_opts, group='shipment')


server_opts = [
    cfg.StrOpt('name',
               default='terminal',
               help='Name of this terminal: the CN and DNS name of its TLS '
                    'certificate, which clients check.'),
    cfg.HostAddressOpt('host',
                       default='127.0.0.1',
                       help='Address lsrp-server listens on.'),
    cfg.PortOpt('port',
                default=15500,
                help='Port lsrp-server listens on (below 32768, where Ceph '
                     'clients take ephemeral ports).'),
    cfg.IntOpt('frame_timeout',
               default=30, min=1,
               help='Seconds a peer may take to finish a frame it started; '
                    'then it gets a TRUNCATED error and is disconnected.'),
    cfg.BoolOpt('rbd_sink',
                default=True,
                help='Write rounds into images of the local cluster ([ceph] '
                     'options). Off for a terminal that only writes the '
                     'devices plugged into it: it then needs no cluster.'),
    cfg.IntOpt('resume_timeout',
               default=300, min=0,
               help='Seconds a round whose source lost its connection is '
                    'kept, half-applied, for a new session to resume from '
                    'the last acknowledged offset; then it is rolled back '
                    'to its base snapshot. 0 rolls back at once.'),
    cfg.StrOpt('tls_ca',
               help='CA certificate that signs every terminal certificate.'),
    cfg.StrOpt('tls_cert',
               help='This terminal\'s certificate (PEM).'),
    cfg.StrOpt('tls_key',
               help='This terminal\'s private key (PEM).'),
]


def list_opts():
    return [('ceph', ceph_opts), ('shipment', shipment_opts),
            ('server', server_opts)]
