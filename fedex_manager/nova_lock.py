"""Servers locked in Nova while their migration runs.

With ``[conductor] compute_driver = nova`` the manager locks every server
of a migration when its first phase starts (compute API 2.73, with a
``locked_reason`` naming the migration), so that its owner cannot resize,
rebuild, snapshot or delete it while its disks move, and unlocks it when
the migration ends: COMPLETED, ABORTED, or a FAILED migration that the
operator aborts. Nova lets an admin live-migrate a locked server (the
manager's cutover runs as admin), so the cutover itself is not stopped by
the lock.

Only our own lock is undone: a server its owner locked before the
migration keeps that lock (and its reason). A server deleted anyway
(an admin may delete a locked server) is found by the conductor's sweeper
(:func:`gone`): the migration is aborted and cleaned up.
"""

from oslo_config import cfg
from oslo_log import log as logging

from fedex_manager import nova
from lsrp import exception

CONF = cfg.CONF
LOG = logging.getLogger(__name__)
# locked_reason arrived in 2.73.
MICROVERSION = '2.73'
HEADERS = {'OpenStack-API-Version': 'compute %s' % MICROVERSION,
           'X-OpenStack-Nova-API-Version': MICROVERSION}
REASON = 'FedEx migration %s: moving to site %s; unlocked when it ends'


def enabled():
    return CONF.conductor.compute_driver == 'nova'


def reason(migration_id, dest_site):
    return REASON % (migration_id, dest_site)


def _server(adapter, server_id):
    """The server (2.73: ``locked``, ``locked_reason``), None if gone."""
    resp = adapter.get('/servers/%s' % server_id, raise_exc=False,
                       headers=HEADERS)
    if resp.status_code == 404:
        return None
    if resp.status_code != 200:
        raise exception.ManagerError(
            reason='Nova answered GET /servers/%s with HTTP %d %s' % (
                server_id, resp.status_code, resp.text[:300]))
    return resp.json()['server']


def _action(adapter, server_id, body):
    resp = adapter.post('/servers/%s/action' % server_id, json=body,
                        raise_exc=False, headers=HEADERS)
    if resp.status_code not in (202, 204):
        raise exception.ManagerError(
            reason='Nova answered %s of server %s with HTTP %d %s' % (
                next(iter(body)), server_id, resp.status_code,
                resp.text[:300]))


def lock(server_ids, why, conf=CONF):
    """Lock each server with ``why``; {server_id: what happened}.

    Idempotent (taskflow re-runs a task cut short): a server already
    locked with ``why`` is left; one locked for another reason keeps its
    owner's lock, and is not unlocked by :func:`unlock` either.
    """
    adapter = nova._adapter(conf)
    servers = {sid: _server(adapter, sid) for sid in server_ids}
    missing = sorted(sid for sid, x in servers.items() if x is None)
    if missing:
        # Checked before any lock: nothing half-done.
        raise exception.ManagerError(
            reason='server %s is not in Nova: it cannot be migrated' %
            ', '.join(missing))
    out = {}
    for sid in server_ids:
        server = servers[sid]
        if server.get('locked'):
            out[sid] = ('locked' if server.get('locked_reason') == why
                        else 'already locked: %s' % (
                            server.get('locked_reason') or 'no reason'))
            continue
        _action(adapter, sid, {'lock': {'locked_reason': why}})
        out[sid] = 'locked'
        LOG.info('server %s locked: %s', sid, why)
    return out


def unlock(server_ids, why, conf=CONF):
    """Undo our lock of each server; {server_id: what happened}.

    Never raises for one server: a migration that ends must end (what
    failed is returned, for the migration's events).
    """
    adapter = nova._adapter(conf)
    out = {}
    for sid in server_ids:
        try:
            server = _server(adapter, sid)
            if server is None:
                out[sid] = 'gone'
            elif not server.get('locked'):
                out[sid] = 'not locked'
            elif server.get('locked_reason') != why:
                out[sid] = 'kept: locked by someone else (%s)' % (
                    server.get('locked_reason') or 'no reason')
            else:
                _action(adapter, sid, {'unlock': None})
                out[sid] = 'unlocked'
                LOG.info('server %s unlocked', sid)
        except Exception as e:
            LOG.error('server %s not unlocked: %s', sid, e)
            out[sid] = 'not unlocked: %s' % e
    return out


def gone(server_ids, conf=CONF):
    """The servers Nova no longer has, or is deleting (deleted while locked).

    A server in task "deleting": its user asked for the deletion, as
    Nova's ``instance.delete.start`` says. Its compute may take a minute
    to end it (killed under it, it starts again at its restart).
    """
    adapter = nova._adapter(conf)
    out = []
    for sid in server_ids:
        server = _server(adapter, sid)
        if server is None or \
                server.get('OS-EXT-STS:task_state') == 'deleting':
            out.append(sid)
    return out
