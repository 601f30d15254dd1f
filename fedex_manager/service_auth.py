"""keystoneauth options and clients of the services the manager calls.

Nova (``[nova]``) and Cinder (``[cinder]``) are each a group of the usual
keystoneauth options (auth plugin, session, adapter: ``auth_type``,
``auth_url``, ``username``, ..., ``region_name``, ``service_type``), as
every OpenStack service configures the clients of its peers.
"""

from lsrp import exception


def register_opts(conf, group, service_type):
    from keystoneauth1 import loading as ks_loading

    ks_loading.register_session_conf_options(conf, group)
    ks_loading.register_auth_conf_options(conf, group)
    ks_loading.register_adapter_conf_options(conf, group)
    conf.set_default('service_type', service_type, group=group)


def list_opts():
    from keystoneauth1 import loading as ks_loading

    return (ks_loading.get_session_conf_options() +
            ks_loading.get_auth_common_conf_options() +
            ks_loading.get_adapter_conf_options(include_deprecated=False))


def adapter(conf, group, missing=None):
    """A keystoneauth Adapter of ``[group]``.

    ``missing``: the reason given when the group has no credentials
    (ManagerError); None lets keystoneauth say it.
    """
    from keystoneauth1 import loading as ks_loading

    auth = ks_loading.load_auth_from_conf_options(conf, group)
    if auth is None and missing:
        raise exception.ManagerError(reason=missing)
    session = ks_loading.load_session_from_conf_options(conf, group,
                                                        auth=auth)
    return ks_loading.load_adapter_from_conf_options(
        conf, group, session=session, auth=auth)
