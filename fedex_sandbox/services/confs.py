"""Configuration files of the mini-cloud's OpenStack services.

Only what matters here is set (shared/FACTS-openstack.md says why for each):
everything else keeps OpenStack's defaults. Rendered with str.format from
the values of :class:`fedex_sandbox.services.cloud.Cloud`.
"""

AUTH = """\
auth_url = {keystone_url}
auth_type = password
project_domain_name = Default
user_domain_name = Default
project_name = service
username = {user}
password = {service_password}
"""


# Nova's max_concurrent_live_migrations on every compute (NOVA below), and
# what a forecast that knows the mini-cloud says of it ([planner]
# live_migrations_per_host).
LIVE_MIGRATIONS_PER_HOST = 4


def auth(values, user, extra=''):
    """A password-auth section body for a service user."""
    return AUTH.format(user=user, **values) + extra


KEYSTONE = """\
[DEFAULT]
log_file = {log_dir}/keystone.log
[database]
connection = {db_keystone}
[token]
provider = fernet
[fernet_tokens]
key_repository = {dir}/keystone/fernet-keys
[credential]
key_repository = {dir}/keystone/credential-keys
[cache]
# Keystone's own cache, in its one process (a dict: nothing to run). Without
# it each token validation read the user, project, roles and catalog from
# MariaDB: 2 s on a quiet machine, 11-37 s (avg) during an eight-server wave,
# and every 'openstack' command and every service call waits for one.
enabled = true
backend = oslo_cache.dict
[identity]
# bcrypt's lowest cost (default 12): each password check (a login, a
# service's token) took 40 s at a load of 45 on 2 shared cores.
password_hash_rounds = 4
"""

PLACEMENT = """\
[DEFAULT]
log_file = {log_dir}/placement.log
[placement_database]
connection = {db_placement}
[api]
auth_strategy = keystone
[keystone_authtoken]
www_authenticate_uri = {keystone_url}
{auth_placement}
"""

NOVA = """\
[DEFAULT]
transport_url = {transport_url}
my_ip = 127.0.0.1
state_path = {dir}/nova/state
compute_driver = libvirt.LibvirtDriver
# Computes are mapped by 'nova-manage cell_v2 discover_hosts' at set-up.
# Each compute reports its inventory to Placement with these ratios (they
# are [DEFAULT] options of the compute; under [filter_scheduler] Nova
# ignored them and a host held 2 x 4.0 = 8 one-vCPU guests: a ninth
# server went to ERROR, NoValidHost). 2 cores x 16 = 32 vCPUs a host.
cpu_allocation_ratio = 16.0
ram_allocation_ratio = 4.0
# Live migrations a compute runs at once (Nova's default, 1, queued a
# wave's second cutover slot behind the first: about 280 s of the
# 8-server wave, doc/source/manager.rst): at least the waves'
# max_parallel_cutovers (2 by default).
max_concurrent_live_migrations = {live_migrations_per_host}
[api_database]
connection = {db_nova_api}
[database]
connection = {db_nova}
[wsgi]
api_paste_config = {dir}/nova/api-paste.ini
[api]
auth_strategy = keystone
[conductor]
workers = 1
[scheduler]
workers = 1
# Only a fallback: 'up' runs discover_hosts as soon as computes report.
discover_hosts_in_cells_interval = 60
[vnc]
enabled = false
# Versioned notifications on the bus (topic versioned_notifications of
# exchange nova): the manager's conductor hears instance.delete.* and
# aborts the migration of a deleted server at once ([conductor]
# nova_notifications_topic). The legacy format is not sent: nobody reads it.
[notifications]
notification_format = versioned
[oslo_messaging_notifications]
driver = messagingv2
[oslo_concurrency]
lock_path = {dir}/nova/locks
[keystone_authtoken]
www_authenticate_uri = {keystone_url}
{auth_nova}
[service_user]
send_service_user_token = true
{auth_nova}
[placement]
region_name = RegionOne
{auth_placement}
[neutron]
region_name = RegionOne
{auth_nova}
[cinder]
os_region_name = RegionOne
{auth_nova}
[glance]
region_name = RegionOne
"""

# The second --config-file of one compute host's nova-compute.
NOVA_COMPUTE = """\
[DEFAULT]
host = {host}
my_ip = {address}
state_path = {host_dir}/state
instances_path = {instances_path}
log_file = {log_dir}/nova-compute-{host}.log
compute_driver = fedex.FedexLibvirtDriver
[libvirt]
virt_type = qemu
cpu_mode = none
# Its own libvirtd, on the host's own address: plain TCP.
connection_uri = qemu+tcp://{address}:{libvirt_port}/system
# Other hosts' libvirtd (migrations, a cutover's resume and rollback): TLS
# with this host's client certificate. Deprecated, but the only way to give
# the port and the certificates; %s is the destination's
# live_migration_inbound_addr (or [fedex] wan_address for a cutover). The
# path is the same on every host and names each host's own files (its
# /etc/libvirt is its own): it also serves when the destination's libvirtd
# is the client (a cutover's rollback migrates from there).
live_migration_uri = qemu+tls://%s:{libvirt_tls_port}/system?pkipath={pki}
live_migration_inbound_addr = {address}
# The memory stream too: QEMU's own TLS (VIR_MIGRATE_TLS), with the
# certificates of qemu.conf's migrate_tls_x509_cert_dir.
live_migration_with_native_tls = true
images_type = rbd
images_rbd_pool = vms
images_rbd_ceph_conf = {ceph_conf}
images_rbd_glance_store_name = {site}
rbd_user = admin
rbd_secret_uuid = {secret_uuid}
[workarounds]
skip_cpu_compare_on_dest = true
# A Debian bzImage has a boot sector: Nova's deep inspection refuses it when
# pre_live_migration re-fetches the kernel.
disable_deep_image_inspection = true
[nova_sys_admin]
helper_command = {privsep}
[privsep_osbrick]
helper_command = {privsep}
[os_vif_privileged]
helper_command = {privsep}
[fedex]
# nova_fedex's FedexLibvirtDriver (compute_driver = fedex.FedexLibvirtDriver,
# loaded by nova-compute-fedex): this host's site, the TLS identity it sends
# the final delta with (its site's terminal's), and fedex-api's credentials.
site = {site}
terminal_name = {terminal_name}
tls_ca = {tls_ca}
tls_cert = {tls_cert}
tls_key = {tls_key}
# The emulated WAN (fedex_sandbox/wan.py): this host's face there, where a
# compute of the other site reaches its libvirtd and QEMU for a cutover (or
# its rollback); the terminals' catch-up face -> their final-delta face.
wan_address = {wan_address}
wan_for_every_migration = {wan_for_every_migration}
terminal_hosts = {terminal_hosts}
region_name = RegionOne
{auth_fedex}
"""

GLANCE = """\
[DEFAULT]
log_file = {log_dir}/glance-api.log
enabled_backends = site-a:rbd, site-b:rbd
# Nova clones root disks from an image's rbd location (copy-on-write).
show_image_direct_url = true
show_multiple_locations = true
enabled_import_methods = [glance-direct,web-download,copy-image]
[database]
connection = {db_glance}
[paste_deploy]
flavor = keystone
config_file = {dir}/glance/glance-api-paste.ini
[keystone_authtoken]
www_authenticate_uri = {keystone_url}
{auth_glance}
[glance_store]
default_backend = site-a
[site-a]
store_description = site-a's Ceph cluster
rbd_store_pool = images
rbd_store_user = admin
rbd_store_ceph_conf = {ceph_conf_a}
rbd_store_chunk_size = 4
[site-b]
store_description = site-b's Ceph cluster
rbd_store_pool = images
rbd_store_user = admin
rbd_store_ceph_conf = {ceph_conf_b}
rbd_store_chunk_size = 4
[os_glance_staging_store]
filesystem_store_datadir = {dir}/glance/staging
[os_glance_tasks_store]
filesystem_store_datadir = {dir}/glance/tasks
[oslo_concurrency]
lock_path = {dir}/glance/locks
"""

CINDER = """\
[DEFAULT]
transport_url = {transport_url}
auth_strategy = keystone
host = cinder
state_path = {dir}/cinder/state
api_paste_config = {dir}/cinder/api-paste.ini
resource_query_filters_file = {dir}/cinder/resource_filters.json
enabled_backends = site-a, site-b
default_volume_type = ceph
osapi_volume_extension = cinder.api.contrib.standard_extensions
osapi_volume_extension = cinder_fedex.api.contrib.fedex.Fedex
glance_api_servers = {glance_url}
my_ip = 127.0.0.1
[database]
connection = {db_cinder}
[oslo_concurrency]
lock_path = {dir}/cinder/locks
[oslo_messaging_notifications]
driver = noop
[keystone_authtoken]
www_authenticate_uri = {keystone_url}
service_token_roles_required = true
{auth_cinder}
[service_user]
send_service_user_token = true
{auth_cinder}
[nova]
region_name = RegionOne
{auth_cinder}
# One FedexRBDDriver backend per site, each knowing its peer; both named
# "ceph" (volume_backend_name) so that the one volume type "ceph" fits a
# volume at either site, before and after a FedEx move (doc/source/cinder.rst).
# Which site a new volume lands at is its availability zone's choice.
[site-a]
volume_driver = cinder_fedex.volume.drivers.fedex_rbd.FedexRBDDriver
volume_backend_name = ceph
backend_availability_zone = site-a
rbd_pool = volumes
rbd_ceph_conf = {ceph_conf_a}
rbd_user = admin
rbd_secret_uuid = {secret_a}
fedex_site = site-a
fedex_peer_site = site-b
fedex_peer_backend_host = cinder@site-b#ceph
fedex_peer_rbd_ceph_conf = {ceph_conf_b}
fedex_peer_rbd_user = admin
fedex_peer_rbd_secret_uuid = {secret_b}
[site-b]
volume_driver = cinder_fedex.volume.drivers.fedex_rbd.FedexRBDDriver
volume_backend_name = ceph
backend_availability_zone = site-b
rbd_pool = volumes
rbd_ceph_conf = {ceph_conf_b}
rbd_user = admin
rbd_secret_uuid = {secret_b}
fedex_site = site-b
fedex_peer_site = site-a
fedex_peer_backend_host = cinder@site-a#ceph
fedex_peer_rbd_ceph_conf = {ceph_conf_a}
fedex_peer_rbd_user = admin
fedex_peer_rbd_secret_uuid = {secret_a}
"""

LIBVIRTD = """\
# Written by fedex-sandbox for host {host}.
# TLS for other hosts (the WAN's faces forward only tls_port); plain TCP
# for this host's own nova-compute and the sandbox's virsh.
listen_tls = 1
listen_tcp = 1
listen_addr = "{address}"
tcp_port = "{libvirt_port}"
tls_port = "{libvirt_tls_port}"
auth_tcp = "none"
# A client is who its certificate (signed by the cloud's CA) says.
auth_tls = "none"
ca_file = "{pki}/cacert.pem"
cert_file = "{pki}/servercert.pem"
key_file = "{pki}/serverkey.pem"
auth_unix_rw = "none"
host_uuid = "{host_uuid}"
log_outputs = "3:file:/var/log/libvirt/libvirtd.log"
"""

QEMU = """\
# Written by fedex-sandbox for host {host}.
user = "root"
group = "root"
dynamic_ownership = 0
security_driver = "none"
# Both daemons would name a guest's cgroup the same and collide.
cgroup_controllers = [ ]
namespaces = [ ]
stdio_handler = "file"
migration_address = "{address}"
migration_host = "{address}"
migration_port_min = {migration_min}
migration_port_max = {migration_max}
# The memory stream is TLS (Nova's live_migration_with_native_tls): both
# ends show a certificate of the cloud's CA, and a migration without
# VIR_MIGRATE_TLS is refused.
migrate_tls_x509_cert_dir = "{pki}"
migrate_tls_x509_verify = 1
migrate_tls_force = 1
"""

SECRET = """\
<secret ephemeral='no' private='no'>
  <uuid>{uuid}</uuid>
  <usage type='ceph'><name>client.admin {site}</name></usage>
</secret>
"""

# PID 1 of a compute host's namespaces: binds the host's own directories
# over the shared paths, runs libvirtd, reaps orphans (bash does), and stops
# libvirtd on SIGTERM.
HOST_INIT = """\
#!/bin/bash
set -e
mount --make-rprivate /
hostname {host}
{binds}
/usr/sbin/libvirtd --listen --pid-file /run/libvirt/fedex-libvirtd.pid \\
    -f /etc/libvirt/libvirtd.conf &
LIBVIRTD=$!
trap 'kill -TERM $LIBVIRTD 2>/dev/null; wait $LIBVIRTD; exit 0' TERM
# libvirtd-supervised: as systemd's Restart=on-failure of libvirtd.service,
# a libvirtd that dies is started again after 2 s; the guests (QEMU) keep
# running and the new libvirtd reconnects to them (tests/soak kills it).
while true; do
    while kill -0 $LIBVIRTD 2>/dev/null; do wait $LIBVIRTD || true; done
    sleep 2
    /usr/sbin/libvirtd --listen --pid-file /run/libvirt/fedex-libvirtd.pid \\
        -f /etc/libvirt/libvirtd.conf &
    LIBVIRTD=$!
done
"""

# Barbican's API reads its configuration from oslo.config's default places
# only (its modules re-parse them on import): <home>/.barbican/barbican.conf,
# with HOME set to <cloud>/barbican for its uWSGI. Simple crypto plugin: keys
# encrypted under a KEK made at set-up (cloud state), in MariaDB.
BARBICAN = """\
[DEFAULT]
host_href = {barbican_url}
log_file = {log_dir}/barbican.log
db_auto_create = true
[database]
connection = {db_barbican}
[secretstore]
enabled_secretstore_plugins = store_crypto
[crypto]
enabled_crypto_plugins = simple_crypto
[simple_crypto_plugin]
kek = {barbican_kek}
[keystone_authtoken]
www_authenticate_uri = {keystone_url}
{auth_barbican}
"""
