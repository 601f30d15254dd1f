"""Marking a volume as shipped, and moving its ownership between sites.

A FedEx migration copies a volume's data to the peer site's cluster; Cinder
only has to learn that the volume now belongs to the peer site's backend.
Stock Cinder cannot re-home an in-use volume without copying it, so this
module does it on the volume record, for volumes marked by the manager:

* :func:`mark` / :func:`unmark`: the migration id, the volume's site, the
  peer site and the peer backend (admin metadata, see cinder_fedex.marks);
* :func:`cutover`: ``host``, ``cluster_name``, ``service_uuid`` and
  ``availability_zone`` become the peer backend's, in one compare-and-swap
  update, after the previous values are recorded;
* :func:`revert`: the same update backwards, from the recorded values.

Both are idempotent: a repeated call finds the volume already moved (or
back) and changes nothing. :func:`reconcile` decides from where the volume
is attached (the site in the connector of its attachments) whether a
cutover or a revert was lost in a crash, for cinder-fedex-reconcile.
"""

from cinder import exception as cinder_exception
from cinder import objects
from cinder.volume import volume_utils

from cinder_fedex import marks
from lsrp import exception

SITE = 'fedex_site'
PEER_SITE = 'fedex_peer_site'
PEER_HOST = 'fedex_peer_host'
MARK_KEYS = (marks.MIGRATION, SITE, PEER_SITE, PEER_HOST)
STATUSES = ('available', 'in-use')


def _invalid(volume, reason):
    return cinder_exception.InvalidVolume(
        reason='volume %s: %s' % (volume.id, reason))


def _update_admin_metadata(volume, values):
    meta = marks.admin_metadata(volume)
    meta.update(values)
    volume.admin_metadata_update(meta, delete=False)


def _delete_admin_metadata(context, volume, keys):
    from cinder.db import api as db

    meta = marks.admin_metadata(volume)
    for key in keys:
        if key in meta:
            db.volume_admin_metadata_delete(context.elevated(), volume.id,
                                            key)
            meta.pop(key)
    volume.admin_metadata = meta
    volume.obj_reset_changes(['admin_metadata'])


def mark(context, volume, migration, site, peer_site, peer_host):
    meta = marks.admin_metadata(volume)
    current = meta.get(marks.MIGRATION)
    if current and current != migration:
        raise _invalid(volume, 'already in FedEx migration %s' % current)
    if volume.status not in STATUSES:
        raise _invalid(volume, 'status %s (must be available or in-use)'
                       % volume.status)
    if volume.multiattach:
        raise _invalid(volume, 'a multiattach volume cannot be shipped')
    if volume.encryption_key_id:
        raise _invalid(volume, 'an encrypted volume cannot be shipped by '
                       'this version')
    _update_admin_metadata(volume, {
        marks.MIGRATION: migration, SITE: site, PEER_SITE: peer_site,
        PEER_HOST: peer_host})
    return volume


def unmark(context, volume):
    """The migration ended (or was aborted): normal volume again."""
    _delete_admin_metadata(context, volume, MARK_KEYS + marks.PREVIOUS)
    return volume


def cutover(context, volume, host=None):
    """Make the peer backend (or ``host``) the owner of ``volume``."""
    meta = marks.admin_metadata(volume)
    migration = meta.get(marks.MIGRATION)
    if not migration:
        raise _invalid(volume, 'not in a FedEx migration (os-fedex-mark)')
    if marks.PREV_HOST in meta:
        return volume                  # moved already
    host = host or meta.get(PEER_HOST)
    if not host:
        raise _invalid(volume, 'no peer backend to move to')
    backend = volume_utils.extract_host(host, 'backend')
    try:
        service = objects.Service.get_by_args(context, backend,
                                              'cinder-volume')
    except cinder_exception.ServiceNotFound:
        raise _invalid(volume, 'no cinder-volume service %s' % backend)
    if volume_utils.extract_host(volume.host, 'backend') == backend:
        raise _invalid(volume, 'already on backend %s' % backend)
    _update_admin_metadata(volume, {
        marks.PREV_HOST: volume.host,
        marks.PREV_CLUSTER: volume.cluster_name or '',
        marks.PREV_SERVICE: volume.service_uuid or '',
        marks.PREV_AZ: volume.availability_zone or '',
        SITE: meta.get(PEER_SITE, ''), PEER_SITE: meta.get(SITE, '')})
    moved = volume.conditional_update(
        {'host': host, 'cluster_name': service.cluster_name,
         'service_uuid': service.uuid,
         'availability_zone': service.availability_zone},
        {'host': volume.host, 'status': STATUSES})
    if not moved:
        _delete_admin_metadata(context, volume, marks.PREVIOUS)
        _update_admin_metadata(volume, {SITE: meta.get(SITE, ''),
                                        PEER_SITE: meta.get(PEER_SITE, '')})
        raise _invalid(volume, 'changed while it was being moved (status '
                       'must be available or in-use); try again')
    return volume


def revert(context, volume):
    """Undo :func:`cutover` (the cutover rolled back)."""
    meta = marks.admin_metadata(volume)
    if marks.PREV_HOST not in meta:
        return volume                  # never moved, or back already
    moved = volume.conditional_update(
        {'host': meta[marks.PREV_HOST],
         'cluster_name': meta.get(marks.PREV_CLUSTER) or None,
         'service_uuid': meta.get(marks.PREV_SERVICE) or None,
         'availability_zone': meta.get(marks.PREV_AZ) or None},
        {'host': volume.host})
    if not moved:
        raise _invalid(volume, 'changed while it was being moved back; '
                       'try again')
    _delete_admin_metadata(context, volume, marks.PREVIOUS)
    _update_admin_metadata(volume, {SITE: meta.get(PEER_SITE, ''),
                                    PEER_SITE: meta.get(SITE, '')})
    return volume


def attached_sites(volume):
    """Sites (from Nova's connectors) where ``volume`` is attached."""
    sites = set()
    for attachment in volume.volume_attachment or ():
        if attachment.attach_status != 'attached':
            continue
        connector = attachment.connector or {}
        sites.add(connector.get(SITE, '?'))
    return sites


def reconcile(context, volume):
    """What to do so that the owner is the site the volume is used at.

    Returns 'cutover', 'revert' or None. A volume attached at its peer site
    only (the server's cutover went through, the ownership move was lost)
    needs a cutover; one flipped while attached at its previous site only
    (the cutover rolled back, the revert was lost) needs a revert.
    """
    meta = marks.admin_metadata(volume)
    if not meta.get(marks.MIGRATION):
        return None
    sites = attached_sites(volume)
    if sites == {meta.get(PEER_SITE)}:
        return 'revert' if marks.PREV_HOST in meta else 'cutover'
    return None


def refuse_if_shipped(volume, operation):
    """Raise VolumeInMigration (409 in the API) for a guarded operation."""
    migration = marks.migration_of(volume)
    if migration:
        raise exception.VolumeInMigration(volume=volume.id,
                                          migration=migration,
                                          operation=operation)
