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
RECORD_MARK = '.' + PREFIX


def release(pool, server_id):
    """Remove FedEx's records and snapshots of ``server_id``'s disks.

    Only of disks with a record, which are at the destination of a cutover:
    at the source of a migration still running, the snapshots are that
    migration's, and its abort (the server deleted) removes them. Returns
    what was removed (``pool/image@snapshot``, ``pool/record``).
    """
    names = [n for n in pool.list_images() if n.startswith(server_id)]
    disks = sorted({n.split(RECORD_MARK, 1)[0] for n in names
                    if RECORD_MARK in n})
    removed = []
    for disk in disks:
        removed += records.remove_with_snapshots(pool, disk, (PREFIX,))
    return removed
