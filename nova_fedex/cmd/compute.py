"""nova-compute-fedex: nova-compute that can load FedexLibvirtDriver.

Nova loads ``compute_driver`` only from inside ``nova.virt`` (it prefixes
the option with ``nova.virt.``). This command registers nova_fedex's driver
module as ``nova.virt.fedex`` and then runs Nova's own ``nova-compute``, so
that ``[DEFAULT] compute_driver = fedex.FedexLibvirtDriver`` works with no
file written into Nova's installed tree.
"""

import sys

ALIAS = 'nova.virt.fedex'


def register():
    """Make ``compute_driver = fedex.FedexLibvirtDriver`` loadable."""
    from nova_fedex.virt.libvirt import driver

    sys.modules.setdefault(ALIAS, driver)


def main():
    # nova.cmd.compute patches the standard library for its threading
    # backend when imported: it must come before any other nova import.
    from nova.cmd import compute as nova_compute

    register()
    return nova_compute.main()
