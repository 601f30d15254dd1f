"""Which migrations share shipments, and which images go in which shipment.

A *shipment group* is the migrations created with the same option
``shipment_group`` (a label), between the same two terminals: a flock of
clones travels in one set of shipments, and the exporter's chunk dedup
stores what the clones share once. Its *leader* (the first created) does
the group's work at the source: one seed snapshot of every image, the
packing, the exports, the seals and the hand-over to the courier; the
others' prepare phases wait for it. A migration without a group is a
group of one, its own leader: everything below then does what a single
migration did before groups existed (same snapshot, shipment and
operation names).

Packing: the images go into shipments by size (first fit, largest first)
so that each shipment's data fits the capacity of its device set
(data devices x the smallest device's capacity); images that do not fit
one device set together span several shipments.
"""

from fedex_manager import custody
from fedex_manager.db import api as db
from fedex_manager import states
from lsrp import exception

# States in which a migration still needs its shipments' devices (their
# data is not imported yet).
NEEDS_DEVICES = (states.REQUESTED, states.SNAPSHOTTING, states.EXPORTING,
                 states.CONSOLIDATING, states.SEALED, states.IN_TRANSIT,
                 states.DELIVERED, states.IMPORTING)


def short(migration_id):
    return migration_id.split('-')[0]


def group_of(m):
    return (m.get('options') or {}).get('shipment_group')


def members(ctx, m):
    """The migrations of ``m``'s group, oldest first (``m`` alone if none).

    Aborted and cleaned ones stay members: their names are in the group's
    snapshots and shipments.
    """
    group = group_of(m)
    if not group:
        return [db.get(ctx, 'migration', m['id'])]
    out = [x for x in db.list_(ctx, 'migration')
           if group_of(x) == group and
           x['source_terminal_id'] == m['source_terminal_id']]
    return sorted(out, key=lambda x: (x['created_at'], x['id']))


def leader(ctx, m):
    return members(ctx, m)[0]


def seed_snapshot(ctx, m):
    """The group's seed snapshot name (its leader's)."""
    return 'fedex-%s-seed' % short(leader(ctx, m)['id'])


def snapshot_prefixes(ctx, m):
    """Name prefixes of the snapshots the manager made on m's images.

    With the final state's (nova_fedex names it ``fedex-final-<id>``: a
    snapshot at A, a record image ``<image>.fedex-final-<id>`` at B).
    """
    return sorted({'fedex-%s-' % short(m['id']),
                   'fedex-%s-' % short(leader(ctx, m)['id']),
                   'fedex-final-%s' % short(m['id'])})


def group_route(ctx, group):
    """(source, destination) terminal ids of a group's members, or None.

    Those of a member not finished: a newcomer that names no terminal
    travels with them (the least busy terminals of a site with several
    could be others, which :func:`check_join` refuses).
    """
    for x in db.list_(ctx, 'migration'):
        if group_of(x) == group and x['state'] not in \
                states.MIGRATION_FINAL:
            return x['source_terminal_id'], x['dest_terminal_id']
    return None


def check_join(ctx, group, source_terminal_id, dest_terminal_id,
               same_request=False):
    """Refuse a new member of a group that is packed already.

    Or that travels between other terminals, or that was made whole by one
    request (a wave; ``same_request``: the newcomer is of that request).
    """
    for x in db.list_(ctx, 'migration'):
        if group_of(x) != group or x['state'] in states.MIGRATION_FINAL:
            continue
        if (x['source_terminal_id'], x['dest_terminal_id']) != (
                source_terminal_id, dest_terminal_id):
            raise exception.InvalidInput(
                field='options.shipment_group', reason='group %s travels '
                'between other terminals (migration %s); one group, one '
                'route' % (group, x['id']))
        if x['options'].get('shipment_group_closed') and not same_request:
            raise exception.InvalidInput(
                field='options.shipment_group', reason='group %s was made '
                'whole by one request (a wave): use another label' % group)
        if x['state'] != states.REQUESTED:
            raise exception.InvalidInput(
                field='options.shipment_group', reason='group %s is packed '
                'already (migration %s is %s): use another label'
                % (group, x['id'], x['state']))


def still_needed(ctx, shipment_id, but=None):
    """Migrations other than ``but`` that still need the shipment's data."""
    return [x for x in custody.migrations_of(ctx, shipment_id)
            if x['id'] != but and (
                x['state'] in NEEDS_DEVICES or
                x['state'] == states.FAILED and
                x['failed_in'] in NEEDS_DEVICES)]


def set_capacity(devices, parity):
    """Bytes of data a device set holds; None: unknown (no limit)."""
    sizes = [d['capacity_bytes'] or 0 for d in devices]
    if not sizes or min(sizes) <= 0:
        return None
    return min(sizes) * (len(sizes) - parity)


def pack(volumes, capacity):
    """[[volume, ...], ...]: bins of volumes that each fit ``capacity``.

    First fit, largest first; ``capacity`` None puts all in one. An image
    larger than a whole device set is refused, naming it.
    """
    if capacity is None:
        return [list(volumes)] if volumes else []
    bins = []
    for v in sorted(volumes, key=lambda x: (-x['size_bytes'],
                                            x['source_image'])):
        if v['size_bytes'] > capacity:
            raise exception.ManagerError(
                reason='image %s (%d bytes) does not fit one device set '
                '(%d bytes of data); plug in larger devices'
                % (v['source_image'], v['size_bytes'], capacity))
        for b in bins:
            if sum(x['size_bytes'] for x in b) + v['size_bytes'] <= capacity:
                b.append(v)
                break
        else:
            bins.append([v])
    return bins
