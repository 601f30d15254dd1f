#!/usr/bin/env bats
# Offline tests of the devstack plugin: plugin.sh is sourced per phase, as
# devstack does, with devstack's functions stubbed (tests/stubs.bash); each
# test asserts what the phase called and the configuration it wrote.

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)

setup() {
    source "$BATS_TEST_DIRNAME/stubs.bash"
    FEDEX_DIR=$REPO
    mkdir -p "$HORIZON_DIR/openstack_dashboard/local/enabled"
    # n-cpu's unit as devstack's run_process wrote it.
    mkdir -p "$SYSTEMD_DIR"
    printf '[Unit]\nDescription = Devstack devstack@n-cpu.service\n\n[Service]\nExecStart = /usr/local/bin/nova-compute --config-file %s\n' \
        "$NOVA_CPU_CONF" > "$SYSTEMD_DIR/devstack@n-cpu.service"
}

# Load the plugin as devstack does: local.conf's lines, then settings.
load_plugin() {
    source "$REPO/devstack/settings"
}

phase() {
    source "$REPO/devstack/plugin.sh" "$@"
}

called() {
    grep -qxF -- "$*" "$CALLS" || {
        echo "not called: $*"; echo "calls:"; cat "$CALLS"; return 1; }
}

not_called() {
    if grep -q -- "^$1" "$CALLS"; then
        echo "called: $1"; cat "$CALLS"; return 1
    fi
}

@test "settings enable every service of the plugin" {
    load_plugin
    for s in fedex-api fedex-conductor fedex-terminal fedex-nova fedex-cinder fedex-horizon; do
        is_service_enabled "$s"
    done
}

@test "a service disabled in local.conf stays disabled" {
    disable_service fedex-api fedex-horizon
    load_plugin
    ! is_service_enabled fedex-api
    ! is_service_enabled fedex-horizon
    is_service_enabled fedex-conductor
}

@test "install: the project in develop mode and the Ceph bindings linked" {
    load_plugin
    phase stack install
    called install_package ceph-common python3-rados python3-rbd
    called setup_develop "$REPO" server,client,dashboard
    called python "$REPO/tools/link_ceph_bindings.py"
    called python -c "import fedex_dashboard"
}

@test "install: no dashboard check when fedex-horizon is disabled" {
    disable_service fedex-horizon
    load_plugin
    phase stack install
    not_called "python -c"
}

@test "post-config: lsrp.conf names the site, Ceph and the terminal" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    FEDEX_SITE_NAME=site-b
    load_plugin
    phase stack post-config
    [ "$(iniget "$FEDEX_CONF" ceph site_name)" = site-b ]
    [ "$(iniget "$FEDEX_CONF" ceph conf_file)" = /etc/ceph/ceph.conf ]
    [ "$(iniget "$FEDEX_CONF" server name)" = terminal-site-b ]
    [ "$(iniget "$FEDEX_CONF" server port)" = 7480 ]
    [ "$(iniget "$FEDEX_CONF" shipment state_dir)" = "$DATA_DIR/fedex/shipments" ]
    [ -d "$DATA_DIR/fedex" ]
}

@test "post-config: fedex.conf, database, uwsgi and the vm-shipping catalog entry" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    load_plugin
    phase stack post-config
    local conf=$BATS_TEST_TMPDIR/etc/fedex/fedex.conf
    [ "$(iniget "$conf" database connection)" = \
        "mysql+pymysql://root:secret@127.0.0.1/fedex?charset=utf8" ]
    [ "$(iniget "$conf" DEFAULT transport_url)" = \
        "rabbit://stackrabbit:secret@192.0.2.10:5672/" ]
    [ "$(iniget "$conf" site name)" = site-a ]
    [ "$(iniget "$conf" site peer)" = site-b ]
    called recreate_database fedex
    called configure_keystone_authtoken_middleware "$conf" fedex
    called write_uwsgi_config "$BATS_TEST_TMPDIR/etc/fedex/fedex-api-uwsgi.ini" \
        fedex_manager.api.wsgi:application /vm-shipping "" fedex-api
    called create_service_user fedex admin
    called get_or_create_role fedex_operator
    called get_or_create_service fedex vm-shipping "Migration over FedEx"
    called get_or_create_endpoint svc-1234 RegionOne http://192.0.2.10/vm-shipping
}

@test "post-config: Nova computes know their site, their driver still stock" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    load_plugin
    phase stack post-config
    [ "$(iniget "$NOVA_CPU_CONF" fedex site_name)" = site-a ]
    not_called "iniset $NOVA_CPU_CONF DEFAULT compute_driver"
}

@test "extra: n-cpu restarted as nova-compute-fedex with the FedEx driver" {
    load_plugin
    phase stack extra
    local unit=$SYSTEMD_DIR/devstack@n-cpu.service
    [ "$(iniget "$NOVA_CPU_CONF" DEFAULT compute_driver)" = fedex.FedexLibvirtDriver ]
    # The command nova_fedex.cmd.compute registers the driver for.
    grep -q "nova-compute-fedex = nova_fedex.cmd.compute:main" "$REPO/setup.cfg"
    [ "$(iniget "$unit" Service ExecStart)" = \
        "$BATS_TEST_TMPDIR/bin/nova-compute-fedex --config-file $NOVA_CPU_CONF" ]
    called systemctl daemon-reload
    called systemctl restart devstack@n-cpu.service
    # The unit rewritten before the restart.
    [ "$(grep -n 'iniset .*ExecStart' "$CALLS" | cut -d: -f1)" -lt \
      "$(grep -n 'systemctl restart' "$CALLS" | cut -d: -f1)" ]
}

@test "extra without fedex-nova: n-cpu left as devstack started it" {
    disable_service fedex-nova
    load_plugin
    phase stack extra
    not_called "systemctl"
    grep -q "ExecStart = /usr/local/bin/nova-compute --config-file" \
        "$SYSTEMD_DIR/devstack@n-cpu.service"
}

@test "post-config: the Ceph Cinder backend becomes a FedEx RBD backend" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    FEDEX_PEER_CEPH_CONF=/etc/ceph/site-b.conf
    load_plugin
    phase stack post-config
    [ "$(iniget "$CINDER_CONF" ceph volume_driver)" = \
        cinder_fedex.volume.drivers.fedex_rbd.FedexRBDDriver ]
    [ "$(iniget "$CINDER_CONF" ceph fedex_peer_site)" = site-b ]
    [ "$(iniget "$CINDER_CONF" ceph fedex_peer_rbd_ceph_conf)" = /etc/ceph/site-b.conf ]
}

@test "post-config: Horizon gets the plugin's enabled files" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    load_plugin
    phase stack post-config
    local enabled=$HORIZON_DIR/openstack_dashboard/local/enabled
    local n=0 f
    for f in "$REPO"/fedex_dashboard/enabled/_[0-9]*.py; do
        [ -L "$enabled/$(basename "$f")" ]
        [ "$(readlink "$enabled/$(basename "$f")")" = "$f" ]
        n=$((n + 1))
    done
    [ "$n" -ge 2 ]
}

@test "post-config of a site without the manager: no database, no catalog entry" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    disable_service fedex-api fedex-conductor fedex-horizon fedex-cinder
    load_plugin
    phase stack post-config
    not_called recreate_database
    not_called get_or_create_service
    not_called write_uwsgi_config
    [ ! -e "$CINDER_CONF" ]
    [ -z "$(ls "$HORIZON_DIR/openstack_dashboard/local/enabled")" ]
    [ "$(iniget "$NOVA_CPU_CONF" fedex site_name)" = site-a ]
}

@test "extra: schema synced, then the three services started" {
    load_plugin
    phase stack extra
    local bin=$BATS_TEST_TMPDIR/bin
    called fedex-manage --config-file /etc/fedex/fedex.conf db sync
    called run_process fedex-api \
        "$bin/uwsgi --procname-prefix fedex-api --ini /etc/fedex/fedex-api-uwsgi.ini"
    called run_process fedex-conductor "$bin/fedex-conductor --config-file /etc/fedex/fedex.conf"
    called run_process fedex-terminal "$bin/lsrp-server --config-file /etc/lsrp/lsrp.conf"
    # The schema before the services that use it.
    [ "$(grep -n 'db sync' "$CALLS" | cut -d: -f1)" -lt \
      "$(grep -n 'run_process fedex-api' "$CALLS" | cut -d: -f1)" ]
}

@test "extra on site B: only the terminal runs" {
    disable_service fedex-api fedex-conductor
    load_plugin
    phase stack extra
    not_called fedex-manage
    not_called "run_process fedex-api"
    not_called "run_process fedex-conductor"
    called run_process fedex-terminal \
        "$BATS_TEST_TMPDIR/bin/lsrp-server --config-file /etc/lsrp/lsrp.conf"
}

@test "test-config: tempest knows the service" {
    load_plugin
    phase stack test-config
    [ "$(iniget "$TEMPEST_CONFIG" service_available fedex)" = True ]
    [ "$(iniget "$TEMPEST_CONFIG" fedex peer_site_name)" = site-b ]
}

@test "test-config without tempest writes nothing" {
    disable_service tempest
    load_plugin
    phase stack test-config
    [ ! -e "$TEMPEST_CONFIG" ]
}

@test "unstack: every enabled service stopped" {
    load_plugin
    phase unstack
    called stop_process fedex-api
    called stop_process fedex-conductor
    called stop_process fedex-terminal
}

@test "clean: configuration, state and Horizon links removed" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    FEDEX_STATE_DIR=$BATS_TEST_TMPDIR/state
    load_plugin
    phase stack post-config
    [ -f "$FEDEX_CONF" ]
    phase clean
    called remove_uwsgi_config "$BATS_TEST_TMPDIR/etc/fedex/fedex-api-uwsgi.ini" fedex-api
    [ ! -e "$FEDEX_CONF_DIR" ]
    [ ! -e "$FEDEX_MANAGER_CONF_DIR" ]
    [ ! -e "$FEDEX_STATE_DIR" ]
    [ -z "$(ls "$HORIZON_DIR/openstack_dashboard/local/enabled")" ]
}
