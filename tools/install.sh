#!/bin/bash
# Install everything this project needs on Debian 12, as root, idempotently:
# Debian's Ceph (daemons, CLI, Python bindings) and a virtualenv in .venv with
# this project, its test and doc requirements (tox runs py3 and docs in it),
# tox, and the bindings linked in.
#
# --openstack: also what 'fedex-sandbox up --openstack' needs: QEMU, libvirt,
# busybox (Debian) and the OpenStack services in a second virtualenv,
# .venv-openstack (~600 MB), with this project installed into it too, and
# the test libraries of the tox envs that run in it (drivers, horizon).
set -euo pipefail
cd "$(dirname "$0")/.."
OPENSTACK=
[ "${1:-}" = "--openstack" ] && OPENSTACK=1

APT_PACKAGES=(ceph ceph-common python3-rados python3-rbd time iproute2
              python3-venv python3-dev git
              # Offline checks of devstack/, the browser tests.
              shellcheck bats chromium chromium-driver
              # The sandbox's shared services (fedex_sandbox/services).
              mariadb-server rabbitmq-server zookeeper default-jre-headless
              # mysqlclient's build (fedex-api's C MySQL driver).
              libmariadb-dev pkg-config)
# QEMU and libvirt come from bookworm-backports (QEMU 10.0, libvirt 11.3):
# Debian 12's QEMU 7.2 crashes (assertion in bdrv_inactivate_recurse) when a
# guest that arrived paused is migrated out again, which is how a FedEx
# cutover rolls back after the memory copy (doc/source/cutover-e2e.rst).
BACKPORTS=(qemu-system-x86 qemu-block-extra qemu-utils
           libvirt-daemon-system libvirt-clients
           libvirt-daemon-driver-storage-rbd)
if [ -n "$OPENSTACK" ]; then
    APT_PACKAGES+=(python3-libvirt busybox-static util-linux)
fi

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' \
        || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "install.sh: apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    # Wait for another apt (a second sandbox, unattended upgrades) rather
    # than fail at once on its lock.
    APT_WAIT=(-o DPkg::Lock::Timeout=900)
    apt-get "${APT_WAIT[@]}" update -qq
    apt-get "${APT_WAIT[@]}" install -y -qq "${missing[@]}" >/dev/null
fi
if [ -n "$OPENSTACK" ]; then
    export DEBIAN_FRONTEND=noninteractive
    APT_WAIT=(-o DPkg::Lock::Timeout=900)
    list=/etc/apt/sources.list.d/bookworm-backports.list
    if ! grep -qs '^deb .* bookworm-backports' /etc/apt/sources.list $list; then
        echo "deb http://deb.debian.org/debian bookworm-backports main" > $list
        apt-get "${APT_WAIT[@]}" update -qq
    fi
    if ! qemu-system-x86_64 --version 2>/dev/null | grep -q 'version 1[0-9]\.'; then
        echo "install.sh: apt-get install -t bookworm-backports ${BACKPORTS[*]}"
        apt-get "${APT_WAIT[@]}" update -qq
        apt-get "${APT_WAIT[@]}" install -y -qq -t bookworm-backports \
            "${BACKPORTS[@]}" >/dev/null
    fi
fi

# Debian's rados/rbd modules are built for Debian's Python 3.11: the venv's
# Python must have the same ABI. Prefer python3 on PATH when it is 3.11.
PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    PYTHON=/usr/bin/python3
fi
# The OpenStack services' packages go into .venv-openstack while .venv is
# made (two pip runs at once: mostly waits for the disk and the index).
# Only third-party packages there: this project is built (pbr writes into
# the source tree) by one pip at a time, below.
openstack_requirements() {
    if [ ! -x .venv-openstack/bin/python ]; then
        "$PYTHON" -m venv .venv-openstack
    fi
    .venv-openstack/bin/python -m pip install -q \
        -c tools/openstack-constraints.txt -r tools/openstack-requirements.txt \
        2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
}
if [ -n "$OPENSTACK" ]; then
    openstack_requirements &
    openstack_pid=$!
fi
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q -c upper-constraints.txt \
    -e '.[server,client,dashboard,plot]' -r test-requirements.txt \
    -r doc/requirements.txt tox \
    2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
# mysqlclient (the C MySQL driver, GPL-2.0) is no requirement of this
# Apache-2.0 project: a deployment picks its driver in [database]
# connection. The sandbox's fedex-api uses it when its virtualenv has it
# (fedex_sandbox/manager/api_service.py; a list costs a third less CPU).
.venv/bin/python -m pip install -q -c upper-constraints.txt mysqlclient
.venv/bin/python tools/link_ceph_bindings.py
.venv/bin/python -c 'import rados, rbd' \
    || { echo "install.sh: the Ceph bindings do not import in .venv" >&2; exit 1; }
if [ -n "$OPENSTACK" ]; then
    # Its own venv: nova, cinder, keystone... pin libraries this project's
    # tox envs do not need, and a 'pip install' of one must not move the other.
    wait "$openstack_pid" \
        || { echo "install.sh: pip install into .venv-openstack failed" >&2; exit 1; }
    .venv-openstack/bin/python -m pip install -q --no-deps -e . \
        2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
    .venv-openstack/bin/python -m pip install -q -c upper-constraints.txt \
        -e '.[server,client,dashboard]' \
        2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
    .venv-openstack/bin/python -m pip install -q -c upper-constraints.txt \
        mysqlclient -r test-requirements.txt \
        -r tools/openstack-test-requirements.txt \
        2> >(grep -v "is ignored: it is neither a file nor a directory" >&2)
    .venv-openstack/bin/python tools/link_ceph_bindings.py --libvirt
    .venv-openstack/bin/python -c 'import rados, rbd, libvirt, nova, lsrp, stestr' \
        || { echo "install.sh: .venv-openstack is incomplete" >&2; exit 1; }
fi
# This machine's environment and tox.ini set PYTHONDONTWRITEBYTECODE: no
# process writes this project's bytecode, so every one compiled the modules
# it imports again (0.8 s of CPU for the manager's service modules alone,
# in each conductor, agent and CLI the tests start). Compiled once here; a
# module edited since is compiled in memory, as before.
PYTHONDONTWRITEBYTECODE= .venv/bin/python -m compileall -q -j 0 lsrp \
    fedex_manager fedexclient fedex_dashboard nova_fedex cinder_fedex \
    fedex_sandbox fedex_tempest_plugin tests >/dev/null
echo "install.sh: ready in ${SECONDS} s (.venv, $(.venv/bin/python --version), $(ceph --version | cut -d' ' -f1-3))"
