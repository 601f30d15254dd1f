"""The manager's calls to Cinder: the mark and the ownership move of volumes.

A migration's images that are Cinder volumes (``volume_id`` set, kind
``volume``) are marked with cinder_fedex's ``os-fedex-mark`` admin action
before their snapshot (Cinder then refuses extend, revert to snapshot,
retype and delete, naming the migration, and answers a destination compute
with the peer cluster's connection info); at the end of the cutover
``os-fedex-cutover`` hands each one to the destination site's backend and
``os-fedex-unmark`` makes it an ordinary site-B volume; an abort unmarks
them at the source. See doc/source/cinder.rst.

The destination backend is found in Cinder itself: the pool whose
capabilities say ``fedex_site`` = the destination site (FedexRBDDriver
reports it). Credentials: the ``[cinder]`` group (keystoneauth options).
"""

from oslo_config import cfg
from oslo_log import log as logging

from fedex_manager import service_auth
from lsrp import exception

CONF = cfg.CONF
LOG = logging.getLogger(__name__)
GROUP = 'cinder'


def register_opts(conf):
    service_auth.register_opts(conf, GROUP, 'block-storage')


def list_opts():
    return service_auth.list_opts()


def cinder_volumes(m):
    """The migration's images that are Cinder volumes."""
    return [v for v in m['volumes']
            if v.get('volume_id') and v.get('kind', 'volume') == 'volume']


def _adapter(conf=CONF):
    return service_auth.adapter(
        conf, GROUP, missing='the migration ships Cinder volumes but the '
        'manager has no [cinder] credentials (keystoneauth options)')


def _post(adapter, volume_id, action, args):
    return adapter.post('/volumes/%s/action' % volume_id, raise_exc=False,
                        json={action: args})


def _refused(resp, volume_id, action):
    return exception.ManagerError(
        reason='Cinder refused %s of volume %s: HTTP %d %s' % (
            action, volume_id, resp.status_code, resp.text[:300]))


def _action(adapter, volume_id, action, args):
    resp = _post(adapter, volume_id, action, args)
    if resp.status_code != 202:
        raise _refused(resp, volume_id, action)


def backend_of_site(adapter, site):
    """host@backend#pool of the cinder-volume backend of ``site``."""
    resp = adapter.get('/scheduler-stats/get_pools?detail=true',
                       raise_exc=False)
    if resp.status_code != 200:
        raise exception.ManagerError(
            reason='Cinder did not list its backends: HTTP %d %s' % (
                resp.status_code, resp.text[:300]))
    found = sorted(p['name'] for p in resp.json().get('pools', [])
                   if (p.get('capabilities') or {}).get('fedex_site') == site)
    if not found:
        raise exception.ManagerError(
            reason='no Cinder backend reports fedex_site = %s (its '
                   'FedexRBDDriver backend must be up)' % site)
    return found[0]


def mark(m, source_site, dest_site, conf=CONF):
    """Mark the migration's volumes (idempotent for the same migration).

    ``source_site`` and ``dest_site`` are site names (as the computes'
    ``[fedex] site`` and the backends' ``fedex_site``).
    """
    vols = cinder_volumes(m)
    if not vols:
        return
    adapter = _adapter(conf)
    peer = backend_of_site(adapter, dest_site)
    for v in vols:
        _action(adapter, v['volume_id'], 'os-fedex-mark', {
            'migration': m['id'], 'site': source_site,
            'peer_site': dest_site, 'peer_host': peer})
        LOG.info('volume %s marked for migration %s (peer backend %s)',
                 v['volume_id'], m['id'], peer)


def _backend(host):
    """host@backend of Cinder's host@backend#pool."""
    return (host or '').partition('#')[0]


def _at_site(adapter, volume_id, site):
    """True if the volume belongs to ``site``'s backend already."""
    resp = adapter.get('/volumes/%s' % volume_id, raise_exc=False)
    if resp.status_code != 200:
        return False
    host = resp.json()['volume'].get('os-vol-host-attr:host')
    return bool(host) and _backend(host) == _backend(
        backend_of_site(adapter, site))


def cutover(m, dest_site=None, conf=CONF):
    """The destination backend owns the volumes; they are ordinary again.

    Returns the ids of the volumes this call moved. Idempotent: a volume
    already moved and unmarked (the cutover's end reported twice, by
    nova_fedex and by the conductor's read-back of Nova's records) is
    found at ``dest_site``'s backend and left as it is, not an error.
    """
    vols = cinder_volumes(m)
    if not vols:
        return []
    adapter = _adapter(conf)
    moved = []
    for v in vols:
        vid = v['volume_id']
        resp = _post(adapter, vid, 'os-fedex-cutover', {})
        if resp.status_code == 409 and dest_site and _at_site(
                adapter, vid, dest_site):
            # Unmarked already: cinder_fedex answers "not in a FedEx
            # migration" for a volume whose move is over.
            LOG.info('volume %s already belongs to site %s', vid, dest_site)
            continue
        if resp.status_code != 202:
            raise _refused(resp, vid, 'os-fedex-cutover')
        _action(adapter, vid, 'os-fedex-unmark', {})
        LOG.info('volume %s now belongs to the destination site', vid)
        moved.append(vid)
    return moved


def unmark(m, conf=CONF):
    """The migration was aborted: the volumes stay at the source."""
    vols = cinder_volumes(m)
    if not vols:
        return
    adapter = _adapter(conf)
    for v in vols:
        _action(adapter, v['volume_id'], 'os-fedex-revert', {})
        _action(adapter, v['volume_id'], 'os-fedex-unmark', {})
