"""The tasks of the migration phases.

Every task is idempotent: taskflow re-runs the task that was in flight
when a conductor died, so each one first looks at what is already done
(the migration's state, the shipment's, the terminal's operation record)
and only does the rest. Terminal work goes through :func:`run_op`, whose
operation id is fixed by the migration, so a re-run finds the operation
the dead conductor started instead of starting a second one.

A task whose migration moved on (aborted, or its phase posted again with
a newer generation) raises :class:`Superseded`; the phase then ends
without marking anything failed.
"""

import threading
import time

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging
from taskflow import task
import tenacity

from lsrp import exception
from lsrp.manager import cinder
from lsrp.manager import context as context_mod
from lsrp.manager import couriers
from lsrp.manager import custody
from lsrp.manager.db import api as db
from lsrp.manager import jobs
from lsrp.manager import keys as keys_mod
from lsrp.manager import options as options_mod
from lsrp.manager import rpc
from lsrp.manager import shipments as shipments_mod
from lsrp.manager import states

CONF = cfg.CONF
LOG = logging.getLogger(__name__)


class Superseded(exception.ManagerError):
    message = ('migration %(id)s: phase %(phase)s generation %(generation)s'
               ' superseded (%(reason)s)')


class Parked(Superseded):
    """The phase waits for the outside world without holding a conductor.

    Its job ends (nothing failed); the migration keeps its state with no
    job, and a conductor's sweeper posts the phase again.
    """
    message = ('migration %(id)s: phase %(phase)s parked: %(reason)s; '
               'a sweep posts it again')


def _ctx():
    return context_mod.admin('conductor')


def short(migration_id):
    return migration_id.split('-')[0]


def seed_snapshot(m):
    """The seed snapshot a leader (or a migration alone) takes."""
    return 'fedex-%s-seed' % short(m['id'])


def _terminal(ctx, terminal_id):
    return db.get(ctx, 'terminal', terminal_id)


def _specs(m):
    return [v['source_image'] for v in m['volumes']]


def guard(ctx, migration_id, generation, phase, allowed=None):
    """The migration, or Superseded if it moved on from this phase."""
    try:
        m = db.get(ctx, 'migration', migration_id)
    except exception.NotFound:
        raise Superseded(id=migration_id, phase=phase, generation=generation,
                         reason='deleted')
    if m['generation'] != generation:
        raise Superseded(id=migration_id, phase=phase, generation=generation,
                         reason='now generation %s' % m['generation'])
    if allowed is not None and m['state'] not in allowed:
        raise Superseded(id=migration_id, phase=phase, generation=generation,
                         reason='state is %s' % m['state'])
    return m


def step(ctx, m, event, **kw):
    """Apply ``event`` unless the migration is already past it."""
    new = states.MIGRATION.events(m['state']).get(event)
    if new is None:
        return m
    return db.transition(ctx, 'migration', m['id'], event, **kw)


# op id -> Event set when the terminal's report of its end reaches this
# process (ManagerEndpoint.finished): the waiter wakes at once instead of
# at its next look. Reports that reach another conductor are seen at the
# next look (op_poll_interval).
_ended = {}
_ended_lock = threading.Lock()


def op_ended(op_id):
    with _ended_lock:
        event = _ended.get(op_id)
    if event is not None:
        event.set()


def move(ctx, kind, ident, event, **kw):
    """``db.transition``, where a twin that did it first is no failure.

    A phase re-posted by the sweeper (its post looked lost) runs beside its
    stale twin until the twin's next guard: both may apply the same event.
    """
    try:
        return db.transition(ctx, kind, ident, event, **kw)
    except (exception.Conflict, exception.InvalidTransition):
        row = db.get(ctx, kind, ident)
        if row['state'] == states.MACHINES[kind]._target_of(event):
            return row
        raise


def run_op(ctx, m, generation, phase, terminal_id, kind, op_id, params,
           allowed=None):
    """Start (or find) an operation on a terminal and wait for its end.

    Holds this conductor's thread while the terminal works (minutes to
    hours of export or import): never across a courier's days. A terminal
    that does not answer is waited for, with an event saying so.
    """
    event = threading.Event()
    with _ended_lock:
        _ended[op_id] = event
    try:
        return _run_op(ctx, m, generation, phase, terminal_id, kind, op_id,
                       params, allowed, event)
    finally:
        with _ended_lock:
            _ended.pop(op_id, None)


def _run_op(ctx, m, generation, phase, terminal_id, kind, op_id, params,
            allowed, ended):
    term = _terminal(ctx, terminal_id)
    api = rpc.TerminalAPI(term['rpc_topic'])
    db.operation_start(ctx, op_id, m['id'], term['name'], kind)
    poll = CONF.conductor.op_poll_interval
    started = False
    unreachable_since = None
    last_look = time.monotonic()
    while True:
        guard(ctx, m['id'], generation, phase, allowed)
        if not started:
            try:
                rec = api.start(op_id, kind, params)
                started = True
                last_look = time.monotonic()
                if unreachable_since is not None:
                    db.add_event(ctx, 'migration', m['id'], 'health',
                                 'terminal %s answers again; %s goes on'
                                 % (term['name'], kind),
                                 migration_id=m['id'])
                    unreachable_since = None
                _record(ctx, op_id, rec)
            except messaging.MessagingException as e:
                if unreachable_since is None:
                    unreachable_since = time.monotonic()
                    db.add_event(ctx, 'migration', m['id'], 'error', str(
                        exception.TerminalUnavailable(
                            terminal=term['name'], operation=kind,
                            reason='%s: %s' % (type(e).__name__, e))),
                        migration_id=m['id'])
                time.sleep(poll)
                continue
        op = db.get(ctx, 'operation', op_id)
        if op['state'] == 'DONE':
            return op['result'] or {}
        if op['state'] == 'ERROR':
            raise exception.OperationFailed(terminal=term['name'],
                                            operation=kind, op_id=op_id,
                                            reason=op['error'])
        updated = db.utcfromiso(op['updated_at'])
        quiet = (db.now() - updated).total_seconds()
        if quiet > CONF.conductor.op_timeout and \
                time.monotonic() - last_look > CONF.conductor.op_timeout:
            # No word for a while: ask (a lost cast, a restarted agent).
            last_look = time.monotonic()
            try:
                rec = api.status(op_id)
            except messaging.MessagingException as e:
                db.add_event(ctx, 'migration', m['id'], 'error', str(
                    exception.TerminalUnavailable(
                        terminal=term['name'], operation=kind,
                        reason='%s: %s' % (type(e).__name__, e))),
                    migration_id=m['id'])
                continue
            if rec['state'] in ('INTERRUPTED', 'UNKNOWN'):
                db.add_event(ctx, 'migration', m['id'], 'error',
                             'terminal %s lost %s %s (%s): started again; '
                             'it resumes from its journal'
                             % (term['name'], kind, op_id, rec['state']),
                             migration_id=m['id'])
                started = False
                continue
            _record(ctx, op_id, rec)
        if ended.wait(poll):
            ended.clear()


def _record(ctx, op_id, rec):
    """Take a status answered by the agent into the operation row."""
    if rec.get('state') in ('DONE', 'ERROR'):
        db.operation_report(ctx, op_id, state=rec['state'],
                            result=rec.get('result'),
                            error=rec.get('error'))
    elif rec.get('state') == 'RUNNING':
        db.operation_report(ctx, op_id, state='RUNNING')


class PhaseTask(task.Task):
    """A task of phase ``phase``; takes migration_id and generation."""

    phase = None
    allowed = None

    def __init__(self, **kw):
        super().__init__(name='%s.%s' % (self.phase, type(self).__name__),
                         **kw)

    def execute(self, migration_id, generation):
        ctx = _ctx()
        m = guard(ctx, migration_id, generation, self.phase, self.allowed)
        return self.run(ctx, m, generation)

    def op(self, ctx, m, generation, terminal_id, kind, op_id, params):
        return run_op(ctx, m, generation, self.phase, terminal_id, kind,
                      op_id, params, self.allowed)


class Begin(PhaseTask):
    """First task of every phase; its revert records the failure.

    taskflow reverts in reverse order, so this revert runs last, once the
    other tasks have undone what they undo.
    """

    def run(self, ctx, m, generation):
        db.add_event(ctx, 'migration', m['id'], 'job', 'phase %s '
                     '(generation %d) runs on %s' % (
                         self.phase, generation, CONF.conductor.name),
                     migration_id=m['id'])

    def revert(self, migration_id, generation, *args, **kwargs):
        failures = kwargs.get('flow_failures') or {}
        reasons = []
        for f in failures.values():
            if f.check(Superseded):
                LOG.info('%s: %s', migration_id, f.exception_str)
                return
            reasons.append(f.exception_str)
        ctx = _ctx()
        try:
            m = guard(ctx, migration_id, generation, self.phase)
        except Superseded:
            return
        if 'fail' not in states.MIGRATION.events(m['state']):
            return
        reason = '; '.join(reasons) or 'unknown failure'
        db.transition(ctx, 'migration', migration_id, 'fail', values={
            'failed_in': m['state'], 'last_error': reason[:4000]},
            event_kind='error',
            message='%s failed in %s: %s' % (self.phase, m['state'],
                                             reason[:1000]))


# --- prepare: REQUESTED .. SEALED, then handed to the courier -----------------

class Prepare(PhaseTask):
    phase = 'prepare'
    allowed = (states.REQUESTED, states.SNAPSHOTTING, states.EXPORTING,
               states.CONSOLIDATING, states.SEALED)


class BeginPrepare(Begin, Prepare):
    pass


def advance(ctx, kind, ident, event, **kw):
    """Apply ``event`` to a row if its machine allows it now; else leave it.

    For the rows several flows may move at once (the shipments and devices
    of a group, its other migrations): the one that loses the race finds
    the row moved and goes on.
    """
    row = db.get(ctx, kind, ident)
    if event not in states.MACHINES[kind].events(row['state']):
        return row
    try:
        return db.transition(ctx, kind, ident, event, **kw)
    except (exception.Conflict, exception.InvalidTransition) as e:
        LOG.info('%s', e)
        return db.get(ctx, kind, ident)


PREPARING = (states.REQUESTED, states.SNAPSHOTTING, states.EXPORTING,
             states.CONSOLIDATING)


def _preparing(x):
    return x['state'] in PREPARING + (states.SEALED,) or (
        x['state'] == states.FAILED and x['failed_in'] in PREPARING)


def _group(ctx, m):
    """(leader, members) of m's group being prepared (m alone if none).

    The leader is the first member still being prepared: when the first
    is aborted while the group is packed, the next takes over its work
    (the seed snapshot keeps the first's name). A member re-shipped later
    (the others long gone on) packs alone.
    """
    members = [x for x in shipments_mod.members(ctx, m)
               if x['id'] == m['id'] or _preparing(x)]
    return members[0], members


def _group_volumes(members):
    return [v for x in members for v in x['volumes']]


def _open_shipments(ctx, members):
    """The group's shipments being packed (CREATED, LOADING, SEALED)."""
    sids = {v['shipment_id'] for v in _group_volumes(members)
            if v['shipment_id']}
    out = [db.get(ctx, 'shipment', sid) for sid in sids]
    return sorted([s for s in out if s['state'] in (
        states.S_CREATED, states.S_LOADING, states.S_SEALED)],
        key=lambda s: s['name'])


def _images_in(ctx, members, s):
    """The images (source specs) of the group that shipment ``s`` carries."""
    return sorted(v['source_image'] for v in _group_volumes(members)
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
            m = step(ctx, m, 'snapshot')
        if m['state'] != states.SNAPSHOTTING:
            return
        # Closed now (the leader left REQUESTED): who joined is in.
        lead, members = _group(ctx, m)
        members = [x for x in members
                   if x['state'] in (states.REQUESTED, states.SNAPSHOTTING)]
        for x in members:
            if x['id'] != m['id']:
                advance(ctx, 'migration', x['id'], 'snapshot',
                        message='snapshot with the shipment group %s '
                        '(leader %s)' % (shipments_mod.group_of(m), m['id']))
            # Cinder refuses what would make the copies diverge from now.
            cinder.mark(x, db.get(ctx, 'site', x['source_site_id'])['name'],
                        db.get(ctx, 'site', x['dest_site_id'])['name'])
            lock_servers(ctx, x)
        snap = seed_snapshot(m)
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
                advance(ctx, 'migration', x['id'], 'export', values={
                    'base_snapshot': snap, 'last_snapshot': snap,
                    'bytes_total': total or x['bytes_total']})

    def _window(self, ctx, m, generation):
        """Let more migrations join the group for a while after the first."""
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
            guard(ctx, m['id'], generation, self.phase, self.allowed)

    def _follow(self, ctx, m, generation, lead):
        """A follower: the leader packs for the group; this job parks.

        Waiting here held a conductor worker for as long as the leader's
        window, snapshot, export and seal took (a wave of followers held
        them all). Parked, the sweeper posts the phase again at its next
        sweep, until the leader has sealed this one (SEALED: the courier's
        events move it on, and this phase finds nothing to do).
        """
        if m['state'] not in PREPARING:
            return
        # (A leader aborted meanwhile is no leader: the next parked
        # follower posted again takes the lead, see _group.)
        park(ctx, m, generation, self.phase, 'shipment group %s: migration '
             '%s packs the group\'s shipments' % (
                 shipments_mod.group_of(m), lead['id']), kind='job')


def park(ctx, m, generation, phase, why, kind='error'):
    """End the job: a worker waiting for the outside world starves others.

    (Each conductor runs [conductor] max_jobs phases at once: phases
    sleeping for devices once held them all while delivered shipments
    waited for a worker to import them.) ``why`` is an event of ``kind``,
    once while it stays the same.
    """
    said = db.events(ctx, {'migration_id': m['id'], 'kind': kind})
    if not said or said[-1]['message'] != why:
        db.add_event(ctx, 'migration', m['id'], kind, why,
                     migration_id=m['id'])
    raise Parked(id=m['id'], phase=phase, generation=generation,
                 reason=why)


def _leader_only(ctx, m):
    lead, members = _group(ctx, m)
    return (members if lead['id'] == m['id'] else None)


def _specs_of(members):
    return [v['source_image'] for x in members for v in x['volumes']]


def lock_servers(ctx, m):
    """Lock the migration's servers in Nova, naming it (with Nova only)."""
    from lsrp.manager import nova_lock

    if not nova_lock.enabled():
        return
    why = nova_lock.reason(m['id'], db.get(ctx, 'site',
                                           m['dest_site_id'])['name'])
    done = nova_lock.lock([s['server_id'] for s in m['servers']], why)
    db.add_event(ctx, 'migration', m['id'], 'nova', 'servers locked in '
                 'Nova: %s' % ', '.join('%s %s' % kv for kv in
                                        sorted(done.items())),
                 migration_id=m['id'], details={'locked_reason': why})


def unlock_servers(ctx, m):
    """Undo lock_servers (the migration ended); never raises."""
    from lsrp.manager import nova_lock

    if not nova_lock.enabled():
        return
    why = nova_lock.reason(m['id'], db.get(ctx, 'site',
                                           m['dest_site_id'])['name'])
    try:
        done = nova_lock.unlock([s['server_id'] for s in m['servers']], why)
    except Exception as e:      # no credentials, Nova down: say so
        done = {'*': 'not unlocked: %s' % e}
    db.add_event(ctx, 'migration', m['id'], 'nova', 'servers unlocked in '
                 'Nova: %s' % ', '.join('%s %s' % kv for kv in
                                        sorted(done.items())),
                 migration_id=m['id'])


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
        term = _terminal(ctx, tid)
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
    (device capacity: :func:`lsrp.manager.shipments.pack`). Revert: a
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
        prefix = 'fedex-%s-' % short(m['id'])
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
        term = _terminal(ctx, m['source_terminal_id'])
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
        name = 'fedex-%s-%d' % (short(m['id']), n)
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
        term = _terminal(ctx, m['source_terminal_id'])
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
        park(ctx, m, generation, self.phase, why)

    def revert(self, migration_id, generation, result=None, *a, **kw):
        if not isinstance(result, list):
            return
        ctx = _ctx()
        for sid in result:
            s = db.get(ctx, 'shipment', sid)
            if s['state'] not in (states.S_CREATED, states.S_LOADING):
                continue
            ops = db.list_(ctx, 'operation', {'kind': 'export'})
            if any(o['id'] == _shipment_op(s, 'export') for o in ops):
                continue    # devices hold data: kept for the retry
            for d in db.devices_of(ctx, s['id']):
                db.transition(ctx, 'device', d['id'], 'erase')
                db.transition(ctx, 'device', d['id'], 'reuse',
                              values={'shipment_id': None,
                                      'index_in_set': None})
            custody.destroy_key(ctx, s, 'export never began')
            db.transition(ctx, 'shipment', s['id'], 'erase')
            db.volumes_unassign(ctx, s['id'])


def _engine_params(ctx, members, s):
    devices = db.devices_of(ctx, s['id'])
    return {'shipment_id': s['name'], 'key_ref': s['key_ref'],
            'images': _images_in(ctx, members, s),
            'snapshot': members[0]['base_snapshot'],
            'devices': [d['path'] for d in devices],
            'parity': s['parity']}


def _op_exists(ctx, op_id):
    try:
        return db.get(ctx, 'operation', op_id)
    except exception.NotFound:
        return None


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
    term = _terminal(ctx, m['source_terminal_id'])
    if devices:
        task_.op(ctx, m, generation, term['id'], 'erase',
                 '%s.erase.%s' % (s['name'], term['name']),
                 {'devices': [d['path'] for d in devices]})
    custody.destroy_key(ctx, s, why)
    for d in devices:
        if 'erase' in states.DEVICE.events(d['state']):
            d = move(ctx, 'device', d['id'], 'erase',
                     message='wiped at %s (%s)' % (term['name'], why))
        if d['state'] == states.D_ERASED:
            move(ctx, 'device', d['id'], 'reuse', values={
                'shipment_id': None, 'index_in_set': None})
    db.volumes_unassign(ctx, s['id'])
    if 'erase' in states.SHIPMENT.events(db.get(ctx, 'shipment',
                                                s['id'])['state']):
        move(ctx, 'shipment', s['id'], 'erase', event_kind='custody',
             message='dropped before sealing: %s' % why)


def _export_open(task_, ctx, m, generation, members):
    for s in _open_shipments(ctx, members):
        if s['state'] != states.S_LOADING:
            continue
        if not _op_exists(ctx, _shipment_op(s, 'export')):
            _leave_out(ctx, m, members, s)
        elif _left_behind(ctx, members, s):
            # Exported (or cancelled mid-export) with the images of a
            # member aborted since, maybe the leader that began it: Seal
            # drops it and packs the others again.
            continue
        task_.op(ctx, m, generation, m['source_terminal_id'], 'export',
                 _shipment_op(s, 'export'),
                 _engine_params(ctx, members, s))
        for d in db.devices_of(ctx, s['id']):
            if d['state'] == states.D_ASSIGNED:
                move(ctx, 'device', d['id'], 'write')


class Export(Prepare):
    """Each open shipment of the group: its images at the seed snapshot.

    Images of a member aborted meanwhile are left out (not exported yet)
    or make Seal drop the shipment (exported already).
    """

    def run(self, ctx, m, generation):
        members = _leader_only(ctx, m)
        if members is None or m['state'] != states.EXPORTING:
            return
        _export_open(self, ctx, m, generation, members)
        if m['options'].get('consolidate'):
            for x in members:
                advance(ctx, 'migration', x['id'], 'consolidate')


class Consolidate(Prepare):
    """Refresh the devices to a newer snapshot right before shipping."""

    def run(self, ctx, m, generation):
        members = _leader_only(ctx, m)
        if members is None or m['state'] != states.CONSOLIDATING:
            return
        snap = 'fedex-%s-c1' % short(m['id'])
        for s in _open_shipments(ctx, members):
            if s['state'] != states.S_LOADING:
                continue
            params = dict(_engine_params(ctx, members, s), snapshot=snap,
                          create_snapshot=True)
            self.op(ctx, m, generation, m['source_terminal_id'],
                    'consolidate',
                    _shipment_op(s, 'consolidate'), params)
        for x in members:
            db.update(ctx, 'migration', x['id'], {'base_snapshot': snap,
                                                  'last_snapshot': snap})


class Seal(Prepare):
    """Seal each loaded shipment, none with an aborted member's images.

    A member aborted after its images were exported: the shipment is
    dropped (devices wiped, key destroyed) and the others' images are
    packed and exported again, without it, before sealing.
    """

    def run(self, ctx, m, generation):
        members = _leader_only(ctx, m)
        if members is None or m['state'] not in (states.EXPORTING,
                                                 states.CONSOLIDATING):
            return
        self._drop_orphans(ctx, m, generation)
        while not self._seal_all(ctx, m, generation):
            self._drop_orphans(ctx, m, generation)
            _, members = _group(ctx, m)
            if m['state'] == states.CONSOLIDATING:
                raise exception.ManagerError(
                    reason='shipment group %s: a member was aborted after '
                    'its consolidation; retry the migration %s to pack and '
                    'export the others again' % (
                        shipments_mod.group_of(m), m['id']))
            Pack().run(ctx, m, generation)
            # Read again: Pack assigned the images to the new shipment.
            _, members = _group(ctx, m)
            _export_open(self, ctx, m, generation, members)
        for x in _group(ctx, m)[1]:
            x = db.get(ctx, 'migration', x['id'])
            advance(ctx, 'migration', x['id'], 'seal',
                    values={'bytes_done': x['bytes_total']})

    def _seal_all(self, ctx, m, generation):
        """Seal the loaded shipments; False if one had to be dropped."""
        _, members = _group(ctx, m)
        for s in _open_shipments(ctx, members):
            if s['state'] != states.S_LOADING:
                continue
            if self._drop_if_left_behind(ctx, m, generation, members, s):
                return False
            result = self.op(ctx, m, generation, m['source_terminal_id'],
                             'seal', _shipment_op(s, 'seal'),
                             _engine_params(ctx, members, s))
            # An abort during the seal: dropped all the same.
            _, members = _group(ctx, m)
            if self._drop_if_left_behind(ctx, m, generation, members, s):
                return False
            db.transition(ctx, 'shipment', s['id'], 'seal', values={
                'manifest_digest': result['manifest_digest'],
                'seal_digest': result['seal_digest']},
                details={'labels': result['labels']})
            for d in db.devices_of(ctx, s['id']):
                if d['state'] == states.D_WRITTEN:
                    move(ctx, 'device', d['id'], 'seal')
        return True

    def _drop_orphans(self, ctx, m, generation):
        """A drop cut short (crash after its images were unassigned)."""
        used = {v['shipment_id'] for x in shipments_mod.members(ctx, m)
                for v in x['volumes']}
        for s in db.list_(ctx, 'shipment', {'state': states.S_LOADING}):
            if s['name'].startswith('fedex-%s-' % short(m['id'])) and \
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
                _op_exists(ctx, _shipment_op(s, kind))
                for kind in ('export', 'consolidate'))):
            time.sleep(CONF.conductor.op_poll_interval)
            guard(ctx, m['id'], generation, self.phase, self.allowed)


class Dispatch(Prepare):
    """Give the sealed shipments to their courier; the flow ends (parks).

    Only once every migration of the group is SEALED.
    """

    def run(self, ctx, m, generation):
        members = _leader_only(ctx, m)
        if members is None:
            return
        waiting = [x['id'] for x in members if x['state'] in (
            states.REQUESTED, states.SNAPSHOTTING, states.EXPORTING,
            states.CONSOLIDATING)]
        if waiting:
            raise exception.ManagerError(
                reason='shipment group %s: %s not sealed yet' % (
                    shipments_mod.group_of(m), ', '.join(waiting)))
        for s in _open_shipments(ctx, members):
            if s['state'] != states.S_SEALED:
                continue
            # Sealed: the source terminal has no more use for the key.
            restrict_key(ctx, m, s['key_ref'], s['name'],
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


# --- receive: DELIVERED .. CATCHING_UP ------------------------------------------

class Receive(PhaseTask):
    phase = 'receive'
    allowed = (states.DELIVERED, states.IMPORTING)


class BeginReceive(Begin, Receive):
    pass


def _shipments_of(ctx, m):
    """The shipments carrying m's images, by name."""
    return sorted((db.get(ctx, 'shipment', sid) for sid in {
        v['shipment_id'] for v in m['volumes'] if v['shipment_id']}),
        key=lambda s: s['name'])


def _shipment_op(s, kind):
    """A shipment's operation: one id, whichever migration runs it."""
    return '%s.%s' % (s['name'], kind)


def _seal_record(ctx, m, s):
    op = db.get(ctx, 'operation', _shipment_op(s, 'seal'))
    return op['result']


def _paths_at(ctx, s, terminal_id):
    return [d['path'] for d in db.devices_of(ctx, s['id'])
            if d['terminal_id'] == terminal_id and d['path']]


class Custody(Receive):
    """Wait for each shipment's devices at the destination, then check."""

    def run(self, ctx, m, generation):
        for s in _shipments_of(ctx, m):
            if s['state'] == states.S_TAMPERED:
                raise exception.CustodyMismatch(
                    shipment=s['name'], reason='the shipment is TAMPERED')
            if s['state'] == states.S_DELIVERED:
                self.check(ctx, m, generation, s)

    def check(self, ctx, m, generation, s):
        seal = _seal_record(ctx, m, s)
        want = len(seal['labels']) - s['parity']
        announced = False
        grace = None
        while True:
            paths = _paths_at(ctx, s, m['dest_terminal_id'])
            if len(paths) >= len(seal['labels']):
                break
            if len(paths) >= want:
                # Parity covers the rest: wait a little for stragglers.
                grace = grace or time.monotonic() + 30
                if time.monotonic() > grace:
                    break
            if not announced:
                db.add_event(ctx, 'migration', m['id'], 'custody',
                             'waiting for the devices of %s to be plugged '
                             'in at the destination terminal (%d of %d)'
                             % (s['name'], len(paths), len(seal['labels'])),
                             migration_id=m['id'])
                announced = True
            time.sleep(CONF.conductor.op_poll_interval)
            guard(ctx, m['id'], generation, self.phase, self.allowed)
        params = {'shipment_id': s['name'], 'key_ref': s['key_ref'],
                  'devices': paths, 'labels': seal['labels'],
                  'manifest_digest': s['manifest_digest'],
                  'parity': s['parity']}
        try:
            report = self.op(ctx, m, generation, m['dest_terminal_id'],
                             'verify', _shipment_op(s, 'verify'),
                             params)
        except exception.OperationFailed as e:
            if 'CustodyMismatch' in str(e) or 'Verification' in str(e):
                advance(ctx, 'shipment', s['id'], 'tamper',
                        event_kind='custody', message=str(e)[:2000])
                custody.destroy_key(ctx, s, 'shipment tampered')
                raise exception.CustodyMismatch(
                    shipment=s['name'], reason='%s; re-ship it (reship) or '
                    'seed over the WAN' % e)
            raise
        for d in db.devices_of(ctx, s['id']):
            d = advance(ctx, 'device', d['id'], 'receive')
            advance(ctx, 'device', d['id'], 'verify')
        advance(ctx, 'shipment', s['id'], 'verify',
                event_kind='custody', details={
                    'missing': report.get('missing_serials'),
                    'repaired_chunks': report.get('repaired_chunks')},
                message='custody check passed: serials, seal and '
                'every chunk match the manifest')


class Import(Receive):
    """Each shipment of the migration, imported once for the group."""

    def run(self, ctx, m, generation):
        m = step(ctx, m, 'import')
        if m['state'] != states.IMPORTING:
            return
        for s in _shipments_of(ctx, m):
            if s['state'] not in (states.S_VERIFIED, states.S_IMPORTED):
                raise exception.ManagerError(
                    reason='shipment %s of migration %s is %s, not VERIFIED'
                    % (s['name'], m['id'], s['state']))
            pool_map = {}
            for v in _group_volumes(shipments_mod.members(ctx, m)):
                if v['shipment_id'] == s['id']:
                    pool_map[v['source_image'].split('/')[0]] = \
                        v['dest_image'].split('/')[0]
            params = {'shipment_id': s['name'], 'key_ref': s['key_ref'],
                      'devices': _paths_at(ctx, s, m['dest_terminal_id']),
                      'manifest_digest': s['manifest_digest'],
                      'pool_map': pool_map}
            self.op(ctx, m, generation, m['dest_terminal_id'], 'import',
                    _shipment_op(s, 'import'), params)
            advance(ctx, 'shipment', s['id'], 'import')
        step(ctx, m, 'catch_up')
        jobs.post(ctx, m['id'], 'catchup')


# --- catch-up rounds --------------------------------------------------------------

def catchup_name(ctx, m):
    """The name m's rounds go under at the destination.

    Its shipment's when one shipment carried all its images (the import
    authorized them under it); else (several shipments, or seeded over
    the WAN) one of its own, authorized by :class:`Authorize`.
    """
    sids = {v['shipment_id'] for v in m['volumes']}
    if len(sids) == 1 and None not in sids:
        return db.get(ctx, 'shipment', sids.pop())['name']
    return 'fedex-%s-wan' % short(m['id'])


def round_params(ctx, m):
    dest = _terminal(ctx, m['dest_terminal_id'])
    return {'shipment_id': catchup_name(ctx, m), 'images': _specs(m),
            'base': m['last_snapshot'],
            'peer': {'name': dest['name'],
                     'address': dest['lsrp_address']},
            'rate_cap': options_mod.rate_cap(m['options'])}


def _wan_prepare(task_, ctx, m, generation):
    """Before m's first round under a name of its own: authorize, seed.

    The destination accepts rounds of m's images under that name; images
    that no shipment brought (a lost shipment switched to seeding over
    the WAN) are first copied whole at the base snapshot, over LSRP.
    """
    name = catchup_name(ctx, m)
    if name != 'fedex-%s-wan' % short(m['id']):
        return
    src = _terminal(ctx, m['source_terminal_id'])
    task_.op(ctx, m, generation, m['dest_terminal_id'], 'authorize',
             '%s.authorize' % name,
             {'name': name, 'images': _specs(m), 'source': src['name']})
    unshipped = [v['source_image'] for v in m['volumes']
                 if not v['shipment_id']]
    if not unshipped:
        return
    dest = _terminal(ctx, m['dest_terminal_id'])
    result = task_.op(ctx, m, generation, m['source_terminal_id'],
                      'seed_over_wan', '%s.seed_over_wan' % name, {
                          'name': name, 'images': unshipped,
                          'snapshot': m['base_snapshot'],
                          'peer': {'name': dest['name'],
                                   'address': dest['lsrp_address']},
                          'rate_cap': options_mod.rate_cap(m['options'])})
    db.add_event(ctx, 'migration', m['id'], 'progress',
                 'seeded over the WAN: %s at %s, %d bytes on the wire' % (
                     ', '.join(unshipped), m['base_snapshot'],
                     result.get('wire_bytes') or 0),
                 migration_id=m['id'], details=result)


def _unreachable(e):
    return isinstance(e, exception.OperationFailed) and \
        'TerminalUnreachable' in str(e)


def _round_op_id(ctx, m, kind, number):
    """Round ``number``'s operation id; a new one after each unreachable try.

    Taken from the database, so that a conductor that resumes the phase
    finds the try in flight rather than starting another.
    """
    base = '%s.%s.%d' % (m['id'], kind, number)
    failed = [o for o in db.list_(ctx, 'operation', {'migration_id': m['id'],
                                                     'kind': kind})
              if (o['id'] == base or o['id'].startswith(base + '.try')) and
              o['state'] == 'ERROR']
    return '%s.try%d' % (base, len(failed) + 1) if failed else base


def _wait_for_peer(ctx, m, generation, task_, failed_at, deadline):
    """Until the destination beats UP after ``failed_at``, or ``deadline``.

    A heartbeat says UP only once the terminal's LSRP port accepts
    connections (lsrp-agent), so the next try does not fail the same way.
    """
    from lsrp.manager import actions
    while time.monotonic() < deadline:
        guard(ctx, m['id'], generation, task_.phase, task_.allowed)
        term = actions.terminal_show(ctx, m['dest_terminal_id'])
        beat = db.utcfromiso(term.get('last_heartbeat'))
        if term['health'] == 'UP' and beat and beat > failed_at:
            return
        time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))


def _round_with_patience(task_, ctx, m, generation, kind, number):
    """One round; waits for an unreachable destination, within patience.

    The destination terminal may be down for a while (a restart, a
    crash): the round is tried again, each time with a new operation id,
    when the terminal reports UP again (or every ``[conductor]
    peer_retry_interval``), until it passes or ``[conductor] peer_patience``
    runs out (PeerGone: the migration FAILED naming the terminal).
    """
    patience = CONF.conductor.peer_patience
    interval = CONF.conductor.peer_retry_interval
    since = time.monotonic()
    dest = _terminal(ctx, m['dest_terminal_id'])['name']
    waits = []

    def attempt():
        params = dict(round_params(ctx, m), number=number)
        return task_.op(ctx, m, generation, m['source_terminal_id'], kind,
                        _round_op_id(ctx, m, kind, number), params)

    def wait_for_peer(state):
        waits.append(state.outcome.exception())
        failed_at = db.now()
        db.add_event(ctx, 'migration', m['id'], 'error',
                     'round %d: destination terminal %s unreachable (%s); '
                     'waiting for it, then trying again (%d s of %d s of '
                     'patience spent)' % (number, dest, waits[-1],
                                          time.monotonic() - since,
                                          patience),
                     migration_id=m['id'])
        _wait_for_peer(ctx, m, generation, task_, failed_at, min(
            time.monotonic() + interval, since + patience))

    try:
        result = tenacity.Retrying(
            retry=tenacity.retry_if_exception(_unreachable),
            stop=tenacity.stop_after_delay(patience),
            wait=tenacity.wait_none(), before_sleep=wait_for_peer,
            reraise=True)(attempt)
    except exception.OperationFailed as e:
        if not _unreachable(e):
            raise
        raise exception.PeerGone(migration=m['id'], operation='%s %d' % (
            kind, number), terminal=dest, seconds=time.monotonic() - since,
            reason=e)
    if waits:
        db.add_event(ctx, 'migration', m['id'], 'health',
                     'round %d: destination terminal %s answers again after '
                     '%d tries; catch-up goes on'
                     % (number, dest, len(waits) + 1),
                     migration_id=m['id'])
    return result


def one_round(task_, ctx, m, generation, kind='catchup_round'):
    number = (m['rounds'] or 0) + 1
    if kind == 'catchup_round':
        result = _round_with_patience(task_, ctx, m, generation, kind,
                                      number)
    else:
        # The final delta runs with the VM paused: no waiting there (the
        # cutover's own rules roll it back).
        params = dict(round_params(ctx, m), number=number)
        result = task_.op(ctx, m, generation, m['source_terminal_id'], kind,
                          '%s.%s.%d' % (m['id'], kind, number), params)
    rate = result.get('wire_rate')
    # In the catch-up the ETA is that of the next round (what the writers
    # dirty at this round's rate): whether it converges is the rounds' job.
    values = {'rounds': number, 'last_snapshot': result['snapshot'],
              'last_round_bytes': result['wire_bytes'], 'rate': rate,
              'eta_seconds': result['estimate'] / rate if rate else None}
    m = db.update(ctx, 'migration', m['id'], values)
    db.add_event(ctx, 'migration', m['id'], 'progress',
                 'round %d: %d bytes changed, %d on the wire in %.1f s; '
                 'next about %d' % (number, result['changed_bytes'],
                                    result['wire_bytes'], result['seconds'],
                                    result['estimate']),
                 migration_id=m['id'], details=result)
    return m, result


class CatchUp(PhaseTask):
    phase = 'catchup'
    allowed = (states.CATCHING_UP,)


class BeginCatchUp(Begin, CatchUp):
    pass


class Rounds(CatchUp):
    """Rounds until the next would fit the threshold, then READY."""

    def run(self, ctx, m, generation):
        opts = m['options']
        first = m['rounds'] or 0
        _wan_prepare(self, ctx, m, generation)
        while True:
            m, result = one_round(self, ctx, m, generation)
            if result['estimate'] <= opts['threshold_bytes']:
                break
            if m['rounds'] - first >= opts['max_rounds']:
                db.add_event(ctx, 'migration', m['id'], 'error',
                             'no convergence in %d rounds (next about %d '
                             'bytes): ready anyway; the final delta will '
                             'be larger' % (opts['max_rounds'],
                                            result['estimate']),
                             migration_id=m['id'])
                break
        m = step(ctx, m, 'converge')
        if opts.get('cutover') == 'automatic':
            from lsrp.manager import actions
            if actions.cutover_ready(ctx, m['id'])['ready']:
                actions.migration_cutover_start(ctx, m['id'])


class KeepWarm(PhaseTask):
    phase = 'keep_warm'
    allowed = (states.READY_FOR_CUTOVER,)

    def run(self, ctx, m, generation):
        m, _ = one_round(self, ctx, m, generation)
        db.transition(ctx, 'migration', m['id'], 'keep_warm',
                      expect=states.READY_FOR_CUTOVER)


class BeginKeepWarm(Begin, KeepWarm):
    pass


# --- cutover ---------------------------------------------------------------------

class Cutover(PhaseTask):
    phase = 'cutover'
    allowed = (states.CUTTING_OVER,)


class BeginCutover(Begin, Cutover):
    pass


class FinalDelta(Cutover):
    """The last round while the VM is paused, verified whole.

    Nova pauses the VM; the sandbox demo pauses its writer.
    """

    def run(self, ctx, m, generation):
        op_id_prefix = '%s.final_delta.' % m['id']
        done = [o for o in db.list_(ctx, 'operation',
                                    {'migration_id': m['id'],
                                     'kind': 'final_delta'})
                if o['id'].startswith(op_id_prefix) and o['state'] == 'DONE']
        if not done:
            m, result = one_round(self, ctx, m, generation, 'final_delta')
        if not m['servers'] and m['state'] == states.CUTTING_OVER:
            # Detached volumes only: nothing runs on them, so this round
            # is the final state; Cinder then hands them to the
            # destination's backend. No Nova.
            from lsrp.manager import actions
            actions._volumes_to_destination(ctx, m['id'])
        if CONF.conductor.compute_driver == 'none' or not m['servers']:
            # No Nova to switch a VM over (the sandbox's stand-in, or no
            # server at all).
            m = step(ctx, m, 'complete', values={'finished_at': db.now()})
            if m['options'].get('retention_days', 0) == 0:
                jobs.post(ctx, m['id'], 'cleanup')
        elif CONF.conductor.compute_driver == 'nova':
            start_nova_cutover(ctx, m)


NOVA_REQUESTED = 'nova live migration requested'
NOVA_UNCLEAR = 'nova gave no clear answer'
# Seconds after a request before "Nova has no record of it" means it never
# started.
NOVA_START_GRACE = 300


def cutover_began(ctx, m):
    """When this cutover began (the newest move to CUTTING_OVER), ISO."""
    began = [e['created_at'] for e in db.events(ctx, {'migration_id': m['id']})
             if e['to_state'] == states.CUTTING_OVER]
    return max(began) if began else m['updated_at']


def _nova_requests(ctx, m):
    """This cutover's requests to Nova: [(server_id, request_id, at)]."""
    began = cutover_began(ctx, m)
    return [(e['details'].get('server_id'), e['details'].get('request_id'),
             e['created_at'])
            for e in db.events(ctx, {'migration_id': m['id'],
                                     'kind': 'cutover'})
            if e['message'].startswith((NOVA_REQUESTED, NOVA_UNCLEAR)) and
            e['created_at'] >= began and e['details']]


def start_nova_cutover(ctx, m):
    """Nova's live migration of each server, once per cutover.

    nova_fedex applies the final delta inside the pause and reports the
    end (fedex-api's cutover-events). Nova's refusal in its pre-checks
    rolls back at once, naming Nova's reason; an unclear answer (timeout,
    5xx) is recorded, and the sweeper reads Nova's records back
    (:func:`reconcile_nova_cutover`).
    """
    from lsrp.manager import actions
    from lsrp.manager import nova

    if _nova_requests(ctx, m):
        return
    for s in m['servers']:
        try:
            request_id = nova.live_migrate(s['server_id'], m['dest_host'])
        except exception.NovaRefused as e:
            actions.migration_cutover_finish(ctx, m['id'], success=False,
                                             reason=str(e))
            return
        except Exception as e:
            db.add_event(ctx, 'migration', m['id'], 'cutover',
                         '%s to the live migration of server %s (%s): '
                         'reading its records back' % (
                             NOVA_UNCLEAR, s['server_id'], e),
                         migration_id=m['id'],
                         details={'server_id': s['server_id']})
            continue
        db.add_event(ctx, 'migration', m['id'], 'cutover',
                     '%s: server %s to %s' % (NOVA_REQUESTED, s['server_id'],
                                              m['dest_host']),
                     migration_id=m['id'],
                     details={'server_id': s['server_id'],
                              'request_id': request_id})


def reconcile_nova_cutover(ctx, m):
    """A CUTTING_OVER migration nobody ended: read Nova's records back.

    nova_fedex reports the end of the cutover; when that report is lost
    (or Nova failed before nova_fedex ran), Nova's migration record and
    the server say it: every live migration failed and the servers are
    back at the source -> ROLLED_BACK with Nova's reason; all completed
    at the destination host -> COMPLETED. Still running: nothing yet. A
    guest that nova_fedex reported stranded is left to the operator.
    Returns what it did (for the log and the tests).
    """
    from lsrp.manager import actions
    from lsrp.manager import nova

    m = db.get(ctx, 'migration', m['id'])
    if m['state'] != states.CUTTING_OVER:
        return 'ended'          # nova_fedex's report came first
    began = cutover_began(ctx, m)
    events = [e for e in db.events(ctx, {'migration_id': m['id'],
                                         'kind': 'cutover'})
              if e['created_at'] >= began]
    if any(e['message'].startswith('nova: stranded') for e in events):
        return 'stranded'
    requests = _nova_requests(ctx, m)
    if not requests:
        # The cutover job ended without asking Nova: ask again.
        jobs.post(ctx, m['id'], 'cutover')
        return 'reposted'
    outcomes = {}
    now = db.now()
    for server_id, request_id, at in requests:
        outcome = nova.live_migration_outcome(server_id, request_id,
                                              since=began)
        if outcome['status'] is None and (
                now - db.utcfromiso(at)).total_seconds() < NOVA_START_GRACE:
            # No record yet: a request that reached Nova late (an
            # overloaded API) may still start it.
            outcome['ended'] = None
        outcomes[server_id] = outcome
    if any(o['ended'] is None or o['task_state'] is not None
           for o in outcomes.values()):
        return 'running'
    if all(o['ended'] == 'completed' and o['host'] == m['dest_host']
           for o in outcomes.values()):
        db.add_event(ctx, 'migration', m['id'], 'cutover',
                     'Nova completed the live migration to %s (read back; '
                     'no report from nova_fedex)' % m['dest_host'],
                     migration_id=m['id'])
        actions.migration_cutover_finish(ctx, m['id'], success=True)
        return 'completed'
    if all(o['ended'] == 'failed' for o in outcomes.values()):
        reason = '; '.join(
            'Nova %s the live migration of server %s (status %s, server %s '
            'on %s)%s' % ('did not start' if o['status'] is None else
                          'failed', sid, o['status'], o['server_status'],
                          o['host'],
                          ': %s' % o['reason'] if o['reason'] else '')
            for sid, o in sorted(outcomes.items()))
        actions.migration_cutover_finish(ctx, m['id'], success=False,
                                         reason=reason)
        return 'rolled_back'
    # Some servers moved, some did not: an operator decides.
    text = 'servers split between the sites after the cutover: %s' % (
        ', '.join('%s %s on %s' % (sid, o['ended'], o['host'])
                  for sid, o in sorted(outcomes.items())))
    if not any(e['message'] == text for e in events):
        db.add_event(ctx, 'migration', m['id'], 'cutover', text,
                     migration_id=m['id'])
    return 'split'


# --- cleanup and abort -----------------------------------------------------------

def _erase_shipments(task_, ctx, m, generation, why):
    """Erase every device of the migration's shipments and their keys."""
    sids = {v['shipment_id'] for v in m['volumes'] if v['shipment_id']}
    sids |= {s['id'] for s in db.list_(ctx, 'shipment')
             if s['name'].startswith('fedex-%s-' % short(m['id']))}
    for sid in sorted(sids):
        s = db.get(ctx, 'shipment', sid)
        others = shipments_mod.still_needed(ctx, sid, but=m['id'])
        if others:
            # Erase waits until no migration of the group needs it.
            db.add_event(ctx, 'migration', m['id'], 'custody',
                         'shipment %s kept: migration(s) %s still need it'
                         % (s['name'], ', '.join(x['id'] for x in others)),
                         migration_id=m['id'])
            continue
        devices = db.devices_of(ctx, sid)
        by_terminal = {}
        for d in devices:
            if d['state'] not in (states.D_ERASED, states.D_MISSING,
                                  states.D_SHIPPED) and d['terminal_id']:
                by_terminal.setdefault(d['terminal_id'], []).append(d)
        for terminal_id, devs in sorted(by_terminal.items()):
            task_.op(ctx, m, generation, terminal_id, 'erase',
                     '%s.erase.%s' % (s['name'],
                                      _terminal(ctx, terminal_id)['name']),
                     {'devices': [d['path'] for d in devs]})
        custody.destroy_key(ctx, s, why)
        for d in devices:
            if 'erase' in states.DEVICE.events(d['state']):
                db.transition(ctx, 'device', d['id'], 'erase',
                              message='erased (%s)' % why)
            d = db.get(ctx, 'device', d['id'])
            if d['state'] == states.D_ERASED and why != 'lost':
                db.transition(ctx, 'device', d['id'], 'reuse', values={
                    'shipment_id': None, 'index_in_set': None})
        s = db.get(ctx, 'shipment', sid)
        if 'erase' in states.SHIPMENT.events(s['state']):
            db.transition(ctx, 'shipment', sid, 'erase',
                          event_kind='custody', message='crypto-erased (%s)'
                          % why)


def _remove_snapshots(task_, ctx, m, generation, terminal_id, images):
    task_.op(ctx, m, generation, terminal_id, 'remove_snapshots',
             '%s.remove_snapshots.%s' % (m['id'], terminal_id),
             {'images': images,
              'prefixes': shipments_mod.snapshot_prefixes(ctx, m)})


class Cleanup(PhaseTask):
    phase = 'cleanup'
    allowed = (states.COMPLETED,)


class BeginCleanup(Begin, Cleanup):
    pass


class EraseAndClean(Cleanup):

    def run(self, ctx, m, generation):
        _erase_shipments(self, ctx, m, generation, 'migration completed')
        _remove_snapshots(self, ctx, m, generation, m['source_terminal_id'],
                          _specs(m))
        step(ctx, m, 'clean')


class Abort(PhaseTask):
    phase = 'abort'
    allowed = (states.ABORTING,)


class BeginAbort(Begin, Abort):
    pass


class StopOperations(Abort):
    """Cancel what terminals still run for the migration, and wait."""

    def run(self, ctx, m, generation):
        for op in db.list_(ctx, 'operation', {'migration_id': m['id']}):
            if op['state'] in ('DONE', 'ERROR'):
                continue
            term = db.get(ctx, 'terminal', op['terminal'])
            api = rpc.TerminalAPI(term['rpc_topic'])
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                try:
                    api.cancel(op['id'])
                    rec = api.status(op['id'])
                except messaging.MessagingException:
                    break       # unreachable: it cannot write either
                if rec['state'] != 'RUNNING':
                    break
                time.sleep(CONF.conductor.op_poll_interval)
            db.operation_report(ctx, op['id'], state='ERROR',
                                error='cancelled by abort')


# Seconds an aborted member of a shipment group waits for the group's
# export of its images before removing its snapshots all the same.
GROUP_READS_PATIENCE = 900


class CleanUpAbort(Abort):
    """Devices erased, keys destroyed, snapshots removed; VM untouched."""

    def _wait_group_reads(self, ctx, m, generation):
        """Until the group's export of our images (the leader's) ends.

        Removing the seed snapshot under it would fail the others; the
        leader then leaves our images out of what it seals.
        """
        sids = {v['shipment_id'] for v in m['volumes'] if v['shipment_id']}
        announced = False
        # Not for ever: an export whose terminal died stays RUNNING in the
        # database until its leader looks again.
        deadline = time.monotonic() + GROUP_READS_PATIENCE
        while time.monotonic() < deadline:
            busy = []
            for sid in sids:
                s = db.get(ctx, 'shipment', sid)
                if s['state'] not in (states.S_CREATED, states.S_LOADING):
                    continue
                for kind in ('export', 'consolidate'):
                    op = _op_exists(ctx, _shipment_op(s, kind))
                    if op and op['state'] not in ('DONE', 'ERROR'):
                        busy.append(op['id'])
            if not busy:
                return
            if not announced:
                db.add_event(ctx, 'migration', m['id'], 'job',
                             'waiting for %s (its shipment group reads our '
                             'images) before removing our snapshots'
                             % ', '.join(busy), migration_id=m['id'])
                announced = True
            time.sleep(CONF.conductor.op_poll_interval)
            guard(ctx, m['id'], generation, self.phase, self.allowed)

    def run(self, ctx, m, generation):
        copied = any(db.list_(ctx, 'operation', {
            'migration_id': m['id'], 'kind': kind})
            for kind in ('import', 'seed_over_wan')) or any(
            s['state'] == states.S_IMPORTED for s in _shipments_of(ctx, m))
        _erase_shipments(self, ctx, m, generation, 'migration aborted')
        self._wait_group_reads(ctx, m, generation)
        _remove_snapshots(self, ctx, m, generation, m['source_terminal_id'],
                          _specs(m))
        if copied:
            # The destination's copies are ours (preflight refuses an
            # image that exists there): an abort leaves nothing behind.
            self.op(ctx, m, generation, m['dest_terminal_id'],
                    'remove_images', '%s.remove_images' % m['id'],
                    {'images': [v['dest_image'] for v in m['volumes']],
                     'prefixes': shipments_mod.snapshot_prefixes(ctx, m)})
        cinder.unmark(m)
        unlock_servers(ctx, m)
        m = step(ctx, m, 'aborted', values={'finished_at': db.now()})
