"""Nova side of Migration over FedEx.

Will hold the libvirt driver extension for the cross-site live cutover, the
OpenStackClient plugin (``openstack server migrate --live-migration
--fedex``) and the Horizon panel for shipment tracking. Nothing here yet: the
storage path (``lsrp``) comes first.
"""
