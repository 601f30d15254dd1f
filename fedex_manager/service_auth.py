"""keystoneauth options and clients of the services the manager calls.

Nova (``[nova]``) and Cinder (``[cinder]``) are each a group of the usual
keystoneauth options (auth plugin, session, adapter: ``auth_type``,
``auth_url``, ``username``, ..., ``region_name``, ``service_type``), as
every OpenStack service configures the clients of its peers.
"""

import threading

from lsrp import exception

# (id(conf), group) -> (its options' values, auth plugin, session): one
# session a process, its token and connections kept from call to call
# (the sweeper's unlock made two requests through a session of its own
# each time); another when the options change (tests override them).
_sessions = {}
_sessions_lock = threading.Lock()


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

    auth, session = _session(conf, group)
    if auth is None and missing:
        raise exception.ManagerError(reason=missing)
    return ks_loading.load_adapter_from_conf_options(
        conf, group, session=session, auth=auth)


def _session(conf, group):
    """The (auth, session) of ``[group]``, made once while it stays so."""
    from keystoneauth1 import loading as ks_loading

    with _sessions_lock:
        # Loading the plugin registers its options (auth_url, ...): the
        # values compared are read after it.
        auth = ks_loading.load_auth_from_conf_options(conf, group)
        values = repr(sorted((k, conf[group][k]) for k in conf[group]))
        key = (id(conf), group)
        kept = _sessions.get(key)
        if kept is not None and kept[0] == values:
            return kept[1], kept[2]
        session = ks_loading.load_session_from_conf_options(
            conf, group, auth=auth)
        _sessions[key] = (values, auth, session)
        return auth, session
