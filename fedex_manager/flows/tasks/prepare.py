"""The prepare phase, first half: snapshot and pack (REQUESTED .. EXPORTING).

The phase's base class, the shipment group a migration is prepared with
(its leader does the group's work), :class:`Snapshot` (the seed snapshot
of every image of the group) and :class:`Pack` (shipments with a key and
blank devices). Export, seal and dispatch are in
:mod:`fedex_manager.flows.tasks.seal`.
"""

import time

from oslo_config import cfg
from oslo_log import log as logging

from fedex_manager import cinder
from fedex_manager import custody
from fedex_manager.db import api as db
from fedex_manager.flows.tasks import common
from fedex_manager import keys as keys_mod
from fedex_manager import shipments as shipments_mod
from fedex_manager import states
from lsrp import exception

CONF = cfg.CONF
LOG = logging.getLogger(__name__)


class Prepare(common.PhaseTask):
    phase = 'prepare'
    allowed = (states.REQUESTED, states.SNAPSHOTTING, states.EXPORTING,
               states.CONSOLIDATING, states.SEALED)


class BeginPrepare(common.Begin, Prepare):
    pass


PREPARING = (states.REQUESTED, states.SNAPSHOTTING, states.EXPORTING,
             states.CONSOLIDATING)


def _preparing(x):
    return x['state'] in PREPARING + (states.SEALED,) or (
        x['state'] == states.FAILED and x['failed_in'] in PREPARING)


def _group(ctx, m, group=None):
    """(leader, members) of m's group being prepared (m alone if none).

    The leader is the first member still being prepared: when the first
    is aborted while the group is packed, the next takes over its work
    (the seed snapshot keeps the first's name). A member re-shipped later
    (the others long gone on) packs alone. ``group``: the group's
    migrations (:func:`fedex_manager.shipments.members`), if read already.
    """
    if group is None:
        group = shipments_mod.members(ctx, m)
    members = [x for x in group if x['id'] == m['id'] or _preparing(x)]
    return members[0], members


def working_leader(ctx, m, group=None):
    """m's leader if it is another migration being prepared, else None.

    Then m's prepare phase could only park (:meth:`Snapshot._follow`):
    the leader does the group's work and moves m on to SEALED, and, being
    in a working state itself, has a job or gets one from the sweeper.
    None: m has no group, leads it (its leader aborted: m takes over), or
    its leader is FAILED (or SEALED) and works for nobody now.
    """
    if m['state'] not in PREPARING or not shipments_mod.group_of(m):
        return None
    lead, _ = _group(ctx, m, group)
    if lead['id'] == m['id'] or lead['state'] not in PREPARING:
        return None
    return lead


def _open_shipments(ctx, members):
    """The group's shipments being packed (CREATED, LOADING, SEALED)."""
    sids = {v['shipment_id'] for v in common._group_volumes(members)
            if v['shipment_id']}
    out = [db.get(ctx, 'shipment', sid) for sid in sids]
    return sorted([s for s in out if s['state'] in (
        states.S_CREATED, states.S_LOADING, states.S_SEALED)],
        key=lambda s: s['name'])


def _images_in(ctx, members, s):
    """The images (source specs) of the group that shipment ``s`` carries."""
    return sorted(v['source_image'] for v in common._group_volumes(members)
                  if v['shipment_id'] == s['id'])


class Snapshot(Prepare):
    """The seed snapshot of every image of the group (kept if present).

    The leader of a shipment group does the group's prepare work; the
    others wait here until it has sealed their images (their phase then
    ends: the courier's events move them on).
    """

    def run(self, ctx, m, generation):
        lead, members = _group(ctx, m)
        if lead['id'] != m['id']:
            return self._follow(ctx, m, generation, lead)
        if m['state'] == states.REQUESTED and shipments_mod.group_of(m):
            self._window(ctx, m, generation)
        if m['state'] == states.REQUESTED:
            m = common.step(ctx, m, 'snapshot')
        if m['state'] != states.SNAPSHOTTING:
            return
        # Closed now (the leader left REQUESTED): who joined is in.
        lead, members = _group(ctx, m)
        members = [x for x in members
                   if x['state'] in (states.REQUESTED, states.SNAPSHOTTING)]
        for x in members:
            if x['id'] != m['id']:
                common.advance(ctx, 'migration', x['id'], 'snapshot',
                               message='snapshot with the shipment group %s '
                               '(leader %s)' % (shipments_mod.group_of(m), m['id']))
        # Cinder refuses what would make the copies diverge from now, and
        # Nova keeps users' actions off the servers: a wave's members are
        # told a few at once (common.for_each).
        site = {sid: db.get(ctx, 'site', sid)['name'] for sid in {
            x[k] for x in members for k in ('source_site_id',
                                            'dest_site_id')}}
        common.first_error(common.for_each(
            lambda x: cinder.mark(x, site[x['source_site_id']],
                                  site[x['dest_site_id']]), members))
        common.first_error(common.lock_members(ctx, members))
        snap = common.seed_snapshot(m)
        result = self.op(ctx, m, generation, m['source_terminal_id'],
                         'snapshot', '%s.snapshot' % m['id'],
                         {'images': _specs_of(members), 'snapshot': snap})
        sizes = result.get('sizes') or {}
        for x in members:
            for v in x['volumes']:
                if sizes.get(v['source_image']):
                    db.volume_update(ctx, v['id'], {
                        'size_bytes': sizes[v['source_image']]})
            total = sum(sizes.get(v['source_image'], 0)
                        for v in x['volumes'])
            if len(members) == 1:
                total = result.get('bytes_total') or total
            x = db.get(ctx, 'migration', x['id'])
            if x['state'] == states.SNAPSHOTTING:
                common.advance(ctx, 'migration', x['id'], 'export', values={
                    'base_snapshot': snap, 'last_snapshot': snap,
                    'bytes_total': total or x['bytes_total']})

    def _window(self, ctx, m, generation):
        """Let more migrations join the group for a while after the first.

        Not a group made whole by one request (a wave): none can join it.
        """
        if m['options'].get('shipment_group_closed'):
            return
        created = db.utcfromiso(m['created_at'])
        window = CONF.conductor.shipment_group_window
        announced = False
        while (db.now() - created).total_seconds() < window:
            if not announced:
                db.add_event(ctx, 'migration', m['id'], 'job',
                             'shipment group %s: others may join until %ds '
                             'after this migration was created' % (
                                 shipments_mod.group_of(m), window),
                             migration_id=m['id'])
                announced = True
            time.sleep(1)
            common.guard(ctx, m['id'], generation, self.phase, self.allowed)

    def _follow(self, ctx, m, generation, lead):
        """A follower: the leader packs for the group; this job parks.

        Waiting here held a conductor worker for as long as the leader's
        window, snapshot, export and seal took (a wave of followers held
        them all). Parked, the follower has no job while its leader is
        being prepared: the leader moves it on to SEALED (the courier's
        events then move it on, and this phase finds nothing to do); the
        sweeper leaves it alone meanwhile (:func:`working_leader`), and
        posts this phase again if the leader is aborted or fails.
        """
        if m['state'] not in PREPARING:
            return
        # (A leader aborted meanwhile is no leader: the next follower,
        # posted again by the sweeper, takes the lead, see _group.)
        common.park(ctx, m, generation, self.phase,
                    'shipment group %s: migration %s packs the group\'s '
                    'shipments' % (shipments_mod.group_of(m), lead['id']),
                    kind='job', then='the leader moves it on (a sweep '
                    'posts it again if the leader is aborted or fails)')


def _leader_only(ctx, m):
    lead, members = _group(ctx, m)
    return (members if lead['id'] == m['id'] else None)


def _specs_of(members):
    return [v['source_image'] for x in members for v in x['volumes']]


def restrict_key(ctx, m, key_ref, shipment, terminal_ids, why):
    """The shipment key's ACL: only these terminals (and the manager).

    Each terminal says who it is at the key manager in its heartbeat
    (``key_user_id``). The file store has no per-user access: nothing to
    do. A terminal that did not say is an error: the key would be readable
    by a user nobody named.
    """
    store = keys_mod.get_store()
    if store.user_id() is None:
        return
    users, names = [], []
    for tid in terminal_ids:
        term = common._terminal(ctx, tid)
        user = (term.get('info') or {}).get('key_user_id')
        if not user:
            raise exception.ManagerError(
                reason='terminal %s has not said who it is at the key '
                       'manager (key_user_id in its heartbeat): the key of '
                       'shipment %s cannot be restricted to it' % (
                           term['name'], shipment))
        users.append(user)
        names.append(term['name'])
    store.restrict(key_ref, users)
    db.add_event(ctx, 'migration', m['id'], 'key', 'key of shipment %s '
                 'readable by %s only (and the manager): %s' % (
                     shipment, ', '.join(names), why),
                 migration_id=m['id'])


class Pack(Prepare):
    """Shipments with a key and blank devices at the source terminal.

    The images of the group go into as many shipments as their sizes need
    (device capacity: :func:`fedex_manager.shipments.pack`). Revert: a
    shipment whose export never began gives its devices back and its key
    is destroyed.
    """

    def run(self, ctx, m, generation):
        members = _leader_only(ctx, m)
        if members is None or m['state'] != states.EXPORTING:
            return None
        while True:
            # Read again each time: a duplicate job of this phase may be
            # packing too (it finds the shipments this one made).
            _, members = _group(ctx, m)
            loose = [v for x in members if x['state'] == states.EXPORTING
                     for v in x['volumes'] if not v['shipment_id']]
            if not loose:
                break
            s = self._next_shipment(ctx, m, generation)
            if s is None:
                continue
            devices = db.devices_of(ctx, s['id'])
            bins = shipments_mod.pack(
                loose, shipments_mod.set_capacity(devices, s['parity']))
            for v in bins[0]:
                db.volume_update(ctx, v['id'], {'shipment_id': s['id']})
            db.add_event(ctx, 'shipment', s['id'], 'custody',
                         'packed: %s' % ', '.join(sorted(
                             v['source_image'] for v in bins[0])))
        _, members = _group(ctx, m)
        out = []
        for s in _open_shipments(ctx, members):
            if s['state'] == states.S_CREATED:
                s = db.transition(ctx, 'shipment', s['id'], 'load')
            out.append(s['id'])
        return out

    def _next_shipment(self, ctx, m, generation):
        """An empty shipment of ours left by a crash, or a new one."""
        prefix = 'fedex-%s-' % common.short(m['id'])
        ours = [s for s in db.list_(ctx, 'shipment',
                                    {'state': states.S_CREATED})
                if s['name'].startswith(prefix)]
        used = {v['shipment_id'] for x in db.list_(ctx, 'migration')
                for v in x['volumes']}
        for s in sorted(ours, key=lambda s: s['name']):
            if s['id'] not in used:
                # A crash between its creation and its devices' claim
                # leaves it without (some of) them.
                self._claim(ctx, m, generation, s)
                return s
        return self._new(ctx, m, generation)

    def _new(self, ctx, m, generation):
        """A new shipment with its devices, or None if another flow won."""
        parity = m['options'].get('parity', 1)
        want = max(2, parity + 2)
        term = common._terminal(ctx, m['source_terminal_id'])
        while True:
            blank = db.list_(ctx, 'device', {
                'terminal_id': term['id'], 'state': states.D_BLANK},
                sort_key='slot', sort_dir='asc')
            if len(blank) >= want:
                break
            self._park(ctx, m, generation, 'waiting for %d blank devices '
                       'at %s (%d there)' % (want, term['name'],
                                             len(blank)))
        n = 1 + len(db.list_(ctx, 'shipment',
                             {'source_terminal_id': m['source_terminal_id']}))
        name = 'fedex-%s-%d' % (common.short(m['id']), n)
        key_ref = keys_mod.get_store().create(name)
        try:
            restrict_key(ctx, m, key_ref, name, (
                m['source_terminal_id'], m['dest_terminal_id']),
                'the source writes the devices, the destination reads them')
            s = db.create(ctx, 'shipment', dict(
                name=name, state=states.S_CREATED, key_ref=key_ref,
                source_site_id=m['source_site_id'],
                dest_site_id=m['dest_site_id'],
                source_terminal_id=m['source_terminal_id'],
                dest_terminal_id=m['dest_terminal_id'], parity=parity,
                carrier=m['options'].get('carrier') or
                CONF.conductor.courier,
                base_snapshot=m['base_snapshot']),
                event_message='created for migration %s with key %s'
                % (m['id'], key_ref))
        except exception.Conflict as e:
            keys_mod.get_store().delete(key_ref)
            LOG.info('%s: packing again', e)
            return None
        except Exception:
            keys_mod.get_store().delete(key_ref)
            raise
        self._claim(ctx, m, generation, s)
        return s

    def _claim(self, ctx, m, generation, s):
        """Blank devices of the source terminal for ``s``, all or none.

        Migrations packed at once at one terminal (other conductors,
        other threads) race for the same blank devices: each is taken by
        a compare-and-swap BLANK -> ASSIGNED; one another took first is
        skipped. Short of devices, those taken are given back (no two
        shipments each holding half of what both need) and the task waits
        for more, with an event.
        """
        want = max(2, s['parity'] + 2)
        term = common._terminal(ctx, m['source_terminal_id'])
        while True:
            have = db.devices_of(ctx, s['id'])
            for d in db.list_(ctx, 'device', {
                    'terminal_id': term['id'], 'state': states.D_BLANK},
                    sort_key='slot', sort_dir='asc'):
                if len(have) >= want:
                    break
                try:
                    db.transition(ctx, 'device', d['id'], 'assign',
                                  expect=states.D_BLANK, values={
                                      'shipment_id': s['id'],
                                      'index_in_set': len(have)})
                except (exception.InvalidTransition, exception.Conflict):
                    continue        # another shipment took it first
                have.append(d)
            if len(have) >= want:
                return
            for d in have:
                db.transition(ctx, 'device', d['id'], 'erase',
                              message='given back: %s needs %d devices'
                              % (s['name'], want))
                db.transition(ctx, 'device', d['id'], 'reuse', values={
                    'shipment_id': None, 'index_in_set': None})
            self._park(ctx, m, generation, 'waiting for %d blank devices '
                       'at %s' % (want, term['name']))

    def _park(self, ctx, m, generation, why):
        common.park(ctx, m, generation, self.phase, why)

    def revert(self, migration_id, generation, result=None, *a, **kw):
        if not isinstance(result, list):
            return
        ctx = common._ctx()
        for sid in result:
            s = db.get(ctx, 'shipment', sid)
            if s['state'] not in (states.S_CREATED, states.S_LOADING):
                continue
            ops = db.list_(ctx, 'operation', {'kind': 'export'})
            if any(o['id'] == common._shipment_op(s, 'export') for o in ops):
                continue    # devices hold data: kept for the retry
            for d in db.devices_of(ctx, s['id']):
                db.transition(ctx, 'device', d['id'], 'erase')
                db.transition(ctx, 'device', d['id'], 'reuse',
                              values={'shipment_id': None,
                                      'index_in_set': None})
            custody.destroy_key(ctx, s, 'export never began')
            db.transition(ctx, 'shipment', s['id'], 'erase')
            db.volumes_unassign(ctx, s['id'])
