"""nova-compute-fedex: nova-compute that can load FedexLibvirtDriver.

Nova loads ``compute_driver`` only from inside ``nova.virt`` (it prefixes
the option with ``nova.virt.``). This command registers nova_fedex's driver
module as ``nova.virt.fedex`` and then runs Nova's own ``nova-compute``, so
that ``[DEFAULT] compute_driver = fedex.FedexLibvirtDriver`` works with no
file written into Nova's installed tree.
"""

# nova.cmd.compute patches the standard library (threading backend) when
# imported: it must come first, as in nova-compute itself.
from nova.cmd import compute as nova_compute  # noqa: I100

import sys  # noqa: I100

from nova_fedex.virt.libvirt import driver

ALIAS = 'nova.virt.fedex'


def register():
    """Make ``compute_driver = fedex.FedexLibvirtDriver`` loadable."""
    sys.modules.setdefault(ALIAS, driver)


def main():
    register()
    return nova_compute.main()
