"""What every phase's tasks share.

The base classes (:class:`PhaseTask`, and :class:`Begin`, whose revert
records a phase's failure), the guards that make a re-run task find what
is already done (:func:`guard`, :func:`step`, :func:`move`,
:func:`advance`), :func:`park` (end a job that would wait for the outside
world), :func:`run_op` (start or find an operation on a terminal and wait
for its end), and the look-ups and Nova locks several phases use.
"""

from concurrent import futures
import threading
import time

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging
from taskflow import task

from fedex_manager import context as context_mod
from fedex_manager.db import api as db
from fedex_manager.flows import legacy
from fedex_manager.flows.tasks import Parked
from fedex_manager.flows.tasks import Superseded
from fedex_manager import nova_lock
from fedex_manager import rpc
from fedex_manager import states
from lsrp import exception

CONF = cfg.CONF
LOG = logging.getLogger(__name__)


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
                db.operation_take_status(ctx, op_id, rec)
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
            db.operation_take_status(ctx, op_id, rec)
        if ended.wait(poll):
            ended.clear()


class PhaseTask(task.Task):
    """A task of phase ``phase``; takes migration_id and generation."""

    phase = None
    allowed = None

    def __init__(self, **kw):
        super().__init__(name='%s.%s' % (self.phase, type(self).__name__),
                         **kw)

    def execute(self, migration_id, generation):
        ctx = _ctx()
        try:
            m = guard(ctx, migration_id, generation, self.phase,
                      self.allowed)
            return self.run(ctx, m, generation)
        except Exception as e:
            if not db.unreachable(e):
                raise
            # MariaDB restarting (or unreachable a moment): a phase is
            # idempotent, as after a conductor's death, so it parks and a
            # sweep posts it again, where it used to fail the migration
            # with the driver's "Lost connection to MySQL server".
            why = ('the database was unreachable (%s); the phase starts '
                   'again at the next sweep' % e)
            try:
                db.add_event(ctx, 'migration', migration_id, 'error', why,
                             migration_id=migration_id)
            except Exception:   # noqa: still unreachable: the log says it
                LOG.warning('migration %s: %s', migration_id, why)
            raise Parked(id=migration_id, phase=self.phase,
                         generation=generation, reason=why) from e

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
            if f.check(Superseded, legacy.SUPERSEDED):
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


def park(ctx, m, generation, phase, why, kind='error', then=None):
    """End the job: a worker waiting for the outside world starves others.

    (Each conductor runs [conductor] max_jobs phases at once: phases
    sleeping for devices once held them all while delivered shipments
    waited for a worker to import them.) ``why`` is an event of ``kind``,
    once while it stays the same; ``then``, what moves the migration on
    (default: a sweep posts the phase again).
    """
    said = db.events(ctx, {'migration_id': m['id'], 'kind': kind})
    if not said or said[-1]['message'] != why:
        db.add_event(ctx, 'migration', m['id'], kind, why,
                     migration_id=m['id'])
    extra = {'then': then} if then else {}
    raise Parked(id=m['id'], phase=phase, generation=generation,
                 reason=why, **extra)


def _group_volumes(members):
    return [v for x in members for v in x['volumes']]


def _shipments_of(ctx, m):
    """The shipments carrying m's images, by name."""
    return sorted((db.get(ctx, 'shipment', sid) for sid in {
        v['shipment_id'] for v in m['volumes'] if v['shipment_id']}),
        key=lambda s: s['name'])


def _shipment_op(s, kind):
    """A shipment's operation: one id, whichever migration runs it."""
    return '%s.%s' % (s['name'], kind)


def _op_exists(ctx, op_id):
    try:
        return db.get(ctx, 'operation', op_id)
    except exception.NotFound:
        return None


# Nova's and Cinder's calls made for a wave's members at once (each member
# costs about 2.5 s of API round trips: 20 s before an eight-server wave's
# seed snapshot when made one after another). A few at a time, not all:
# the APIs are shared.
MEMBERS_AT_ONCE = 4


def for_each(fn, items, at_once=MEMBERS_AT_ONCE):
    """``[(result, error)]`` of ``fn(item)`` for every item, in order.

    A few calls at once, in threads; every call has ended when this
    returns. ``fn`` must not write the database: SQLite (a small
    deployment's) refuses a second writer at once when a transaction that
    read first wants to write; the caller records the results.
    """
    items = list(items)

    def call(item):
        try:
            return fn(item), None
        except Exception as e:   # noqa: handed to the caller, in order
            return None, e
    if len(items) < 2:
        return [call(item) for item in items]
    with futures.ThreadPoolExecutor(min(at_once, len(items))) as pool:
        return list(pool.map(call, items))


def first_error(outcomes):
    """Raise the first error of :func:`for_each`'s outcomes, if any."""
    for _, error in outcomes:
        if error is not None:
            raise error


def lock_servers(ctx, m):
    """Lock the migration's servers in Nova, naming it (with Nova only)."""
    first_error(lock_members(ctx, [m]))


def lock_members(ctx, members):
    """Lock the servers of each migration of a group, a few at once.

    Each migration whose servers were locked gets its event (what the
    cleanup's unlock goes by), whatever the others' outcome; returns
    :func:`for_each`'s ``[(result, error)]``, one per migration.
    """
    if not nova_lock.enabled():
        return [(None, None) for _ in members]
    whys = [nova_lock.reason(x['id'], db.get(ctx, 'site',
                                             x['dest_site_id'])['name'])
            for x in members]
    outcomes = for_each(
        lambda xw: nova_lock.lock([s['server_id'] for s in xw[0]['servers']],
                                  xw[1]),
        list(zip(members, whys)))
    for x, why, (done, error) in zip(members, whys, outcomes):
        if error is None:
            db.add_event(ctx, 'migration', x['id'], 'nova', 'servers '
                         'locked in Nova: %s' % ', '.join(
                             '%s %s' % kv for kv in sorted(done.items())),
                         migration_id=x['id'],
                         details={'locked_reason': why})
    return outcomes


def unlock_once(ctx, m):
    """unlock_servers, unless done: the events say locked, not unlocked.

    The cleanup phase's first task and the sweeper (a migration kept for
    days) both call it; whichever comes second finds it done.
    """
    if not nova_lock.enabled():
        return
    said = [e['message'] for e in db.events(
        ctx, {'migration_id': m['id'], 'kind': 'nova'})]
    if any(x.startswith('servers locked') for x in said) and not any(
            x.startswith('servers unlocked') for x in said):
        unlock_servers(ctx, m)


def unlock_servers(ctx, m):
    """Undo lock_servers (the migration ended); never raises."""
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
