"""The cutover, as Nova (or the sandbox's stand-in) and operators see it.

Approved (or automatic) and in its window, a READY_FOR_CUTOVER migration
may start its cutover; the final delta runs while the VM is paused, and
Nova reports the end: COMPLETED, or ROLLED_BACK and catching up again.
"""

import contextlib

from oslo_config import cfg
from oslo_log import log as logging
import sqlalchemy as sa

from fedex_manager.actions import forecast as forecast_mod
from fedex_manager.actions import lifecycle
from fedex_manager.actions import progress
from fedex_manager import cinder
from fedex_manager.db import api as db
from fedex_manager.db import models
from fedex_manager import jobs
from fedex_manager import options as options_mod
from fedex_manager import opts
from fedex_manager import planner
from fedex_manager import states
from fedex_manager import waves
from lsrp import exception

CONF = cfg.CONF
LOG = logging.getLogger(__name__)
APPROVED = 'cutover approved'
# The event of a server deleted in Nova while its migration cut over (no
# abort then): a rollback of that cutover aborts the migration.
DELETED_IN_CUTOVER = 'server deleted in Nova during the cutover'


def migration_approve_cutover(ctx, migration):
    m = db.get(ctx, 'migration', migration)
    if m['state'] not in (states.READY_FOR_CUTOVER, states.CATCHING_UP,
                          states.ROLLED_BACK) and \
            m['state'] not in states.MIGRATION_STABLE[:4]:
        raise exception.InvalidTransition(
            kind='migration', id=m['id'], current=m['state'],
            target=states.CUTTING_OVER,
            reason='the cutover can no longer be approved')
    m = db.update(ctx, 'migration', m['id'], {'cutover_approved': True})
    db.add_event(ctx, 'migration', m['id'], 'config', APPROVED,
                 migration_id=m['id'])
    return progress.annotate(m)


def cutover_max_attempts():
    """[conductor] cutover_max_attempts, in every process that calls us.

    fedex-api and ``fedex-sandbox demo`` read it too, and register only the
    options of their own: registering the same options again is a no-op.
    """
    CONF.register_opts(opts.conductor_opts, group='conductor')
    return CONF.conductor.cutover_max_attempts


def cutover_ready(ctx, migration):
    """For Nova: may the cutover start now? (state, approval, window)."""
    m = db.get(ctx, 'migration', migration)
    reasons = []
    if m['state'] not in (states.READY_FOR_CUTOVER, states.ROLLED_BACK):
        reasons.append('state is %s, not READY_FOR_CUTOVER' % m['state'])
    if m['options'].get('cutover') == 'approved' and \
            not m['cutover_approved']:
        reasons.append('the cutover is not approved')
    rollbacks = cutover_rollbacks(ctx, m)
    if rollbacks >= cutover_max_attempts():
        reasons.append(
            'the cutover rolled back %d times since it was last approved '
            '([conductor] cutover_max_attempts = %d): approve it again '
            '(openstack fedex migration cutover %s)' % (
                rollbacks, cutover_max_attempts(), m['id']))
    if not options_mod.in_cutover_window(m['options']):
        reasons.append('outside the cutover window %s-%s UTC' % (
            m['options']['cutover_window']['start'],
            m['options']['cutover_window']['end']))
    # A wave's members take turns (max_parallel_cutovers), the longest
    # cutovers first.
    reasons += waves.cutover_reasons(
        ctx, m, will_start=lambda x: will_start(ctx, x),
        hold_seconds=CONF.conductor.longest_cutover_first_wait)
    return {'ready': not reasons, 'reasons': reasons, 'state': m['state'],
            'last_round_bytes': m['last_round_bytes'],
            'downtime_budget': m['options'].get('downtime_budget')}


def cutover_rollbacks(ctx, m):
    """Rollbacks of the cutover since the operator last approved it."""
    count = 0
    for e in db.events(ctx, {'migration_id': m['id']}):
        if e['kind'] == 'config' and e['message'] == APPROVED:
            count = 0
        elif e['to_state'] == states.ROLLED_BACK:
            count += 1
    return count


def migration_cutover_start(ctx, migration):
    """Nova (or the stand-in) starts the cutover: READY -> CUTTING_OVER."""
    ready = cutover_ready(ctx, migration)
    if not ready['ready']:
        m = db.get(ctx, 'migration', migration)
        raise exception.InvalidTransition(
            kind='migration', id=m['id'], current=m['state'],
            target=states.CUTTING_OVER, reason='; '.join(ready['reasons']))
    m = db.transition(ctx, 'migration', migration, 'cutover')
    # The cutover phase runs the final delta (the VM paused by Nova).
    jobs.post(ctx, m['id'], 'cutover')
    return progress.annotate(db.get(ctx, 'migration', m['id']))


def final_delta_status(ctx, migration):
    """For Nova, after migration_cutover_start: is the final delta in?

    Returns {"done": bool, "failed": bool, "snapshot": the snapshot both
    sites now hold, "error": ...}. When done, the destination images equal
    the source at ``snapshot``: Nova may switch the VM over, then call
    migration_cutover_finish.
    """
    m = db.get(ctx, 'migration', migration)
    ops = [o for o in db.list_(ctx, 'operation', {
        'migration_id': m['id'], 'kind': 'final_delta'},
        sort_key='created_at', sort_dir='desc')]
    op = ops[0] if ops else None
    done = bool(op and op['state'] == 'DONE')
    return {'done': done, 'failed': bool(op and op['state'] == 'ERROR'),
            'snapshot': (op['result'] or {}).get('snapshot') if done
            else None, 'error': op and op['error'], 'state': m['state']}


def migration_cutover_finish(ctx, migration, success=True, reason=None,
                             message=None):
    """Nova reports the cutover's end: COMPLETED, or ROLLED_BACK.

    Rolled back: the VM still runs at the source; catch-up goes on.
    ``message``: the COMPLETED event's, when it says who saw the end.
    """
    if success:
        volumes_to_destination(ctx, migration)
        m = db.transition(ctx, 'migration', migration, 'complete',
                          values={'finished_at': db.now()},
                          message=message)
        cleanup_when_due(ctx, m['id'])
        start_waiting_members(ctx, m)
        return progress.annotate(db.get(ctx, 'migration', m['id']))
    m = db.transition(ctx, 'migration', migration, 'rollback',
                      values={'last_error': reason},
                      message='cutover rolled back: %s' % reason)
    deleted = _deleted_in_cutover(ctx, m)
    if deleted:
        m = lifecycle.migration_abort(ctx, m['id'], reason=deleted)
        start_waiting_members(ctx, m)
        return m
    rollbacks = cutover_rollbacks(ctx, m)
    if rollbacks >= cutover_max_attempts():
        db.add_event(
            ctx, 'migration', m['id'], 'cutover',
            'no more automatic cutovers: %d rollbacks since the last '
            'approval ([conductor] cutover_max_attempts); catch-up goes on '
            'and the cutover waits for the operator\'s approval (openstack '
            'fedex migration cutover %s)' % (rollbacks, m['id']),
            migration_id=m['id'])
    m = db.transition(ctx, 'migration', m['id'], 'catch_up')
    jobs.post(ctx, m['id'], 'catchup')
    start_waiting_members(ctx, m)
    return progress.annotate(m)


def cutover_starts(events):
    """When each cutover of a migration began (ISO), from its events."""
    return [e['created_at'] for e in events
            if e['to_state'] == states.CUTTING_OVER]


def _deleted_in_cutover(ctx, m):
    """The event of a server deleted during the last cutover, or None."""
    events = db.events(ctx, {'migration_id': m['id']})
    began = max(cutover_starts(events), default=None)
    for e in events:
        if began and e['created_at'] >= began and \
                e['message'].startswith(DELETED_IN_CUTOVER):
            return e['message']
    return None


def starts_by_itself(m):
    """Whether the manager starts this cutover (else Nova's caller does).

    An automatic cutover; with Nova, an approved one too (without Nova
    the caller that approved it plays Nova and starts it).
    """
    return (m['options'].get('cutover') == 'automatic' or
            CONF.conductor.compute_driver == 'nova' and
            m['cutover_approved'])


def will_start(ctx, m):
    """Whether the manager will start ``m``'s cutover once it is ready."""
    return starts_by_itself(m) and \
        cutover_rollbacks(ctx, m) < cutover_max_attempts()


def start_in_turn(ctx, m):
    """Start ``m``'s cutover if it is ready; True if it started.

    A wave's member under its wave's lock (the poster's hold, a ZooKeeper
    lock): the slots free (:func:`fedex_manager.waves.cutover_reasons`)
    are counted and taken by one process at a time, the sweeper or whoever
    ends a cutover (:func:`start_waiting_members`).
    """
    wave_id = waves.wave_of(m)
    with jobs.holding(wave_id) if wave_id else contextlib.nullcontext():
        if not cutover_ready(ctx, m['id'])['ready']:
            return False
        migration_cutover_start(ctx, m['id'])
        return True


def start_waiting_members(ctx, m):
    """A wave member's cutover ended: its wave's next ones started.

    Also called when a member's cutover starts: members that left it
    their slot (``[conductor] longest_cutover_first_wait``) take the
    slots still free. The sweeper starts them at its turn
    (``ready_for_cutover``), after its other jobs: in the 8-server wave a
    freed slot waited 37-111 s for it
    (doc/source/manager.rst, "The eight-server wave"). Whoever records the
    end (fedex-api on nova_fedex's report, the conductor's read-back of
    Nova's records) starts them at once; the sweeper stays the safety
    net. Never raises: a start that fails is the sweeper's to do.
    """
    wave_id = waves.wave_of(m)
    if not wave_id:
        return []
    CONF.register_opts(opts.conductor_opts, group='conductor')
    started = []
    for x in waves.by_length(waves.members(ctx, wave_id)):
        if x['state'] not in (states.READY_FOR_CUTOVER,
                              states.ROLLED_BACK) or \
                not starts_by_itself(x):
            continue
        try:
            if not start_in_turn(ctx, x):
                continue    # no slot left, outside the window, ...
        except Exception as e:  # noqa: the sweeper starts it at its turn
            LOG.warning('wave %s: starting the cutover of %s after %s\'s '
                        'failed: %s', wave_id, x['id'], m['id'], e)
            continue
        started.append(x['id'])
    if started:
        LOG.info('wave %s: after %s (%s), started %s', wave_id,
                 m['id'], m['state'], ', '.join(started))
    return started


# nova_fedex's reports after ``completed``: the final state compared.
FINAL_STATE_REPORTS = ('final_state_checked', 'final_state_mismatch',
                       'final_state_unchecked')
# nova_fedex's [fedex] final_state_check_timeout default: how long a
# nova_fedex whose ``completed`` report does not give its own may compare.
FINAL_STATE_CHECK_TIMEOUT = 900
# Seconds past that timeout its report (sent after it) is waited for.
FINAL_STATE_REPORT_GRACE = 120


def _report_of(e):
    return (e['details'] or {}).get('event')


def final_state_pending(ctx, m):
    """True while nova_fedex may still compare the final state.

    After its ``completed`` report nova_fedex reads A's image and B's
    record of the state at the resume whole (at most its ``[fedex]
    final_state_check_timeout``, which that report gives) and reports one
    of FINAL_STATE_REPORTS. The cleanup removes that record: it waits for
    the report, or for the timeout and a grace to pass. A COMPLETED
    without nova_fedex's report (``compute_driver = none``, Nova's
    records read back) waits for nothing.
    """
    reports = [e for e in db.events(ctx, {'migration_id': m['id'],
                                          'kind': 'cutover'})
               if _report_of(e)]
    ends = [e for e in reports if _report_of(e) == 'completed']
    if not ends:
        return False
    end = ends[-1]
    if any(e['id'] > end['id'] and _report_of(e) in FINAL_STATE_REPORTS
           for e in reports):
        return False
    timeout = end['details'].get('final_state_check_timeout',
                                 FINAL_STATE_CHECK_TIMEOUT)
    if not timeout:
        return False
    age = (db.now() - db.utcfromiso(end['created_at'])).total_seconds()
    return age < timeout + FINAL_STATE_REPORT_GRACE


def _cleanup_posted(ctx, m):
    """A cleanup was posted (or tried) since the migration's COMPLETED."""
    completed = None
    for e in db.events(ctx, {'migration_id': m['id']}):
        if e['to_state'] == states.COMPLETED:
            completed = e['id']
        elif completed is not None and e['kind'] == 'job' and \
                e['message'].startswith('phase cleanup ('):
            return True
    return False


def cleanup_when_due(ctx, migration):
    """Post the cleanup of a COMPLETED migration kept for no days.

    By whoever records COMPLETED (fedex-api on nova_fedex's report, the
    cutover phase without Nova, the sweeper's read-back of Nova's
    records), or nova_fedex's report of the final state that COMPLETED
    waited for (:func:`final_state_pending`): at once, not at the
    sweeper's next turn (one thread of one conductor, one migration
    after another: doc/source/manager.rst, "Scale"). Once: not when a
    cleanup was posted (or its post tried) since COMPLETED, checked under
    the migration's post lock. A post lost (ZooKeeper unreachable) or a
    retention of days is the sweeper's (``completed``), which also
    unlocks the servers of a migration kept; the cleanup phase unlocks
    them first. Returns the job id, or None.
    """
    m = db.get(ctx, 'migration', migration)
    if m['state'] != states.COMPLETED or \
            m['options'].get('retention_days', 0) != 0 or \
            final_state_pending(ctx, m):
        return None

    def not_yet(row):
        return row['state'] == states.COMPLETED and \
            not _cleanup_posted(ctx, row)
    return jobs.post(ctx, m['id'], 'cleanup', only_if=not_yet)


def volumes_to_destination(ctx, migration):
    """Cinder volumes of the migration become the destination site's.

    The server already runs at B: a failure here does not undo that, it is
    recorded for the operator (``cinder-fedex-reconcile`` finishes it).
    """
    m = db.get(ctx, 'migration', migration)
    site = db.get(ctx, 'site', m['dest_site_id'])['name']
    try:
        # Moved already (a second caller) is no error, and no event.
        moved = cinder.cutover(m, site)
    except Exception as e:
        LOG.error('migration %s: volumes not moved in Cinder: %s', m['id'], e)
        db.add_event(ctx, 'migration', m['id'], 'cutover',
                     'Cinder ownership move failed (run '
                     'cinder-fedex-reconcile --apply): %s' % e,
                     migration_id=m['id'])
    else:
        if moved:
            db.add_event(ctx, 'migration', m['id'], 'cutover',
                         'Cinder volumes %s belong to site %s' % (
                             ', '.join(moved), site),
                         migration_id=m['id'])


# The bound of a memory copy: twice its forecast, and a minute more (the
# forecast is a model; a copy far beyond it will not end well either).
COPY_TIMEOUT_FACTOR = 2.0
COPY_TIMEOUT_MARGIN = 60.0
MIB = float(1 << 20)


def _memory_link(ctx, m):
    """(bytes/s, round trip, explicit, notes) of the link the memory takes.

    ``[planner] wan_link`` for the pair of sites (else the default, which
    is not explicit), capped by the migration's rate cap in force now: the
    memory stream shares the WAN with the catch-up, and QEMU is capped at
    it when it is explicit.
    """
    # Here: plans reads Ceph and couriers, which the cutover's other
    # callers need not import.
    from fedex_manager.actions import plans

    forecast_mod.register_opts(CONF)
    src = db.get(ctx, 'site', m['source_site_id'])['name']
    dst = db.get(ctx, 'site', m['dest_site_id'])['name']
    cap = options_mod.rate_cap(m['options'])
    notes = []
    rate, rtt = plans.link_of(src, dst, notes, cap)
    named = any(len(w) in (3, 4) and {w[0], w[1]} == {src, dst}
                for w in (line.split() for line in CONF.planner.wan_link))
    if cap and cap < rate:
        rate = float(cap)
        notes.append('the memory copy capped at the rate cap.')
    return rate, rtt, bool(named or cap), notes


def convergence(ctx, migration, figures):
    """The check before a cutover's pause: how the memory crosses, or not.

    ``figures``: what nova_fedex measured of the guest at the source, just
    before the copy (``dirty_rate``, ``working_set``, ``memory``,
    ``resident``: bytes and bytes/s). The forecast is the planner's
    (:func:`fedex_manager.planner.memory_forecast`): the memory over the
    link (``[planner] wan_link`` or the rate cap), the rest of the pause
    (``[planner] pause_fixed``, the last round's bytes over the link as the
    final delta, a round trip) against the migration's ``downtime_budget``,
    and its ``convergence`` policy. Returns the verdict nova_fedex applies
    (``means``: pre-copy, auto-converge or None, refused; ``reason``;
    ``max_bandwidth``: QEMU's cap in bytes/s, only for a link stated in
    the configuration or the rate cap; ``copy_timeout``: the bound of the
    copy) with the forecast.
    """
    m = db.get(ctx, 'migration', migration)
    conf = CONF.planner
    rate, rtt, explicit, notes = _memory_link(ctx, m)
    opts_ = m['options']
    budget = opts_.get('downtime_budget') or None
    policy = opts_.get('convergence') or planner.AUTO_CONVERGE
    delta = m['last_round_bytes'] or 0
    fixed = planner.parse_duration(conf.pause_fixed, 'pause_fixed')
    other = fixed + delta / rate + rtt
    memory = figures.get('resident') or figures['memory']
    # A rate under the sampling's resolution reads 0: counted as the
    # resolution, the most it may be (a 0 would forecast an idle guest
    # on any link, however slow).
    dirty = max(figures['dirty_rate'], figures.get('resolution') or 0.0)
    max_downtime = planner.parse_duration(conf.memory_downtime,
                                          'memory_downtime')
    f = planner.memory_forecast(
        memory, dirty, rate, max_downtime,
        other_pause=other, budget=budget, policy=policy,
        working_set=figures.get('working_set'))
    timeout = None
    if f.copy_seconds is not None:
        timeout = int(COPY_TIMEOUT_FACTOR * f.copy_seconds +
                      COPY_TIMEOUT_MARGIN)
    return {'means': f.means, 'reason': f.reason, 'policy': policy,
            'budget': budget, 'link_rate': rate, 'round_trip': rtt,
            'max_bandwidth': rate if explicit else None,
            'copy_timeout': timeout if f.means else None,
            # The switchover's limit the forecast counts on: nova_fedex
            # starts Nova's downtime steps there.
            'max_downtime': max_downtime,
            'link': ' '.join(notes), 'forecast': f.as_dict(),
            'measured': figures}


def describe_convergence(server_id, verdict):
    """One line for the event: measured, forecast, verdict."""
    f, got = verdict['forecast'], verdict['measured']
    samples = ', '.join('%.0f' % (x / MIB) for x in got.get('samples', []))
    if got['dirty_rate'] < f['dirty_rate']:
        rate = 'less than %.1f MiB/s (the sampling\'s resolution)' % (
            f['dirty_rate'] / MIB)
    else:
        rate = '%.1f MiB/s' % (got['dirty_rate'] / MIB)
    text = ('server %s dirties %s (median of %s; working set %.0f '
            'MiB; %.0f MiB to copy), link %.1f MiB/s: ' % (
                server_id, rate, samples or '?',
                (got.get('working_set') or 0) / MIB, f['memory'] / MIB,
                verdict['link_rate'] / MIB))
    if verdict['means']:
        text += ('%s, memory copy %.1f s (bound %d s), expected pause %.2f s'
                 % (verdict['means'], f['copy_seconds'],
                    verdict['copy_timeout'], f['pause_seconds']))
        if verdict['means'] == planner.AUTO_CONVERGE:
            text += (', vCPUs throttled up to %d %%, because %s' % (
                round(f['throttle'] * 100), verdict['reason']))
        return text
    return text + 'refused before the pause: %s' % verdict['reason']


def record_convergence(ctx, migration, server_id, figures, host=None):
    """nova_fedex's measure of a guest: the verdict, kept and told.

    Kept with the migration's server (``servers[].convergence``, which
    the cutover plan hands to nova_fedex) and in an event.
    """
    m = db.get(ctx, 'migration', migration)
    if not any(s['server_id'] == server_id for s in m['servers']):
        raise exception.NotFound(kind='server of migration %s' % m['id'],
                                 id=server_id)
    verdict = convergence(ctx, m['id'], figures)
    verdict['measured_at'] = db.now().isoformat() + 'Z'
    verdict['host'] = host
    with db.writer(ctx) as session:
        row = session.execute(sa.select(models.MigrationServer).where(
            models.MigrationServer.migration_id == m['id'],
            models.MigrationServer.server_id == server_id)).scalars().first()
        row.convergence = verdict
    db.add_event(ctx, 'migration', m['id'], 'cutover',
                 'nova: dirty_rate (reported by %s): %s' % (
                     host or '?', describe_convergence(server_id, verdict)),
                 migration_id=m['id'],
                 details=dict(verdict, event='dirty_rate',
                              server_id=server_id))
    return verdict
