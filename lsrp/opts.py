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
    cfg.IntOpt('read_workers',
               default=4, min=1, max=64,
               help='Threads reading an image in parallel for exports and '
                    'digests. librbd releases the GIL while it reads.'),
]


def register_opts(conf):
    conf.register_opts(ceph_opts, group='ceph')


def list_opts():
    return [('ceph', ceph_opts)]
