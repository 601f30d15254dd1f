#!/bin/bash
# devstack plugin of openstack-fedex ("Migration over FedEx").
# Enable in local.conf with:
#   enable_plugin openstack-fedex <repository> [branch]
# and see devstack/samples/ for the two-node (one node per site) layout.
# devstack calls this file once per phase: plugin.sh <mode> <phase>.

FEDEX_PLUGIN_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=devstack/lib/fedex
source "$FEDEX_PLUGIN_DIR/lib/fedex"

if [[ "$1" == "stack" && "$2" == "install" ]]; then
    echo_summary "Installing openstack-fedex"
    install_fedex
    if is_service_enabled fedex-horizon; then
        install_fedex_dashboard
    fi
elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
    echo_summary "Configuring openstack-fedex"
    configure_fedex
    if is_service_enabled fedex-terminal; then
        configure_fedex_tls
    fi
    if is_service_enabled fedex-api fedex-conductor; then
        configure_fedex_manager
    fi
    if is_service_enabled fedex-api; then
        configure_fedex_api
        create_fedex_accounts
    fi
    if is_service_enabled fedex-cinder; then
        configure_fedex_cinder
    fi
    if is_service_enabled fedex-horizon; then
        configure_fedex_dashboard
    fi
elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
    echo_summary "Starting openstack-fedex"
    init_fedex
    start_fedex
    if is_service_enabled fedex-api; then
        create_fedex_sites
    fi
    if is_service_enabled fedex-nova && is_service_enabled n-cpu; then
        start_fedex_nova_compute
    fi
elif [[ "$1" == "stack" && "$2" == "test-config" ]]; then
    configure_fedex_tempest
fi

if [[ "$1" == "unstack" ]]; then
    stop_fedex
fi

if [[ "$1" == "clean" ]]; then
    cleanup_fedex
fi
