"""A migrated server's disks, freed of FedEx's copies before Nova removes them.

After a cutover the server's disks at the destination keep the migration's
snapshots (``fedex-*``) and the records of its final state (clones named
``<disk>.fedex-*``: ``lsrp.server.records``) until the migration is cleaned
up, when its retention ends (7 days by default). Nova's removal of an image
with snapshots retries it 12 times, 5 s apart, then gives up without an
error: a server deleted meanwhile took 110 s to delete (two images: the
disk and its record) and left its disk behind at the destination for good
(the migration's cleanup later removes only its own snapshots). The
libvirt driver calls :func:`release` just before Nova's removal.
"""

from lsrp.server import records

PREFIX = 'fedex-'


def release(pool, server_id):
    """Remove FedEx's records and snapshots of ``server_id``'s disks.

    Only of disks with a record, which are at the destination of a cutover
    (:func:`lsrp.server.records.release_recorded`). Returns what was
    removed.
    """
    return records.release_recorded(pool, server_id, PREFIX)
