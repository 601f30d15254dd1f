"""keystoneauth options and clients of the services the manager calls.

Nova (``[nova]``) and Cinder (``[cinder]``) are each a group of the usual
keystoneauth options (auth plugin, session, adapter: ``auth_type``,
``auth_url``, ``username``, ..., ``region_name``, ``service_type``), as
every OpenStack service configures the clients of its peers.

One keystoneauth session per group and configuration, kept for the
process (:func:`adapter`): its token is asked for once and reused until
it nears its expiry, as the clients of every OpenStack service do.
"""

import threading

from lsrp import exception

# (id(conf), group) -> (fingerprint of the group's options, auth, session).
_SESSIONS = {}
_SESSIONS_LOCK = threading.Lock()


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
    """A keystoneauth Adapter of ``[group]``, on the group's kept session.

    The auth plugin and session are made once per group (again when the
    group's options change): a fresh plugin per call asked Keystone for a
    new token at every call, and the called service had to validate each
    new token with Keystone. In the 8-server wave on the 2-core
    mini-cloud (load ~20) that was 4.8 s to issue plus 20.4 s to validate
    on average (80 tokens issued, 128 validations in 26 min), and a Nova
    GET of one server took 10-30 s against 0.7-1.8 s for the next call
    on the same token. keystoneauth asks for a new token itself when the
    kept one nears its expiry.

    ``missing``: the reason given when the group has no credentials
    (ManagerError); None lets keystoneauth say it.
    """
    from keystoneauth1 import loading as ks_loading

    auth, session = _session(conf, group, missing)
    return ks_loading.load_adapter_from_conf_options(
        conf, group, session=session, auth=auth)


def _fingerprint(conf, group):
    # Every option of the group (the plugin's own are registered by its
    # loading): a changed option (a test's override, a reload) makes a new
    # session rather than using the old credentials.
    options = conf[group]
    return tuple(sorted((name, repr(options.get(name)))
                        for name in options.keys()))


def _session(conf, group, missing):
    from keystoneauth1 import loading as ks_loading

    key = (id(conf), group)
    with _SESSIONS_LOCK:
        kept = _SESSIONS.get(key)
        if kept is not None and kept[0] == _fingerprint(conf, group):
            return kept[1], kept[2]
        auth = ks_loading.load_auth_from_conf_options(conf, group)
        if auth is None and missing:
            raise exception.ManagerError(reason=missing)
        session = ks_loading.load_session_from_conf_options(conf, group,
                                                            auth=auth)
        # After the plugin's loading, which registered its options.
        _SESSIONS[key] = (_fingerprint(conf, group), auth, session)
        return auth, session
