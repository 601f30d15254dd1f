"""How Cinder knows that a volume is in a FedEx migration.

The mark is Cinder *admin metadata* of the volume, set and cleared only by
the ``os-fedex-*`` admin actions (cinder_fedex.api.contrib.fedex), i.e. by
the manager:

* ``fedex_migration``: id of the FedEx migration that ships the volume;
* after the ownership move, ``fedex_prev_host``, ``fedex_prev_cluster``,
  ``fedex_prev_service_uuid`` and ``fedex_prev_az``: where to move it back.

Why admin metadata and not RBD image metadata: cinder-api sees it (an
extend, retype, revert or delete is refused there with a 409 before any
state changes, instead of failing later in the driver and leaving the volume
in error_extending or error_deleting); a project member cannot change it
(user metadata they can); it moves with the volume record to the site-B
backend; and reading it costs no connection to a Ceph cluster.
"""

MIGRATION = 'fedex_migration'
PREV_HOST = 'fedex_prev_host'
PREV_CLUSTER = 'fedex_prev_cluster'
PREV_SERVICE = 'fedex_prev_service_uuid'
PREV_AZ = 'fedex_prev_az'
PREVIOUS = (PREV_HOST, PREV_CLUSTER, PREV_SERVICE, PREV_AZ)

# Operations that would make the two sites' copies diverge while shipping.
GUARDED = ('extend', 'revert to snapshot', 'retype', 'delete')


def admin_metadata(volume):
    """The volume's admin metadata as a dict (objects or DB rows)."""
    meta = getattr(volume, 'admin_metadata', None)
    if meta is None:
        items = getattr(volume, 'volume_admin_metadata', None) or []
        return {i['key']: i['value'] for i in items}
    return dict(meta)


def migration_of(volume):
    """Id of the FedEx migration shipping ``volume``, or None."""
    return admin_metadata(volume).get(MIGRATION)
