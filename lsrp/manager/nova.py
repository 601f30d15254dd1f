"""The manager's one call to Nova: start the cutover's live migration.

With ``[conductor] compute_driver = nova``, once the last catch-up round
before the pause is done, the conductor asks Nova to live-migrate each
server of the migration to its site-B host (microversion 2.30, ``force``:
the server's availability zone is site A's, which the scheduler would
otherwise keep). Nova's compute driver (nova_fedex) then runs the cutover
and reports its end to fedex-api, which completes or rolls back the
migration. Credentials: the ``[nova]`` group (keystoneauth options).
"""

from oslo_config import cfg
from oslo_log import log as logging

from lsrp import exception

CONF = cfg.CONF
LOG = logging.getLogger(__name__)
GROUP = 'nova'
# The last microversion with ``force`` in os-migrateLive.
MICROVERSION = '2.30'


def register_opts(conf):
    from keystoneauth1 import loading as ks_loading

    ks_loading.register_session_conf_options(conf, GROUP)
    ks_loading.register_auth_conf_options(conf, GROUP)
    ks_loading.register_adapter_conf_options(conf, GROUP)
    conf.set_default('service_type', 'compute', group=GROUP)


def list_opts():
    from keystoneauth1 import loading as ks_loading

    return (ks_loading.get_session_conf_options() +
            ks_loading.get_auth_common_conf_options() +
            ks_loading.get_adapter_conf_options(include_deprecated=False))


def _adapter(conf=CONF):
    from keystoneauth1 import loading as ks_loading

    auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
    session = ks_loading.load_session_from_conf_options(conf, GROUP,
                                                        auth=auth)
    return ks_loading.load_adapter_from_conf_options(
        conf, GROUP, session=session, auth=auth)


def live_migrate(server_id, host, conf=CONF):
    """Ask Nova to live-migrate ``server_id`` to ``host`` (returns at 202).

    Raises ManagerError naming Nova's answer when it refuses at once.
    """
    resp = _adapter(conf).post(
        '/servers/%s/action' % server_id, raise_exc=False,
        json={'os-migrateLive': {'host': host, 'block_migration': False,
                                 'force': True}},
        headers={'OpenStack-API-Version': 'compute %s' % MICROVERSION,
                 'X-OpenStack-Nova-API-Version': MICROVERSION})
    if resp.status_code != 202:
        raise exception.ManagerError(
            reason='Nova refused the live migration of server %s to %s: '
                   'HTTP %d %s' % (server_id, host, resp.status_code,
                                   resp.text[:300]))
    LOG.info('Nova live-migrates server %s to %s', server_id, host)
