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
SERVICE_TIMEOUT=60
HORIZON_DIR=$DEST/horizon
NOVA_CONF=$BATS_TEST_TMPDIR/etc/nova/nova.conf
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

# iniset [-sudo] FILE SECTION KEY VALUE: recorded, and written for real as
# devstack's does ("key = value", the key replaced in its section, the
# section added at the end). One awk, no python3, mkdir or mv per call: a
# post-config phase sets some 60 options, and the processes they started
# made most of the suite's time on a loaded CI machine.
iniset() {
    [[ $1 == -sudo ]] && shift
    record iniset "$@"
    local dir=.
    [[ $1 == */* ]] && dir=${1%/*}
    [[ -d ${dir:-/} ]] || mkdir -p "$dir"
    [[ -e $1 ]] || : > "$1"
    F=$1 S=$2 K=$3 V=$4 awk '
        function emit(line) { out = out line "\n" }
        function key(line) {
            sub(/[ \t]*=.*/, "", line); sub(/^[ \t]+/, "", line)
            return line
        }
        function put() { if (here && !done) { emit(ENVIRON["K"] " = " ENVIRON["V"]); done = 1 } }
        # Blank lines held back: a key added to a section goes before them.
        function blanks() { for (; held > 0; held--) emit("") }
        /^[ \t]*$/ { held++; next }
        /^\[.*\]/ { put(); blanks(); here = ($0 == "[" ENVIRON["S"] "]"); seen = seen || here; emit($0); next }
        here && !done && /=/ && key($0) == ENVIRON["K"] { blanks(); put(); next }
        { blanks(); emit($0) }
        END {
            put(); blanks()
            if (!seen) {
                if (NR) emit("")
                emit("[" ENVIRON["S"] "]"); emit(ENVIRON["K"] " = " ENVIRON["V"])
            }
            # The whole file read: rewritten in place.
            printf "%s", out > ENVIRON["F"]
        }' "$1"
}
# _ini_values FILE SECTION KEY [first]: each value of the option, one a
# line (the first only, with "first"); failure if it has none.
_ini_values() {
    S=$2 K=$3 FIRST=${4:-} awk '
        /^\[.*\]/ { here = ($0 == "[" ENVIRON["S"] "]"); next }
        here && /=/ {
            k = $0; sub(/[ \t]*=.*/, "", k); sub(/^[ \t]+/, "", k)
            if (k != ENVIRON["K"]) next
            v = $0; sub(/^[^=]*=[ \t]*/, "", v); sub(/[ \t]+$/, "", v)
            print v; found = 1
            if (ENVIRON["FIRST"]) exit
        }
        END { exit !found }' "$1"
}
# iniget FILE SECTION KEY (for the tests' assertions): the value, or
# failure if the file has no such option.
iniget() { _ini_values "$1" "$2" "$3" first; }

# iniadd [-sudo] FILE SECTION KEY VALUE...: recorded, and each value
# appended as one more "key = value" line of the section (the key
# repeated, as devstack's iniadd leaves a MultiStrOpt), the section added
# at the end if absent. One awk, as iniset.
iniadd() {
    [[ $1 == -sudo ]] && shift
    record iniadd "$@"
    local file=$1 section=$2 key=$3
    shift 3
    [[ -e $file ]] || : > "$file"
    local lines="" v
    for v in "$@"; do
        lines+="$key = $v"$'\n'
    done
    F=$file S=$section L=$lines awk '
        function emit(line) { out = out line "\n" }
        function add() { if (here && !done) { out = out ENVIRON["L"]; done = 1 } }
        function blanks() { for (; held > 0; held--) emit("") }
        /^[ \t]*$/ { held++; next }
        /^\[.*\]/ { add(); blanks(); here = ($0 == "[" ENVIRON["S"] "]"); seen = seen || here; emit($0); next }
        { blanks(); emit($0) }
        END {
            add(); blanks()
            if (!seen) {
                if (NR) emit("")
                emit("[" ENVIRON["S"] "]"); out = out ENVIRON["L"]
            }
            printf "%s", out > ENVIRON["F"]
        }' "$file"
}
# iniget_multiline FILE SECTION KEY: every value of a repeated key, on one
# line separated by spaces, as devstack's.
iniget_multiline() {
    local values
    values=$(_ini_values "$1" "$2" "$3") || true
    echo "${values//$'\n'/ }"
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
configure_keystoneauth() { record configure_keystoneauth "$@"; }
wait_for_service() { record wait_for_service "$@"; }
start_service() { record start_service "$@"; }
stop_service() { record stop_service "$@"; }
write_uwsgi_config() { record write_uwsgi_config "$@"; }
remove_uwsgi_config() { record remove_uwsgi_config "$@"; }
create_service_user() { record create_service_user "$@"; }
get_or_create_role() { record get_or_create_role "$@"; }
get_or_create_service() { record get_or_create_service "$@"; echo svc-1234; }
get_or_create_endpoint() { record get_or_create_endpoint "$@"; }
# devstack starts and stops only enabled services.
run_process() { is_service_enabled "$1" && record run_process "$@"; return 0; }
stop_process() { is_service_enabled "$1" && record stop_process "$@"; return 0; }
# Debian's uwsgi, as devstack installs it: `which uwsgi` finds this one.
mkdir -p "$BATS_TEST_TMPDIR/usr/bin"
printf '#!/bin/sh\n' > "$BATS_TEST_TMPDIR/usr/bin/uwsgi"
chmod +x "$BATS_TEST_TMPDIR/usr/bin/uwsgi"
PATH=$BATS_TEST_TMPDIR/usr/bin:$PATH

# OSC with the project's "openstack fedex" commands, against a pretend
# fedex-api: "create" records the object in $FEDEX_OBJECTS (one line: kind
# and name), "show" fails for an object not there; other commands succeed.
FEDEX_OBJECTS=$BATS_TEST_TMPDIR/fedex-objects
: > "$FEDEX_OBJECTS"
openstack() {
    record openstack "$@"
    [[ $1 == fedex ]] || return 0
    case $3 in
        create) echo "$2 $4" >> "$FEDEX_OBJECTS" ;;
        show) grep -qxF "$2 $4" "$FEDEX_OBJECTS" ;;
    esac
}

fake_python() { record python "$@"; }
PYTHON=fake_python
