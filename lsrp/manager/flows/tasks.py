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

import time

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging
from taskflow import task

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
from lsrp.manager import states

CONF = cfg.CONF
LOG = logging.getLogger(__name__)


class Superseded(exception.ManagerError):
    message = ('migration %(id)s: phase %(phase)s generation %(generation)s'
               ' superseded (%(reason)s)')


def _ctx():
    return context_mod.admin('conductor')


def short(migration_id):
    return migration_id.split('-')[0]


def seed_snapshot(m):
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


def run_op(ctx, m, generation, phase, terminal_id, kind, op_id, params,
           allowed=None):
    """Start (or find) an operation on a terminal and wait for its end.

    Holds this conductor's thread while the terminal works (minutes to
    hours of export or import): never across a courier's days. A terminal
    that does not answer is waited for, with an event saying so.
    """
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
        time.sleep(poll)


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


class Snapshot(Prepare):
    """The seed snapshot of every image at the source (kept if present)."""

    def run(self, ctx, m, generation):
        if m['state'] == states.REQUESTED:
            m = step(ctx, m, 'snapshot')
        if m['state'] != states.SNAPSHOTTING:
            return
        # Cinder refuses what would make the copies diverge from now on.
        cinder.mark(m, db.get(ctx, 'site', m['source_site_id'])['name'],
                    db.get(ctx, 'site', m['dest_site_id'])['name'])
        snap = seed_snapshot(m)
        result = self.op(ctx, m, generation, m['source_terminal_id'],
                         'snapshot', '%s.snapshot' % m['id'],
                         {'images': _specs(m), 'snapshot': snap})
        step(ctx, m, 'export', values={
            'base_snapshot': snap, 'last_snapshot': snap,
            'bytes_total': result.get('bytes_total') or m['bytes_total']})


class Pack(Prepare):
    """A shipment with a key and blank devices at the source terminal.

    Revert: a shipment whose export never began gives its devices back and
    its key is destroyed.
    """

    def run(self, ctx, m, generation):
        s = self._current(ctx, m)
        if s is None:
            s = self._new(ctx, m, generation)
        if s['state'] == states.S_CREATED:
            s = db.transition(ctx, 'shipment', s['id'], 'load')
        return s['id']

    def _current(self, ctx, m):
        ids = {v['shipment_id'] for v in m['volumes'] if v['shipment_id']}
        for sid in ids:
            s = db.get(ctx, 'shipment', sid)
            if s['state'] in (states.S_CREATED, states.S_LOADING,
                              states.S_SEALED):
                return s
        return None

    def _new(self, ctx, m, generation):
        n = 1 + len(db.list_(ctx, 'shipment',
                             {'source_terminal_id': m['source_terminal_id']}))
        name = 'fedex-%s-%d' % (short(m['id']), n)
        parity = m['options'].get('parity', 1)
        want = max(2, parity + 2)
        term = _terminal(ctx, m['source_terminal_id'])
        while True:
            blank = db.list_(ctx, 'device', {
                'terminal_id': term['id'], 'state': states.D_BLANK},
                sort_key='slot', sort_dir='asc')
            if len(blank) >= want:
                break
            db.add_event(ctx, 'migration', m['id'], 'error',
                         'waiting for %d blank devices at %s (%d there)'
                         % (want, term['name'], len(blank)),
                         migration_id=m['id'])
            time.sleep(max(5, CONF.conductor.op_poll_interval))
            guard(ctx, m['id'], generation, self.phase, self.allowed)
        key_ref = keys_mod.get_store().create(name)
        try:
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
        except Exception:
            keys_mod.get_store().delete(key_ref)
            raise
        for i, d in enumerate(blank[:want]):
            db.transition(ctx, 'device', d['id'], 'assign', values={
                'shipment_id': s['id'], 'index_in_set': i})
        db.volumes_update(ctx, m['id'], {'shipment_id': s['id']})
        return s

    def revert(self, migration_id, generation, result=None, *a, **kw):
        if not isinstance(result, str):
            return
        ctx = _ctx()
        s = db.get(ctx, 'shipment', result)
        if s['state'] not in (states.S_CREATED, states.S_LOADING):
            return
        ops = db.list_(ctx, 'operation', {'migration_id': migration_id,
                                          'kind': 'export'})
        if ops:
            return      # devices hold data: kept for the retry
        for d in db.devices_of(ctx, s['id']):
            db.transition(ctx, 'device', d['id'], 'erase')
            db.transition(ctx, 'device', d['id'], 'reuse',
                          values={'shipment_id': None,
                                  'index_in_set': None})
        custody.destroy_key(ctx, s, 'export never began')
        db.transition(ctx, 'shipment', s['id'], 'erase')


def _engine_params(ctx, m, s):
    devices = db.devices_of(ctx, s['id'])
    return {'shipment_id': s['name'], 'key_ref': s['key_ref'],
            'images': _specs(m), 'snapshot': m['base_snapshot'],
            'devices': [d['path'] for d in devices],
            'parity': s['parity']}


class Export(Prepare):

    def run(self, ctx, m, generation):
        if m['state'] != states.EXPORTING:
            return
        s = Pack()._current(ctx, m)
        if s['state'] == states.S_LOADING:
            self.op(ctx, m, generation, m['source_terminal_id'], 'export',
                    '%s.export.%s' % (m['id'], s['name']),
                    _engine_params(ctx, m, s))
            for d in db.devices_of(ctx, s['id']):
                if d['state'] == states.D_ASSIGNED:
                    db.transition(ctx, 'device', d['id'], 'write')
        if m['options'].get('consolidate'):
            step(ctx, m, 'consolidate')


class Consolidate(Prepare):
    """Refresh the devices to a newer snapshot right before shipping."""

    def run(self, ctx, m, generation):
        if m['state'] != states.CONSOLIDATING:
            return
        s = Pack()._current(ctx, m)
        snap = 'fedex-%s-c1' % short(m['id'])
        params = dict(_engine_params(ctx, m, s), snapshot=snap,
                      create_snapshot=True)
        self.op(ctx, m, generation, m['source_terminal_id'], 'consolidate',
                '%s.consolidate.%s' % (m['id'], s['name']), params)
        db.update(ctx, 'migration', m['id'], {'base_snapshot': snap,
                                              'last_snapshot': snap})


class Seal(Prepare):

    def run(self, ctx, m, generation):
        if m['state'] not in (states.EXPORTING, states.CONSOLIDATING):
            return
        s = Pack()._current(ctx, m)
        result = self.op(ctx, m, generation, m['source_terminal_id'],
                         'seal', '%s.seal.%s' % (m['id'], s['name']),
                         _engine_params(ctx, m, s))
        if s['state'] == states.S_LOADING:
            db.transition(ctx, 'shipment', s['id'], 'seal', values={
                'manifest_digest': result['manifest_digest'],
                'seal_digest': result['seal_digest']},
                details={'labels': result['labels']})
        for d in db.devices_of(ctx, s['id']):
            if d['state'] == states.D_WRITTEN:
                db.transition(ctx, 'device', d['id'], 'seal')
        step(ctx, m, 'seal', values={'bytes_done': m['bytes_total']})


class Dispatch(Prepare):
    """Give the sealed shipment to its courier; the flow ends (parks)."""

    def run(self, ctx, m, generation):
        s = Pack()._current(ctx, m)
        if s is None or s['state'] != states.S_SEALED:
            return
        courier = couriers.get(s['carrier'])
        tracking = courier.dispatch(ctx, s)
        if tracking and tracking != s['tracking_number']:
            db.update(ctx, 'shipment', s['id'],
                      {'tracking_number': tracking})
        db.add_event(ctx, 'migration', m['id'], 'custody',
                     'shipment %s sealed, given to courier %s%s; the '
                     'migration waits for its delivery' % (
                         s['name'], s['carrier'],
                         ' (tracking %s)' % tracking if tracking else ''),
                     migration_id=m['id'])


# --- receive: DELIVERED .. CATCHING_UP ------------------------------------------

class Receive(PhaseTask):
    phase = 'receive'
    allowed = (states.DELIVERED, states.IMPORTING)


class BeginReceive(Begin, Receive):
    pass


def _delivered_shipment(ctx, m):
    for sid in sorted({v['shipment_id'] for v in m['volumes']
                       if v['shipment_id']}):
        s = db.get(ctx, 'shipment', sid)
        if s['state'] in (states.S_DELIVERED, states.S_VERIFIED,
                          states.S_IMPORTED, states.S_TAMPERED):
            return s
    raise exception.ManagerError(reason='migration %s has no delivered '
                                 'shipment' % m['id'])


def _seal_record(ctx, m, s):
    op = db.get(ctx, 'operation', '%s.seal.%s' % (m['id'], s['name']))
    return op['result']


def _paths_at(ctx, s, terminal_id):
    return [d['path'] for d in db.devices_of(ctx, s['id'])
            if d['terminal_id'] == terminal_id and d['path']]


class Custody(Receive):
    """Wait for the devices at the destination, then the custody check."""

    def run(self, ctx, m, generation):
        s = _delivered_shipment(ctx, m)
        if s['state'] != states.S_DELIVERED:
            if s['state'] == states.S_TAMPERED:
                raise exception.CustodyMismatch(
                    shipment=s['name'], reason='the shipment is TAMPERED')
            return
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
                             'verify', '%s.verify.%s' % (m['id'], s['name']),
                             params)
        except exception.OperationFailed as e:
            if 'CustodyMismatch' in str(e) or 'Verification' in str(e):
                db.transition(ctx, 'shipment', s['id'], 'tamper',
                              event_kind='custody', message=str(e)[:2000])
                custody.destroy_key(ctx, s, 'shipment tampered')
                raise exception.CustodyMismatch(
                    shipment=s['name'], reason='%s; re-ship it (reship) or '
                    'seed over the WAN' % e)
            raise
        for d in db.devices_of(ctx, s['id']):
            if d['state'] == states.D_SHIPPED:
                db.transition(ctx, 'device', d['id'], 'receive')
            if d['state'] in (states.D_SHIPPED, states.D_RECEIVED):
                db.transition(ctx, 'device', d['id'], 'verify')
        db.transition(ctx, 'shipment', s['id'], 'verify',
                      event_kind='custody', details={
                          'missing': report.get('missing_serials'),
                          'repaired_chunks': report.get('repaired_chunks')},
                      message='custody check passed: serials, seal and '
                      'every chunk match the manifest')


class Import(Receive):

    def run(self, ctx, m, generation):
        m = step(ctx, m, 'import')
        if m['state'] != states.IMPORTING:
            return
        s = _delivered_shipment(ctx, m)
        pool_map = {}
        for v in m['volumes']:
            pool_map[v['source_image'].split('/')[0]] = \
                v['dest_image'].split('/')[0]
        params = {'shipment_id': s['name'], 'key_ref': s['key_ref'],
                  'devices': _paths_at(ctx, s, m['dest_terminal_id']),
                  'manifest_digest': s['manifest_digest'],
                  'pool_map': pool_map}
        self.op(ctx, m, generation, m['dest_terminal_id'], 'import',
                '%s.import.%s' % (m['id'], s['name']), params)
        if s['state'] == states.S_VERIFIED:
            db.transition(ctx, 'shipment', s['id'], 'import')
        step(ctx, m, 'catch_up')
        jobs.post(ctx, m['id'], 'catchup')


# --- catch-up rounds --------------------------------------------------------------

def round_params(ctx, m, s):
    dest = _terminal(ctx, m['dest_terminal_id'])
    return {'shipment_id': s['name'], 'images': _specs(m),
            'base': m['last_snapshot'],
            'peer': {'name': dest['name'],
                     'address': dest['lsrp_address']},
            'rate_cap': options_mod.rate_cap(m['options'])}


def _shipment_of(ctx, m):
    for sid in sorted({v['shipment_id'] for v in m['volumes']
                       if v['shipment_id']}):
        return db.get(ctx, 'shipment', sid)
    raise exception.ManagerError(reason='migration %s has no shipment'
                                 % m['id'])


def one_round(task_, ctx, m, generation, kind='catchup_round'):
    s = _shipment_of(ctx, m)
    number = (m['rounds'] or 0) + 1
    params = dict(round_params(ctx, m, s), number=number)
    result = task_.op(ctx, m, generation, m['source_terminal_id'], kind,
                      '%s.%s.%d' % (m['id'], kind, number), params)
    values = {'rounds': number, 'last_snapshot': result['snapshot'],
              'last_round_bytes': result['wire_bytes'],
              'rate': result.get('wire_rate')}
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
        devices = db.devices_of(ctx, sid)
        by_terminal = {}
        for d in devices:
            if d['state'] not in (states.D_ERASED, states.D_MISSING,
                                  states.D_SHIPPED) and d['terminal_id']:
                by_terminal.setdefault(d['terminal_id'], []).append(d)
        for terminal_id, devs in sorted(by_terminal.items()):
            task_.op(ctx, m, generation, terminal_id, 'erase',
                     '%s.erase.%s.%s' % (m['id'], s['name'],
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
             {'images': images, 'prefix': 'fedex-%s-' % short(m['id'])})


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


class CleanUpAbort(Abort):
    """Devices erased, keys destroyed, snapshots removed; VM untouched."""

    def run(self, ctx, m, generation):
        _erase_shipments(self, ctx, m, generation, 'migration aborted')
        _remove_snapshots(self, ctx, m, generation, m['source_terminal_id'],
                          _specs(m))
        if db.list_(ctx, 'operation', {'migration_id': m['id'],
                                       'kind': 'import'}):
            # The destination's copies are ours (preflight refuses an
            # image that exists there): an abort leaves nothing behind.
            self.op(ctx, m, generation, m['dest_terminal_id'],
                    'remove_images', '%s.remove_images' % m['id'],
                    {'images': [v['dest_image'] for v in m['volumes']],
                     'prefix': 'fedex-%s-' % short(m['id'])})
        cinder.unmark(m)
        m = step(ctx, m, 'aborted', values={'finished_at': db.now()})
