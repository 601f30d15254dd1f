#!/bin/bash
# Stand-ins for the devstack functions plugin.sh uses: each records its call
# in $CALLS (one line: name and arguments) so a test can assert what a phase
# did; iniset also writes a real ini file with crudini-like semantics so a
# test can read back the configuration.
# shellcheck shell=bash disable=SC2034

CALLS=$BATS_TEST_TMPDIR/calls
: > "$CALLS"

record() { echo "$*" >> "$CALLS"; }

# devstack globals the plugin reads.
DEST=$BATS_TEST_TMPDIR/opt/stack
DATA_DIR=$DEST/data
STACK_USER=$(id -un)
SERVICE_HOST=192.0.2.10
SERVICE_PROTOCOL=http
REGION_NAME=RegionOne
ENABLE_DEBUG_LOG_LEVEL=True
HORIZON_DIR=$DEST/horizon
NOVA_CPU_CONF=$BATS_TEST_TMPDIR/etc/nova/nova-cpu.conf
SYSTEMD_DIR=$BATS_TEST_TMPDIR/etc/systemd/system
SYSTEMCTL="record systemctl"
CINDER_CONF=$BATS_TEST_TMPDIR/etc/cinder/cinder.conf
TEMPEST_CONFIG=$BATS_TEST_TMPDIR/etc/tempest/tempest.conf
ENABLED_SERVICES=${ENABLED_SERVICES:-key,n-cpu,c-vol,horizon,tempest}
DISABLED_SERVICES=

get_python_exec_prefix() { echo "$BATS_TEST_TMPDIR/bin"; }
mkdir -p "$BATS_TEST_TMPDIR/bin"
printf '#!/bin/bash\necho "fedex-manage $*" >> "%s"\n' "$CALLS" \
    > "$BATS_TEST_TMPDIR/bin/fedex-manage"
chmod +x "$BATS_TEST_TMPDIR/bin/fedex-manage"

# Service selection as devstack does it: disable_service wins over a later
# enable_service (a plugin's settings are sourced after local.conf).
enable_service() {
    local s
    for s in "$@"; do
        [[ ,$DISABLED_SERVICES, == *,$s,* ]] && continue
        [[ ,$ENABLED_SERVICES, == *,$s,* ]] || ENABLED_SERVICES+=",$s"
    done
}
disable_service() {
    local s
    for s in "$@"; do
        DISABLED_SERVICES+=",$s"
        ENABLED_SERVICES=$(echo ",$ENABLED_SERVICES," | sed "s/,$s,/,/g; s/^,//; s/,$//")
    done
}
is_service_enabled() {
    local s
    for s in "$@"; do
        [[ ,$ENABLED_SERVICES, == *,$s,* ]] && return 0
    done
    return 1
}

# iniset [-sudo] FILE SECTION KEY VALUE: recorded, and written for real.
iniset() {
    [[ $1 == -sudo ]] && shift
    record iniset "$@"
    mkdir -p "$(dirname "$1")"
    python3 - "$@" <<'PY'
import configparser, sys
path, section, key, value = sys.argv[1:5]
cp = configparser.RawConfigParser()
cp.optionxform = str
cp.read(path)
if section != 'DEFAULT' and not cp.has_section(section):
    cp.add_section(section)
cp.set(section, key, value)
with open(path, 'w') as f:
    cp.write(f)
PY
}
# iniget FILE SECTION KEY (for the tests' assertions).
iniget() {
    python3 - "$@" <<'PY'
import configparser, sys
cp = configparser.RawConfigParser()
cp.read(sys.argv[1])
print(cp.get(sys.argv[2], sys.argv[3]))
PY
}

echo_summary() { :; }
# die LINENO MESSAGE...: devstack stops stack.sh with the message.
die() { shift; echo "die: $*"; exit 1; }
sudo() { "$@"; }
install_package() { record install_package "$@"; }
setup_develop() { record setup_develop "$@"; }
pip_install() { record pip_install "$@"; }
get_transport_url() { echo "rabbit://stackrabbit:secret@192.0.2.10:5672/"; }
database_connection_url() { echo "mysql+pymysql://root:secret@127.0.0.1/$1?charset=utf8"; }
recreate_database() { record recreate_database "$@"; }
configure_keystone_authtoken_middleware() { record configure_keystone_authtoken_middleware "$@"; }
write_uwsgi_config() { record write_uwsgi_config "$@"; }
remove_uwsgi_config() { record remove_uwsgi_config "$@"; }
create_service_user() { record create_service_user "$@"; }
get_or_create_role() { record get_or_create_role "$@"; }
get_or_create_service() { record get_or_create_service "$@"; echo svc-1234; }
get_or_create_endpoint() { record get_or_create_endpoint "$@"; }
# devstack starts and stops only enabled services.
run_process() { is_service_enabled "$1" && record run_process "$@"; return 0; }
stop_process() { is_service_enabled "$1" && record stop_process "$@"; return 0; }
fake_python() { record python "$@"; }
PYTHON=fake_python
