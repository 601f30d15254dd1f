"""Options of the sandbox (``fedex-sandbox``)."""

import json
import os

from oslo_config import cfg

DEFAULT_DIR = '/var/tmp/fedex-sandbox'
DIR_ENV = 'FEDEX_SANDBOX_DIR'
BASE_PORT_ENV = 'FEDEX_SANDBOX_BASE_PORT'
DEFAULT_BASE_PORT = 13300
# A sandbox owns PORT_SPAN ports from its base port: the two sites, the
# mini-cloud, its terminals and the lifecycle tests' throw-away sandboxes.
PORT_SPAN = 2000


def env_base_port():
    """The base port given by the environment, or None."""
    value = os.environ.get(BASE_PORT_ENV)
    return int(value) if value else None


# Where a sandbox directory records the base port it was made with.
REMEMBERED = 'sandbox.json'


def remembered_base_port(root):
    """The environment's base port, else root's record, else the default."""
    port = env_base_port()
    if port is not None:
        return port
    try:
        with open(os.path.join(root, REMEMBERED)) as f:
            return json.load(f)['base_port']
    except (FileNotFoundError, ValueError, KeyError):
        return DEFAULT_BASE_PORT


sandbox_opts = [
    cfg.StrOpt('dir',
               default=os.environ.get(DIR_ENV, DEFAULT_DIR),
               sample_default=DEFAULT_DIR,
               help='Directory holding all state of the sandbox: each site\'s '
                    'configuration, keyrings, daemon data, pid files and logs. '
                    'The environment variable %s overrides the default.'
                    % DIR_ENV),
    cfg.PortOpt('base_port',
                default=None,
                sample_default=DEFAULT_BASE_PORT,
                help='First TCP port of the sandbox; it owns the %d ports '
                     'from there. Site number i (0 for site-a) uses '
                     'base_port + 100*i and the 99 ports after it: the '
                     'monitor on the first two (msgr2, msgr1), the manager '
                     'and the OSD from +10 on. up refuses a span that '
                     'reaches the kernel\'s ephemeral ports (32768 on by '
                     'default), where any client may hold one. Default: the '
                     'environment variable %s, else the port the sandbox '
                     'directory was created with, else %d.'
                     % (PORT_SPAN, BASE_PORT_ENV, DEFAULT_BASE_PORT)),
    cfg.IntOpt('osd_size_gib',
               default=64, min=4, max=4096,
               help='Size in GiB of each site\'s OSD block file. The file is '
                    'sparse: disk space is used only as data is written.'),
    cfg.IntOpt('min_free_mib',
               default=2048, min=0,
               help='Refuse to start when the filesystem of the sandbox directory has '
                    'less free space than this, in MiB.'),
    cfg.IntOpt('start_timeout',
               default=180, min=5,
               help='Seconds to wait for both sites to report HEALTH_OK and '
                    'for MariaDB, RabbitMQ and ZooKeeper to answer. A daemon '
                    'that exits is reported at once; this bounds a slow '
                    'start on a busy machine.'),
]


def register_opts(conf):
    conf.register_opts(sandbox_opts, group='sandbox')


def list_opts():
    return [('sandbox', sandbox_opts)]
