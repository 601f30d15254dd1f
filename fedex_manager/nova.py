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

from fedex_manager import service_auth
from lsrp import exception

CONF = cfg.CONF
LOG = logging.getLogger(__name__)
GROUP = 'nova'
# The last microversion with ``force`` in os-migrateLive.
MICROVERSION = '2.30'


def register_opts(conf):
    service_auth.register_opts(conf, GROUP, 'compute')


def list_opts():
    return service_auth.list_opts()


def _adapter(conf=CONF):
    return service_auth.adapter(conf, GROUP)


def live_migrate(server_id, host, conf=CONF):
    """Ask Nova to live-migrate ``server_id`` to ``host``; its request id.

    At microversion 2.30 Nova runs its pre-checks (nova_fedex's included)
    before it answers: a 4xx is a refusal (NovaRefused, nothing started).
    Anything else that is not 202 (a timeout, a 5xx) leaves it unknown
    whether the migration runs: ManagerError, and the conductor reads
    Nova's records back (:func:`live_migration_outcome`).
    """
    resp = _adapter(conf).post(
        '/servers/%s/action' % server_id, raise_exc=False,
        json={'os-migrateLive': {'host': host, 'block_migration': False,
                                 'force': True}},
        headers={'OpenStack-API-Version': 'compute %s' % MICROVERSION,
                 'X-OpenStack-Nova-API-Version': MICROVERSION})
    if 400 <= resp.status_code < 500:
        raise exception.NovaRefused(server=server_id, host=host,
                                    reason=_nova_message(resp))
    if resp.status_code != 202:
        raise exception.ManagerError(
            reason='Nova answered the live migration of server %s to %s '
                   'with HTTP %d %s' % (server_id, host, resp.status_code,
                                        resp.text[:300]))
    LOG.info('Nova live-migrates server %s to %s', server_id, host)
    return resp.headers.get('x-openstack-request-id')


# Nova's power_state of a running guest.
RUNNING = 1


def reset_to_active(server_id, conf=CONF):
    """Nova's ``os-resetState`` to active: its record only, not the guest.

    For a server Nova set to ERROR because the live migration the manager
    asked for failed, whose guest runs on where it was.
    """
    resp = _adapter(conf).post(
        '/servers/%s/action' % server_id, raise_exc=False,
        json={'os-resetState': {'state': 'active'}})
    if resp.status_code != 202:
        raise exception.ManagerError(
            reason='Nova answered the reset of server %s to ACTIVE with '
                   'HTTP %d %s' % (server_id, resp.status_code,
                                   _nova_message(resp)))


def _nova_message(resp):
    """The message of a Nova error body ({"badRequest": {"message": ..}})."""
    try:
        body = resp.json()
        return '; '.join(str(v.get('message', v)) for v in body.values())
    except (ValueError, AttributeError):
        return 'HTTP %d %s' % (resp.status_code, resp.text[:300])


# Nova's migration statuses that end a live migration.
ENDED_OK = ('completed',)
ENDED_FAILED = ('error', 'failed', 'cancelled')
# The microversion of the read-back: instance_uuid filter of os-migrations
# (2.59) and the events' details of instance actions (2.84).
READ_MICROVERSION = '2.84'


def _get(adapter, url, missing=False):
    """Nova's answer to GET ``url``; None on a 404 when ``missing``."""
    resp = adapter.get(url, raise_exc=False, headers={
        'OpenStack-API-Version': 'compute %s' % READ_MICROVERSION,
        'X-OpenStack-Nova-API-Version': READ_MICROVERSION})
    if missing and resp.status_code == 404:
        return None
    if resp.status_code != 200:
        raise exception.ManagerError(
            reason='Nova answered GET %s with HTTP %d %s' % (
                url, resp.status_code, resp.text[:300]))
    return resp.json()


def live_migration_outcome(server_id, request_id=None, since=None,
                           conf=CONF):
    """What Nova says of the server's newest live migration.

    Returns ``{"status": Nova's migration status or None (no record),
    "ended": None (still running) / "completed" / "failed", "host",
    "server_status", "task_state", "reason"}``; ``reason`` is the message
    of the failed event of the instance action (``request_id``, or the
    newest live-migration action), so that an operator reads why.
    ``since``: an ISO time; older migration records are ignored.
    """
    adapter = _adapter(conf)
    server = _get(adapter, '/servers/%s' % server_id)['server']
    migrations = _get(
        adapter, '/os-migrations?instance_uuid=%s&migration_type='
        'live-migration' % server_id)['migrations']
    if since:
        migrations = [x for x in migrations
                      if iso_to_utc(x['created_at']) >= iso_to_utc(since)]
    migrations.sort(key=lambda x: iso_to_utc(x['created_at']), reverse=True)
    status = migrations[0]['status'] if migrations else None
    out = {'status': status, 'host': server.get('OS-EXT-SRV-ATTR:host'),
           # When Nova last saved the record (its compute saves the
           # progress every few seconds while it migrates).
           'updated_at': (migrations[0].get('updated_at') or
                          migrations[0].get('created_at'))
           if migrations else None,
           'server_status': server.get('status'),
           'task_state': server.get('OS-EXT-STS:task_state'),
           'power_state': server.get('OS-EXT-STS:power_state'),
           'migration': migrations[0]['id'] if migrations else None,
           'ended': None, 'reason': None}
    if status in ENDED_OK:
        out['ended'] = 'completed'
    elif status in ENDED_FAILED or (status is None and
                                    out['task_state'] is None):
        out['ended'] = 'failed'
    if out['ended'] == 'failed':
        out['reason'] = _action_reason(adapter, server_id, request_id)
    return out


def server_host(server_id, conf=CONF):
    """The host Nova says the server is on; None: no such server."""
    body = _get(_adapter(conf), '/servers/%s' % server_id, missing=True)
    return None if body is None else body['server'].get(
        'OS-EXT-SRV-ATTR:host')


def _action_reason(adapter, server_id, request_id):
    try:
        if request_id is None:
            actions = [a for a in _get(
                adapter, '/servers/%s/os-instance-actions' % server_id
            )['instanceActions'] if a['action'] == 'live-migration']
            if not actions:
                return None
            request_id = actions[0]['request_id']
        action = _get(adapter, '/servers/%s/os-instance-actions/%s' % (
            server_id, request_id))['instanceAction']
    except exception.ManagerError as e:
        LOG.warning('cannot read why Nova failed: %s', e)
        return None
    failed = [e for e in action.get('events') or []
              if e.get('result') == 'Error']
    reasons = ['%s: %s' % (e['event'], e.get('details') or 'failed')
               for e in failed]
    return '; '.join(reasons) or action.get('message')


def iso_to_utc(text):
    """Nova's times, with or without a zone, comparable as naive UTC."""
    import datetime

    text = text.replace('Z', '+00:00')
    when = datetime.datetime.fromisoformat(text)
    if when.tzinfo is not None:
        when = when.astimezone(datetime.timezone.utc).replace(tzinfo=None)
    return when
