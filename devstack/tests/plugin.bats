#!/usr/bin/env bats
# Offline tests of the devstack plugin: plugin.sh is sourced per phase, as
# devstack does, with devstack's functions stubbed (tests/stubs.bash); each
# test asserts what the phase called and the configuration it wrote.

REPO=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)

# One CA and a certificate per site, made once for the file by the plugin's
# own configure_fedex_tls: the tests that are not about making them start
# with them in place (with_pki), and make none.
setup_file() {
    local pki=$BATS_FILE_TMPDIR/pki
    (
        die() { shift; echo "die: $*" >&2; exit 1; }
        source "$REPO/devstack/lib/fedex"
        FEDEX_TLS_CA=$pki/ca.pem
        FEDEX_TLS_CA_KEY=$pki/ca.key
        for FEDEX_SITE_NAME in site-a site-b; do
            FEDEX_TERMINAL_NAME=terminal-$FEDEX_SITE_NAME
            FEDEX_TLS_CERT=$pki/$FEDEX_TERMINAL_NAME.pem
            FEDEX_TLS_KEY=$pki/$FEDEX_TERMINAL_NAME.key
            configure_fedex_tls
        done
    )
}

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

# The CA and this terminal's certificate already where the settings put
# them (after load_plugin), as on a node stacked before: post-config keeps
# them, and an openssl call fails the test.
with_pki() {
    local pki=$BATS_FILE_TMPDIR/pki
    mkdir -p "$(dirname "$FEDEX_TLS_CA")" "$(dirname "$FEDEX_TLS_CERT")" \
        "$(dirname "$FEDEX_TLS_KEY")"
    cp -p "$pki/ca.pem" "$FEDEX_TLS_CA"
    cp -p "$pki/$FEDEX_TERMINAL_NAME.pem" "$FEDEX_TLS_CERT"
    cp -p "$pki/$FEDEX_TERMINAL_NAME.key" "$FEDEX_TLS_KEY"
    openssl() { echo "openssl $*: the material was in place"; return 1; }
}

phase() {
    source "$REPO/devstack/plugin.sh" "$@"
}

# The "section key" pairs of an ini file, one a line (awk, no python3).
ini_keys() {
    awk '/^\[.*\]/ { s = substr($0, 2, length($0) - 2); next }
        /=/ { k = $0; sub(/[ \t]*=.*/, "", k); sub(/^[ \t]+/, "", k)
              print s, k }' "$1"
}

# The localrc section of a sample local.conf.
localrc() {
    sed -n '/^\[\[local|localrc\]\]/,/^\[\[/{/^\[\[/!p;}' "$1"
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

@test "post-config: lsrp.conf is lsrp-agent's, with the sandbox's sections" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    FEDEX_SITE_NAME=site-b
    load_plugin
    with_pki
    phase stack post-config
    local conf=$FEDEX_CONF pki=$BATS_TEST_TMPDIR/etc/lsrp/pki
    # The manager's bus and key store, as fedex.conf has them.
    called iniset "$conf" DEFAULT transport_url \
        "rabbit://stackrabbit:secret@192.0.2.10:5672/"
    [ "$(iniget "$conf" shipment_keys backend)" = file ]
    [ "$(iniget "$conf" shipment_keys key_dir)" = "$DATA_DIR/fedex/shipment-keys" ]
    [ "$(iniget "$conf" shipment_keys key_dir)" = \
        "$(iniget "$FEDEX_MANAGER_CONF" shipment_keys key_dir)" ]
    # [agent]: who the terminal is and where its peers reach it.
    called iniset "$conf" agent name terminal-site-b
    called iniset "$conf" agent site site-b
    called iniset "$conf" agent slots_dir "$DATA_DIR/fedex/slots"
    called iniset "$conf" agent lsrp_address 192.0.2.10:7480
    called iniset "$conf" agent heartbeat_interval 10
    [ -d "$DATA_DIR/fedex/slots" ]
    # [server]: the lsrp-server the agent runs, over mutual TLS.
    [ "$(iniget "$conf" server name)" = terminal-site-b ]
    [ "$(iniget "$conf" server host)" = 192.0.2.10 ]
    [ "$(iniget "$conf" server port)" = 7480 ]
    called iniset "$conf" server tls_ca "$pki/ca.pem"
    called iniset "$conf" server tls_cert "$pki/terminal-site-b.pem"
    called iniset "$conf" server tls_key "$pki/terminal-site-b.key"
    [ "$(iniget "$conf" server rbd_sink)" = True ]
    # [ceph]: the keyring ceph.conf names, unless one is given.
    [ "$(iniget "$conf" ceph site_name)" = site-b ]
    [ "$(iniget "$conf" ceph conf_file)" = /etc/ceph/ceph.conf ]
    [ "$(iniget "$conf" ceph client_name)" = admin ]
    not_called "iniset $conf ceph keyring"
    # [shipment]: the engine's journals and keys.
    [ "$(iniget "$conf" shipment state_dir)" = "$DATA_DIR/fedex/shipments" ]
    [ "$(iniget "$conf" shipment key_dir)" = "$DATA_DIR/fedex/keys" ]
}

@test "post-config: every option written to lsrp.conf is one lsrp-agent reads" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    FEDEX_CEPH_KEYRING=/etc/ceph/ceph.client.admin.keyring
    load_plugin
    with_pki
    phase stack post-config
    # Where lsrp-agent's register_opts finds each group's options.
    local section key src n=0
    while read -r section key; do
        case $section in
            agent) src=fedex_manager/agent/agent.py ;;
            shipment_keys) src=fedex_manager/keys.py ;;
            *) src=lsrp/opts.py ;;
        esac
        grep -q "Opt('$key'" "$REPO/$src" || {
            echo "[$section] $key: no such option in $src"; return 1; }
        n=$((n + 1))
    done < <(python3 -c '
import configparser, sys
cp = configparser.RawConfigParser()
cp.optionxform = str
cp.read(sys.argv[1])
for s in cp.sections():
    for k in cp[s]:
        if k not in cp.defaults():
            print(s, k)' "$FEDEX_CONF")
    # [agent] 5, [server] 7, [ceph] 4, [shipment] 2, [shipment_keys] 2.
    [ "$n" -eq 20 ]
}

@test "post-config: the terminal's options from local.conf" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    FEDEX_TRANSPORT_URL=rabbit://stackrabbit:secret@192.0.2.20:5672/
    FEDEX_TERMINAL_ADDRESS=198.51.100.7:17480
    FEDEX_SLOTS_DIR=$BATS_TEST_TMPDIR/slots
    FEDEX_CEPH_KEYRING=/etc/ceph/ceph.client.fedex.keyring
    FEDEX_TLS_CA=$BATS_TEST_TMPDIR/ca/ca.pem
    FEDEX_TLS_CA_KEY=$BATS_TEST_TMPDIR/ca/ca.key
    load_plugin
    with_pki
    phase stack post-config
    local conf=$FEDEX_CONF
    [ "$(iniget "$conf" DEFAULT transport_url)" = \
        rabbit://stackrabbit:secret@192.0.2.20:5672/ ]
    [ "$(iniget "$FEDEX_MANAGER_CONF" DEFAULT transport_url)" = \
        rabbit://stackrabbit:secret@192.0.2.20:5672/ ]
    [ "$(iniget "$conf" agent lsrp_address)" = 198.51.100.7:17480 ]
    [ "$(iniget "$conf" agent slots_dir)" = "$BATS_TEST_TMPDIR/slots" ]
    [ -d "$BATS_TEST_TMPDIR/slots" ]
    [ "$(iniget "$conf" ceph keyring)" = /etc/ceph/ceph.client.fedex.keyring ]
    [ "$(iniget "$conf" server tls_ca)" = "$BATS_TEST_TMPDIR/ca/ca.pem" ]
    # The CA taken where local.conf puts it, none made in the default place.
    [ ! -e "$FEDEX_CONF_DIR/pki/ca.pem" ]
}

@test "post-config: a CA and the terminal's certificate made when absent, kept after" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    load_plugin
    phase stack post-config
    local pki=$FEDEX_CONF_DIR/pki cert=$FEDEX_CONF_DIR/pki/terminal-site-a.pem
    # Good for both ends of the mutual TLS, under the name peers check.
    openssl verify -purpose sslserver -CAfile "$pki/ca.pem" "$cert"
    openssl verify -purpose sslclient -CAfile "$pki/ca.pem" "$cert"
    openssl x509 -in "$cert" -noout -ext subjectAltName | grep -q DNS:terminal-site-a
    [ "$(stat -c %a "$pki/terminal-site-a.key")" = 600 ]
    [ "$(stat -c %a "$pki/ca.key")" = 600 ]
    local before
    before=$(cat "$pki"/*)
    phase stack post-config
    [ "$(cat "$pki"/*)" = "$before" ]
}

@test "post-config at site B with site A's CA: the two terminals trust each other" {
    local ca=$BATS_TEST_TMPDIR/site-a-ca
    (
        FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/a/etc/lsrp
        FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/a/etc/fedex
        load_plugin
        phase stack post-config
    )
    mkdir "$ca"
    cp "$BATS_TEST_TMPDIR"/a/etc/lsrp/pki/ca.* "$ca"
    (
        FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/b/etc/lsrp
        FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/b/etc/fedex
        FEDEX_SITE_NAME=site-b
        FEDEX_TLS_CA=$ca/ca.pem
        FEDEX_TLS_CA_KEY=$ca/ca.key
        load_plugin
        phase stack post-config
    )
    cmp "$ca/ca.pem" "$BATS_TEST_TMPDIR/a/etc/lsrp/pki/ca.pem"
    [ ! -e "$BATS_TEST_TMPDIR/b/etc/lsrp/pki/ca.pem" ]
    # Site B's terminal connects to site A's as lsrp.tls does (TLS 1.3,
    # client certificate required, the server's name checked).
    python3 - "$ca/ca.pem" "$BATS_TEST_TMPDIR/a/etc/lsrp/pki/terminal-site-a" \
        "$BATS_TEST_TMPDIR/b/etc/lsrp/pki/terminal-site-b" <<'PY'
import ssl, sys
ca, a, b = sys.argv[1:]
def context(purpose, files):
    c = ssl.create_default_context(purpose, cafile=ca)
    c.minimum_version = ssl.TLSVersion.TLSv1_3
    c.load_cert_chain(files + '.pem', files + '.key')
    return c
server = context(ssl.Purpose.CLIENT_AUTH, a)
server.verify_mode = ssl.CERT_REQUIRED
client = context(ssl.Purpose.SERVER_AUTH, b)
to_a, to_b = ssl.MemoryBIO(), ssl.MemoryBIO()
ends = [client.wrap_bio(to_b, to_a, server_hostname='terminal-site-a'),
        server.wrap_bio(to_a, to_b, server_side=True)]
for _ in range(10):
    for end in list(ends):
        try:
            end.do_handshake()
            ends.remove(end)
        except ssl.SSLWantReadError:
            pass
assert not ends, 'handshake not done'
PY
}

@test "post-config: a certificate to make and a CA without its key stops stack.sh" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    # A CA's certificate copied without its key.
    mkdir -p "$BATS_TEST_TMPDIR/ca"
    cp "$BATS_FILE_TMPDIR/pki/ca.pem" "$BATS_TEST_TMPDIR/ca/"
    FEDEX_TLS_CA=$BATS_TEST_TMPDIR/ca/ca.pem
    FEDEX_TLS_CA_KEY=$BATS_TEST_TMPDIR/ca/ca.key
    load_plugin
    run phase stack post-config
    [ "$status" -ne 0 ]
    [[ $output == *"die: no $FEDEX_CONF_DIR/pki/terminal-site-a.pem and no CA"* ]]
    [ ! -e "$BATS_TEST_TMPDIR/ca/ca.key" ]
}

@test "post-config without fedex-terminal: no certificate made" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    disable_service fedex-terminal
    load_plugin
    phase stack post-config
    [ ! -e "$FEDEX_CONF_DIR/pki" ]
}

@test "post-config: fedex.conf, database, uwsgi and the vm-shipping catalog entry" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    load_plugin
    with_pki
    phase stack post-config
    local conf=$BATS_TEST_TMPDIR/etc/fedex/fedex.conf
    [ "$(iniget "$conf" database connection)" = \
        "mysql+pymysql://root:secret@127.0.0.1/fedex?charset=utf8" ]
    [ "$(iniget "$conf" DEFAULT transport_url)" = \
        "rabbit://stackrabbit:secret@192.0.2.10:5672/" ]
    called recreate_database fedex
    called configure_keystone_authtoken_middleware "$conf" fedex
    called write_uwsgi_config "$BATS_TEST_TMPDIR/etc/fedex/fedex-api-uwsgi.ini" \
        fedex_manager.api.wsgi:application /vm-shipping "" fedex-api
    called create_service_user fedex admin
    called get_or_create_role fedex_operator
    called get_or_create_service fedex vm-shipping "Migration over FedEx"
    called get_or_create_endpoint svc-1234 RegionOne http://192.0.2.10/vm-shipping
}

@test "post-config: every option written to fedex.conf is one the manager reads" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    FEDEX_COURIER=simulated
    load_plugin
    with_pki
    phase stack post-config
    # Where fedex_manager's register_opts finds each group's options; the
    # libraries' (oslo.log, oslo.messaging, oslo.db, oslo.policy) listed.
    local section key src n=0
    while read -r section key; do
        case $section in
            manager | jobboard | conductor) src=fedex_manager/opts.py ;;
            shipment_keys) src=fedex_manager/keys.py ;;
            simulated_courier) src=fedex_manager/couriers/simulated.py ;;
            DEFAULT | database | oslo_policy)
                case $key in
                    debug | transport_url | connection) ;;
                    enforce_scope | enforce_new_defaults) ;;
                    *) echo "[$section] $key: not a library option we know"
                       return 1 ;;
                esac
                n=$((n + 1)); continue ;;
            *) echo "[$section] $key: no such group in fedex_manager"; return 1 ;;
        esac
        grep -q "Opt('$key'" "$REPO/$src" || {
            echo "[$section] $key: no such option in $src"; return 1; }
        n=$((n + 1))
    done < <(ini_keys "$FEDEX_MANAGER_CONF")
    # DEFAULT 2, shipment_keys 2, database 1, manager 1, jobboard 1,
    # conductor 1, simulated_courier 1, oslo_policy 2.
    [ "$n" -eq 11 ]
    [ -d "$DATA_DIR/fedex/manager" ]
}

@test "install to extra: this node's ZooKeeper for the manager's jobboard" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    load_plugin
    with_pki
    phase stack install
    called install_package zookeeperd
    phase stack post-config
    [ "$(iniget "$FEDEX_MANAGER_CONF" jobboard hosts)" = 127.0.0.1:2181 ]
    # [jobboard] hosts is a list of host:port, 127.0.0.1:2181 by default.
    grep -q "cfg.ListOpt('hosts', default=\['127.0.0.1:2181'\]" \
        "$REPO/fedex_manager/opts.py"
    phase stack extra
    called start_service zookeeper
    [ "$(grep -n 'start_service zookeeper' "$CALLS" | cut -d: -f1)" -lt \
      "$(grep -n 'run_process fedex-conductor' "$CALLS" | cut -d: -f1)" ]
    phase unstack
    not_called "stop_service zookeeper"
    UNSTACK_ALL=True phase unstack
    called stop_service zookeeper
}

@test "install to extra: the ZooKeeper local.conf names, none installed" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    FEDEX_JOBBOARD_HOSTS=192.0.2.30:2181,192.0.2.31:2181
    load_plugin
    with_pki
    phase stack install
    phase stack post-config
    phase stack extra
    not_called "install_package zookeeperd"
    not_called "start_service zookeeper"
    [ "$(iniget "$FEDEX_MANAGER_CONF" jobboard hosts)" = \
        192.0.2.30:2181,192.0.2.31:2181 ]
}

@test "post-config: the courier from FEDEX_COURIER, the manager's manual by default" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    load_plugin
    with_pki
    phase stack post-config
    [ "$(iniget "$FEDEX_MANAGER_CONF" conductor courier)" = manual ]
    grep -q "cfg.StrOpt('courier', default='manual'" "$REPO/fedex_manager/opts.py"
    not_called "iniset $FEDEX_MANAGER_CONF simulated_courier"
    FEDEX_COURIER=simulated
    phase stack post-config
    [ "$(iniget "$FEDEX_MANAGER_CONF" conductor courier)" = simulated ]
    [ "$(iniget "$FEDEX_MANAGER_CONF" simulated_courier move_devices)" = True ]
    # Both are couriers of the manager (entry points).
    grep -q "^    manual = fedex_manager.couriers" "$REPO/setup.cfg"
    grep -q "^    simulated = fedex_manager.couriers" "$REPO/setup.cfg"
}

@test "extra: nova_fedex's [fedex] options in the nova-cpu.conf devstack made after post-config" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    load_plugin
    with_pki
    phase stack post-config
    not_called "iniset $NOVA_CPU_CONF"
    # devstack's start_nova_compute, between post-config and extra.
    mkdir -p "$(dirname "$NOVA_CONF")"
    printf '[DEFAULT]\ncompute_driver = libvirt.LibvirtDriver\n' > "$NOVA_CONF"
    cp "$NOVA_CONF" "$NOVA_CPU_CONF"
    phase stack extra
    [ "$(iniget "$NOVA_CPU_CONF" fedex site)" = site-a ]
    [ "$(iniget "$NOVA_CPU_CONF" fedex terminal_name)" = terminal-site-a ]
    [ "$(iniget "$NOVA_CPU_CONF" fedex tls_cert)" = "$FEDEX_TLS_CERT" ]
    # fedex-api's credentials (keystoneauth's options), the service user's.
    called configure_keystoneauth "$NOVA_CPU_CONF" fedex fedex
    [ "$(iniget "$NOVA_CPU_CONF" fedex region_name)" = RegionOne ]
    # Each of them one of nova_fedex's options (keystoneauth's aside).
    local section key n=0
    while read -r section key; do
        [ "$section" = fedex ] || continue
        [ "$key" = region_name ] && continue
        grep -q "cfg\.[A-Za-z]*Opt('$key'" "$REPO/nova_fedex/conf.py" || {
            echo "[fedex] $key: no such option in nova_fedex/conf.py"; return 1; }
        n=$((n + 1))
    done < <(ini_keys "$NOVA_CPU_CONF")
    [ "$n" -eq 5 ]
    # Written before nova-compute-fedex starts.
    [ "$(grep -n "iniset $NOVA_CPU_CONF fedex site" "$CALLS" | cut -d: -f1)" -lt \
      "$(grep -n 'systemctl restart' "$CALLS" | cut -d: -f1)" ]
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
    with_pki
    phase stack post-config
    [ "$(iniget "$CINDER_CONF" ceph volume_driver)" = \
        cinder_fedex.volume.drivers.fedex_rbd.FedexRBDDriver ]
    [ "$(iniget "$CINDER_CONF" ceph fedex_peer_site)" = site-b ]
    [ "$(iniget "$CINDER_CONF" ceph fedex_peer_rbd_ceph_conf)" = /etc/ceph/site-b.conf ]
}

@test "post-config: Cinder's API extension added to the standard ones, a repeated key" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    # As devstack's configure_cinder leaves it.
    mkdir -p "$(dirname "$CINDER_CONF")"
    printf '%s\n' '[DEFAULT]' \
        'osapi_volume_extension = cinder.api.contrib.standard_extensions' \
        'state_path = /opt/stack/data/cinder' '' '[ceph]' \
        'volume_backend_name = ceph' > "$CINDER_CONF"
    load_plugin
    with_pki
    phase stack post-config
    [ "$(iniget_multiline "$CINDER_CONF" DEFAULT osapi_volume_extension)" = \
        "cinder.api.contrib.standard_extensions cinder_fedex.api.contrib.fedex.Fedex" ]
    [ "$(grep -c '^osapi_volume_extension = ' "$CINDER_CONF")" -eq 2 ]
    [ "$(iniget "$CINDER_CONF" DEFAULT state_path)" = /opt/stack/data/cinder ]
    grep -q "^class Fedex(extensions.ExtensionDescriptor)" \
        "$REPO/cinder_fedex/api/contrib/fedex.py"
    # Once, however often post-config runs on the file.
    phase stack post-config
    [ "$(grep -c '^osapi_volume_extension = ' "$CINDER_CONF")" -eq 2 ]
}

@test "post-config: Horizon gets the plugin's enabled files" {
    FEDEX_CONF_DIR=$BATS_TEST_TMPDIR/etc/lsrp
    FEDEX_MANAGER_CONF_DIR=$BATS_TEST_TMPDIR/etc/fedex
    load_plugin
    with_pki
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
    with_pki
    phase stack post-config
    not_called recreate_database
    not_called get_or_create_service
    not_called write_uwsgi_config
    [ ! -e "$CINDER_CONF" ]
    [ -z "$(ls "$HORIZON_DIR/openstack_dashboard/local/enabled")" ]
    not_called "install_package zookeeperd"
}

@test "extra: schema synced, then the three services started, the terminal as lsrp-agent" {
    load_plugin
    phase stack extra
    local bin=$BATS_TEST_TMPDIR/bin
    called fedex-manage --config-file /etc/fedex/fedex.conf db sync
    # fedex-api under Debian's uwsgi, as devstack runs keystone and nova-api
    # ("$(which uwsgi) --procname-prefix ... --ini ..."): its venv has none.
    called run_process fedex-api \
        "$BATS_TEST_TMPDIR/usr/bin/uwsgi --procname-prefix fedex-api --ini /etc/fedex/fedex-api-uwsgi.ini"
    [ ! -e "$bin/uwsgi" ]
    called run_process fedex-conductor "$bin/fedex-conductor --config-file /etc/fedex/fedex.conf"
    called run_process fedex-terminal "$bin/lsrp-agent --config-file /etc/lsrp/lsrp.conf"
    # The terminal with the manager's agent, as the sandbox runs it.
    grep -q "lsrp-agent = fedex_manager.agent.agent:main" "$REPO/setup.cfg"
    # The schema before the services that use it.
    [ "$(grep -n 'db sync' "$CALLS" | cut -d: -f1)" -lt \
      "$(grep -n 'run_process fedex-api' "$CALLS" | cut -d: -f1)" ]
}

@test "extra on site B: only the terminal runs" {
    disable_service fedex-api fedex-conductor
    load_plugin
    phase stack extra
    not_called fedex-manage
    not_called "start_service zookeeper"
    not_called "openstack fedex"
    not_called configure_keystoneauth
    not_called "run_process fedex-api"
    not_called "run_process fedex-conductor"
    called run_process fedex-terminal \
        "$BATS_TEST_TMPDIR/bin/lsrp-agent --config-file /etc/lsrp/lsrp.conf"
}

@test "extra: both sites and this terminal registered through fedex-api, once" {
    load_plugin
    phase stack extra
    called wait_for_service 60 http://192.0.2.10/vm-shipping
    called openstack fedex site create site-a --ceph-conf /etc/ceph/ceph.conf \
        --ceph-client admin
    called openstack fedex site create site-b --ceph-conf /etc/ceph/peer.conf
    called openstack fedex terminal create terminal-site-a --site site-a \
        --lsrp-address 192.0.2.10:7480
    # Options of the project's OSC commands.
    local opt
    for opt in --ceph-conf --ceph-client --site --lsrp-address; do
        grep -q "add_argument('$opt'" "$REPO/nova_fedex/osc/v1/logistics.py"
    done
    grep -q "^    fedex_site_create = " "$REPO/setup.cfg"
    grep -q "^    fedex_terminal_create = " "$REPO/setup.cfg"
    # Once fedex-api runs.
    [ "$(grep -n 'run_process fedex-api' "$CALLS" | cut -d: -f1)" -lt \
      "$(grep -n 'wait_for_service' "$CALLS" | cut -d: -f1)" ]
    [ "$(grep -n 'wait_for_service' "$CALLS" | cut -d: -f1)" -lt \
      "$(grep -n 'openstack fedex site' "$CALLS" | head -1 | cut -d: -f1)" ]
    # A second stack.sh: they exist, none made again.
    : > "$CALLS"
    phase stack extra
    called openstack fedex site show site-a
    not_called "openstack fedex site create"
    not_called "openstack fedex terminal create"
    [ "$(wc -l < "$FEDEX_OBJECTS")" -eq 3 ]
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
    with_pki
    phase stack post-config
    [ -f "$FEDEX_CONF" ]
    phase clean
    called remove_uwsgi_config "$BATS_TEST_TMPDIR/etc/fedex/fedex-api-uwsgi.ini" fedex-api
    [ ! -e "$FEDEX_CONF_DIR" ]
    [ ! -e "$FEDEX_MANAGER_CONF_DIR" ]
    [ ! -e "$FEDEX_STATE_DIR" ]
    [ -z "$(ls "$HORIZON_DIR/openstack_dashboard/local/enabled")" ]
}

@test "samples: two nodes as written; one machine with file:// and HOST_IP=127.0.0.1" {
    local samples=$REPO/devstack/samples
    # devstack's enable_plugin, which refuses a plugin enabled twice.
    enable_plugin() {
        [[ ,$PLUGINS, == *,$1,* ]] && { echo "die: $1 enabled twice"; return 1; }
        PLUGINS+=",$1"
        record enable_plugin "$@"
    }
    (
        source <(localrc "$samples/local.conf.site-a")
        [ "$HOST_IP" = 192.0.2.10 ]
        [ "$FEDEX_COURIER" = manual ]
        load_plugin
        is_service_enabled fedex-api
    )
    (
        source <(localrc "$samples/local.conf.site-b")
        [ "$HOST_IP" = 192.0.2.20 ]
        load_plugin
        run is_service_enabled fedex-conductor
        [ "$status" -ne 0 ]
    )
    called enable_plugin openstack-fedex /opt/stack/openstack-fedex
    # One machine: the commented lines in place of the two-node ones.
    : > "$CALLS"
    (
        source <(localrc "$samples/local.conf.site-a" | sed \
            -e '/^HOST_IP=/d' -e '/^enable_plugin openstack-fedex /d' \
            -e 's/^#\(HOST_IP=\)/\1/' \
            -e 's/^#\(enable_plugin openstack-fedex \)/\1/')
        [ "$HOST_IP" = 127.0.0.1 ]
    )
    grep -qx "enable_plugin openstack-fedex file:///[^ ]* main" "$CALLS"
    # The sample says which courier gets a migration to COMPLETED alone.
    grep -A5 "^# The courier of new shipments" "$samples/local.conf.site-a" |
        tr '\n' ' ' | grep -q "simulated: .* COMPLETED unattended"
}
