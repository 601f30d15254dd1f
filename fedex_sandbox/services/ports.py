"""The one table of the mini-cloud's ports, as offsets from the base port.

Every port of a sandbox is ``Sandbox.port(offset)``: two sandboxes with
different base ports (a developer's and CI's) never collide. The Ceph sites
take +0..+199, the lifecycle tests +1000..+1999 (see fedex_sandbox.opts).
"""

PORTS = {
    # Shared services (plain 'fedex-sandbox up').
    'mariadb': 200,
    'rabbitmq': 201,
    'rabbitmq-dist': 202,
    'epmd': 203,
    'zookeeper': 204,
    # OpenStack ('fedex-sandbox up --openstack').
    'keystone': 210,
    'placement': 211,
    'nova-api': 212,
    'glance-api': 213,
    'cinder-api': 214,
    'neutron': 215,
    # Every compute host's libvirtd, each on its own loopback address:
    # plain TCP for its own nova-compute and the sandbox's virsh, TLS for
    # other hosts (migrations; the only one the WAN's faces forward).
    'libvirtd': 220,
    'libvirtd-tls': 221,
    # The project's own services and the ones other issues add.
    'fedex-api': 280,
    'horizon': 281,
    'barbican': 282,
    # Terminals of the sandbox: site-a, site-b (lsrp-server, agents).
    'terminal-site-a': 300,
    'terminal-site-b': 301,
}

# More terminals per site (fedex-sandbox up --terminals-per-site N):
# terminal n (2, 3...) of site number i (0 for site-a) listens on
# EXTRA_TERMINAL_FIRST + 2*(n-2) + i, within +300..+349, the terminals'
# ports the WAN forwards (fedex_sandbox.wan.TERMINAL_PORT_RANGES).
EXTRA_TERMINAL_FIRST = 310
EXTRA_TERMINAL_LAST = 349
MAX_TERMINALS_PER_SITE = 1 + (EXTRA_TERMINAL_LAST - EXTRA_TERMINAL_FIRST
                              + 1) // 2

# QEMU's incoming migration ports: host number i takes
# MIGRATION_FIRST + i*MIGRATION_SPAN .. + MIGRATION_SPAN - 1 (+400..+599).
MIGRATION_FIRST = 400
MIGRATION_SPAN = 20


def offset(name):
    return PORTS[name]


def extra_terminal(site_index, n):
    """The offset of terminal ``n`` (2, 3...) of site ``site_index``."""
    return EXTRA_TERMINAL_FIRST + 2 * (n - 2) + site_index


def migration_range(host_index):
    first = MIGRATION_FIRST + host_index * MIGRATION_SPAN
    return first, first + MIGRATION_SPAN - 1
