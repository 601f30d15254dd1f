"""The prepare phase, second half: export, consolidate, seal, dispatch.

:class:`Export` writes the group's images to the packed shipments'
devices, :class:`Consolidate` refreshes them to a newer snapshot,
:class:`Seal` seals each shipment (dropping one that carries the images
of a member aborted meanwhile) and :class:`Dispatch` gives the sealed
shipments to their courier. The phase's first half is in
:mod:`fedex_manager.flows.tasks.prepare`.
"""

import time

from oslo_config import cfg

from fedex_manager import couriers
from fedex_manager import custody
from fedex_manager.db import api as db
from fedex_manager.flows.tasks import common
from fedex_manager.flows.tasks import prepare
from fedex_manager import shipments as shipments_mod
from fedex_manager import states
from lsrp import exception

CONF = cfg.CONF


def _engine_params(ctx, members, s):
    devices = db.devices_of(ctx, s['id'])
    return {'shipment_id': s['name'], 'key_ref': s['key_ref'],
            'images': prepare._images_in(ctx, members, s),
            'snapshot': members[0]['base_snapshot'],
            'devices': [d['path'] for d in devices],
            'parity': s['parity']}


def _left_behind(ctx, members, s):
    """Volumes in shipment ``s`` of group migrations no longer packed.

    A migration of the group aborted while the group is packed: its images
    must not travel (the import would bring them to the destination).
    """
    ids = {x['id'] for x in members}
    return [(x, v) for x in shipments_mod.members(ctx, members[0])
            if x['id'] not in ids for v in x['volumes']
            if v['shipment_id'] == s['id']]


def _leave_out(ctx, m, members, s):
    """Take the images of aborted members out of ``s`` before its export."""
    for x, v in _left_behind(ctx, members, s):
        db.volume_update(ctx, v['id'], {'shipment_id': None})
        for kind, ident in (('shipment', s['id']), ('migration', x['id'])):
            db.add_event(ctx, kind, ident, 'custody',
                         '%s left out of shipment %s: migration %s is %s'
                         % (v['source_image'], s['name'], x['id'],
                            x['state']),
                         migration_id=x['id'] if kind == 'migration'
                         else None)


def _drop_shipment(task_, ctx, m, generation, s, why):
    """A loaded shipment given up: devices wiped, key destroyed, ERASED.

    Its images are loose again, to be packed into a new one.
    """
    devices = db.devices_of(ctx, s['id'])
    term = common._terminal(ctx, m['source_terminal_id'])
    if devices:
        task_.op(ctx, m, generation, term['id'], 'erase',
                 '%s.erase.%s' % (s['name'], term['name']),
                 {'devices': [d['path'] for d in devices]})
    custody.destroy_key(ctx, s, why)
    for d in devices:
        if 'erase' in states.DEVICE.events(d['state']):
            d = common.move(ctx, 'device', d['id'], 'erase',
                            message='wiped at %s (%s)' % (term['name'], why))
        if d['state'] == states.D_ERASED:
            common.move(ctx, 'device', d['id'], 'reuse', values={
                'shipment_id': None, 'index_in_set': None})
    db.volumes_unassign(ctx, s['id'])
    if 'erase' in states.SHIPMENT.events(db.get(ctx, 'shipment',
                                                s['id'])['state']):
        common.move(ctx, 'shipment', s['id'], 'erase', event_kind='custody',
                    message='dropped before sealing: %s' % why)


def _export_open(task_, ctx, m, generation, members):
    for s in prepare._open_shipments(ctx, members):
        if s['state'] != states.S_LOADING:
            continue
        if not common._op_exists(ctx, common._shipment_op(s, 'export')):
            _leave_out(ctx, m, members, s)
        elif _left_behind(ctx, members, s):
            # Exported (or cancelled mid-export) with the images of a
            # member aborted since, maybe the leader that began it: Seal
            # drops it and packs the others again.
            continue
        task_.op(ctx, m, generation, m['source_terminal_id'], 'export',
                 common._shipment_op(s, 'export'),
                 _engine_params(ctx, members, s))
        for d in db.devices_of(ctx, s['id']):
            if d['state'] == states.D_ASSIGNED:
                common.move(ctx, 'device', d['id'], 'write')


class Export(prepare.Prepare):
    """Each open shipment of the group: its images at the seed snapshot.

    Images of a member aborted meanwhile are left out (not exported yet)
    or make Seal drop the shipment (exported already).
    """

    def run(self, ctx, m, generation):
        members = prepare._leader_only(ctx, m)
        if members is None or m['state'] != states.EXPORTING:
            return
        _export_open(self, ctx, m, generation, members)
        if m['options'].get('consolidate'):
            for x in members:
                common.advance(ctx, 'migration', x['id'], 'consolidate')


class Consolidate(prepare.Prepare):
    """Refresh the devices to a newer snapshot right before shipping."""

    def run(self, ctx, m, generation):
        members = prepare._leader_only(ctx, m)
        if members is None or m['state'] != states.CONSOLIDATING:
            return
        snap = 'fedex-%s-c1' % common.short(m['id'])
        for s in prepare._open_shipments(ctx, members):
            if s['state'] != states.S_LOADING:
                continue
            params = dict(_engine_params(ctx, members, s), snapshot=snap,
                          create_snapshot=True)
            self.op(ctx, m, generation, m['source_terminal_id'],
                    'consolidate',
                    common._shipment_op(s, 'consolidate'), params)
        for x in members:
            db.update(ctx, 'migration', x['id'], {'base_snapshot': snap,
                                                  'last_snapshot': snap})


class Seal(prepare.Prepare):
    """Seal each loaded shipment, none with an aborted member's images.

    A member aborted after its images were exported: the shipment is
    dropped (devices wiped, key destroyed) and the others' images are
    packed and exported again, without it, before sealing.
    """

    def run(self, ctx, m, generation):
        members = prepare._leader_only(ctx, m)
        if members is None or m['state'] not in (states.EXPORTING,
                                                 states.CONSOLIDATING):
            return
        self._drop_orphans(ctx, m, generation)
        while not self._seal_all(ctx, m, generation):
            self._drop_orphans(ctx, m, generation)
            _, members = prepare._group(ctx, m)
            if m['state'] == states.CONSOLIDATING:
                raise exception.ManagerError(
                    reason='shipment group %s: a member was aborted after '
                    'its consolidation; retry the migration %s to pack and '
                    'export the others again' % (
                        shipments_mod.group_of(m), m['id']))
            prepare.Pack().run(ctx, m, generation)
            # Read again: Pack assigned the images to the new shipment.
            _, members = prepare._group(ctx, m)
            _export_open(self, ctx, m, generation, members)
        for x in prepare._group(ctx, m)[1]:
            x = db.get(ctx, 'migration', x['id'])
            common.advance(ctx, 'migration', x['id'], 'seal',
                           values={'bytes_done': x['bytes_total']})

    def _seal_all(self, ctx, m, generation):
        """Seal the loaded shipments; False if one had to be dropped."""
        _, members = prepare._group(ctx, m)
        for s in prepare._open_shipments(ctx, members):
            if s['state'] != states.S_LOADING:
                continue
            if self._drop_if_left_behind(ctx, m, generation, members, s):
                return False
            result = self.op(ctx, m, generation, m['source_terminal_id'],
                             'seal', common._shipment_op(s, 'seal'),
                             _engine_params(ctx, members, s))
            # An abort during the seal: dropped all the same.
            _, members = prepare._group(ctx, m)
            if self._drop_if_left_behind(ctx, m, generation, members, s):
                return False
            db.transition(ctx, 'shipment', s['id'], 'seal', values={
                'manifest_digest': result['manifest_digest'],
                'seal_digest': result['seal_digest']},
                details={'labels': result['labels']})
            for d in db.devices_of(ctx, s['id']):
                if d['state'] == states.D_WRITTEN:
                    common.move(ctx, 'device', d['id'], 'seal')
        return True

    def _drop_orphans(self, ctx, m, generation):
        """A drop cut short (crash after its images were unassigned)."""
        used = {v['shipment_id'] for x in shipments_mod.members(ctx, m)
                for v in x['volumes']}
        for s in db.list_(ctx, 'shipment', {'state': states.S_LOADING}):
            if s['name'].startswith('fedex-%s-' % common.short(m['id'])) and \
                    s['id'] not in used:
                _drop_shipment(self, ctx, m, generation, s,
                               'its images were packed again')

    def _drop_if_left_behind(self, ctx, m, generation, members, s):
        gone = _left_behind(ctx, members, s)
        if not gone:
            return False
        why = 'it carries %s of migration(s) %s, aborted while the group ' \
            'was packed' % (', '.join(sorted(v['source_image']
                                             for _, v in gone)),
                            ', '.join(sorted({x['id'] for x, _ in gone})))
        self._wait_writers(ctx, m, generation, s)
        db.add_event(ctx, 'migration', m['id'], 'custody',
                     'shipment %s dropped: %s; packing the others again'
                     % (s['name'], why), migration_id=m['id'])
        _drop_shipment(self, ctx, m, generation, s, why)
        return True

    def _wait_writers(self, ctx, m, generation, s):
        """Until no export or consolidation writes ``s``'s devices.

        One begun by a leader aborted since is stopped by its abort (the
        operation ends ERROR); wiping the devices under it would let it
        write into the next shipment's set.
        """
        while any(op and op['state'] not in ('DONE', 'ERROR') for op in (
                common._op_exists(ctx, common._shipment_op(s, kind))
                for kind in ('export', 'consolidate'))):
            time.sleep(CONF.conductor.op_poll_interval)
            common.guard(ctx, m['id'], generation, self.phase, self.allowed)


class Dispatch(prepare.Prepare):
    """Give the sealed shipments to their courier; the flow ends (parks).

    Only once every migration of the group is SEALED.
    """

    def run(self, ctx, m, generation):
        members = prepare._leader_only(ctx, m)
        if members is None:
            return
        waiting = [x['id'] for x in members if x['state'] in (
            states.REQUESTED, states.SNAPSHOTTING, states.EXPORTING,
            states.CONSOLIDATING)]
        if waiting:
            raise exception.ManagerError(
                reason='shipment group %s: %s not sealed yet' % (
                    shipments_mod.group_of(m), ', '.join(waiting)))
        for s in prepare._open_shipments(ctx, members):
            if s['state'] != states.S_SEALED:
                continue
            # Sealed: the source terminal has no more use for the key.
            prepare.restrict_key(ctx, m, s['key_ref'], s['name'],
                                 (m['dest_terminal_id'],),
                                 'sealed: only the destination reads it')
            courier = couriers.get(s['carrier'])
            tracking = courier.dispatch(ctx, s)
            if tracking and tracking != s['tracking_number']:
                db.update(ctx, 'shipment', s['id'],
                          {'tracking_number': tracking})
            for x in members:
                if any(v['shipment_id'] == s['id'] for v in x['volumes']):
                    db.add_event(
                        ctx, 'migration', x['id'], 'custody',
                        'shipment %s sealed, given to courier %s%s; the '
                        'migration waits for its delivery' % (
                            s['name'], s['carrier'],
                            ' (tracking %s)' % tracking if tracking else ''),
                        migration_id=x['id'])
