"""What is known of a snapshot's content, kept with the image.

A record lives in the image's metadata under ``lsrp.snap.<snapshot id>``:
the snapshot's name, the identity of the source snapshot it is an exact
copy of (``source_id``), and its BLAKE3 digest when one was computed. The
key is the snapshot *id*, not its name: a snapshot removed and taken again
under the same name gets a new id, so a record never vouches for content
it did not see. See doc/source/protocol.rst, "Proof of N-1".
"""

import json

PREFIX = 'lsrp.snap.'


def source_id(fsid, image, snapshot):
    """``<fsid>/<image id>/<snapshot id>``: one source snapshot, for ever.

    Snapshots are immutable and their ids are never reused within an image
    (nor image ids within a cluster), so equal ids mean equal content.
    """
    snap_id = image.snapshot_id(snapshot)
    if snap_id is None:
        return None
    return '%s/%s/%d' % (fsid, image.image_id(), snap_id)


def lookup(image, snapshot):
    """The record of user snapshot ``snapshot`` of ``image`` (a dict).

    None when there is none (or the snapshot does not exist).
    """
    snap_id = image.snapshot_id(snapshot)
    if snap_id is None:
        return None
    raw = image.metadata_get(PREFIX + str(snap_id))
    if raw is None:
        return None
    try:
        record = json.loads(raw)
    except ValueError:
        return None
    return record if record.get('name') == snapshot else None


def record(image, snapshot, source=None, digest=None):
    """Record what is known of ``snapshot`` (merged with an older record).

    ``image`` must be open at its head (metadata is written there).
    """
    snap_id = image.snapshot_id(snapshot)
    old = lookup(image, snapshot) or {}
    entry = {'name': snapshot,
             'source': source or old.get('source'),
             'digest': digest or old.get('digest')}
    image.metadata_set(PREFIX + str(snap_id), json.dumps(entry))
    return entry
