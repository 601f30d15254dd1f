"""OpenStackClient plugin: ``openstack fedex ...`` and
``openstack server migrate --live-migration --fedex``."""
