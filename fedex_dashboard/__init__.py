"""Horizon plugin of "Migration over FedEx": panels for migrations,
shipments and devices, talking to fedex-api (catalog type vm-shipping).

Enabled by copying or linking the files of ``enabled/`` into Horizon's
``openstack_dashboard/local/enabled/`` (the devstack plugin does it).
"""
