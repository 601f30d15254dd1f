#!/bin/bash
# devstack plugin of openstack-fedex: installs lsrp on a node that has Ceph
# and writes its configuration. Enable in local.conf with:
#   enable_plugin openstack-fedex <repository> [branch]

function install_fedex {
    install_package ceph-common python3-rados python3-rbd
    setup_develop "$FEDEX_DIR"
    # Debian's Ceph bindings are not on PyPI: link them into the venv.
    "$PYTHON" "$FEDEX_DIR/tools/link_ceph_bindings.py"
}

function configure_fedex {
    sudo install -d -o "$STACK_USER" "$FEDEX_CONF_DIR"
    iniset "$FEDEX_CONF" ceph site_name "$FEDEX_SITE_NAME"
    iniset "$FEDEX_CONF" ceph conf_file "$FEDEX_CEPH_CONF"
    iniset "$FEDEX_CONF" ceph client_name "$FEDEX_CEPH_USER"
}

if [[ "$1" == "stack" && "$2" == "install" ]]; then
    echo_summary "Installing openstack-fedex"
    install_fedex
elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
    echo_summary "Configuring openstack-fedex"
    configure_fedex
fi
