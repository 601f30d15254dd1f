"""The sweeper: the conductors' periodic jobs, on futurist's periodics.

Each job is a function of ``(sweeper, ctx)`` with its own spacing
(``[conductor] sweep_interval``, or ``server_check_interval`` for the
look in Nova), counted from the end of its last run. A conductor runs
them in one thread, one at a time, in the order below when several fall
due together; each under the sweeper's ZooKeeper lock, so one conductor
sweeps at a time (a conductor that finds the lock taken skips that turn).
A job that fails is logged and runs again at its next turn; the others
run regardless.

The jobs that look at migrations leave alone one that has a job on the
board, or whose state changed less than ``sweep_interval`` ago: the grace
spares a fresh state change a round trip to ZooKeeper; whether a job is
gone is ZooKeeper's to say (:meth:`Sweeper.gone`).
"""

import datetime
import functools

from futurist import periodics
from kazoo import exceptions as kazoo_exceptions
from oslo_config import cfg
from oslo_log import log as logging

from fedex_manager.actions import cutover as cutover_actions
from fedex_manager.actions import lifecycle
from fedex_manager.actions import shipping
from fedex_manager.conductor import jobboard
from fedex_manager import context as context_mod
from fedex_manager import couriers
from fedex_manager import custody
from fedex_manager.db import api as db
from fedex_manager.flows.tasks import common as tasks_common
from fedex_manager.flows.tasks import cutover as cutover_tasks
from fedex_manager.flows.tasks import prepare as prepare_tasks
from fedex_manager import jobs
from fedex_manager import return_trip
from fedex_manager import shipments
from fedex_manager import states
from fedex_manager import waves
from lsrp import exception

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

# Working states: a phase must have a live job while a migration is there.
SWEPT = (states.REQUESTED, states.SNAPSHOTTING, states.EXPORTING,
         states.CONSOLIDATING, states.DELIVERED, states.IMPORTING,
         states.CATCHING_UP, states.ABORTING)

# The jobs in their order: (function, spacing(conf), enabled(conf)).
JOBS = []


def _sweep_interval(conf):
    return conf.conductor.sweep_interval


def _always(conf):
    return True


def job(spacing=_sweep_interval, enabled=_always):
    """Adds the function to the sweeper's jobs, after those defined before.

    ``spacing`` and ``enabled`` are read from the configuration when the
    worker is made (:func:`worker`), not at import.
    """
    def add(fn):
        JOBS.append((fn, spacing, enabled))
        return fn
    return add


class Sweeper(object):
    """What the jobs share: the jobboard, ZooKeeper and the sweeper lock."""

    def __init__(self, board, zk, name):
        self.board, self.zk, self.name = board, zk, name
        self.lock = zk.Lock('%s-sweeper' % CONF.jobboard.path, name)

    def run(self, fn):
        """Run one job, unless another conductor's job runs now."""
        if not self.lock.acquire(blocking=False):
            return
        try:
            fn(self, context_mod.admin('sweeper'))
        finally:
            self.lock.release()

    def live_jobs(self):
        """(migration, generation) of every job on the board.

        Fresh: the board's list of jobs read again from ZooKeeper (one
        ``get_children``; the details of jobs it did not know yet). Not
        through ``iterjobs``, which also reads each job's state (claimed or
        not: one or two ZooKeeper round trips per job) that the sweeper
        does not need: with 1,000 jobs on the board that took 2.4-2.7 s a
        call against 0.01-0.03 s (doc/source/manager.rst, "Scale"), and the
        sweeper calls it for every migration it posts again, one after
        another under its lock. A job removed since the read counts as live
        for this turn: the next turn posts its phase again if it stays gone.
        """
        fetch = getattr(self.board, '_fetch_jobs', None)
        if fetch is None:   # a jobboard without taskflow's ZooKeeper cache
            listed = self.board.iterjobs(ensure_fresh=True)
        else:
            listed = fetch(ensure_fresh=True)
        out = set()
        for j in listed:
            d = j.details or {}
            out.add((d.get('migration_id'), d.get('generation')))
        return out

    def quiet(self, ctx, in_states):
        """(migration, age) of those in the states with nothing running.

        No job of theirs on the board, state changed at least the grace
        ago.
        """
        live = self.live_jobs()
        now = db.now()
        grace = datetime.timedelta(seconds=CONF.conductor.sweep_interval)
        for m in db.list_(ctx, 'migration', {'state': list(in_states)}):
            age = now - db.utcfromiso(m['updated_at'])
            if (m['id'], m['generation']) in live or age < grace:
                continue
            yield m, age

    def gone(self, m, kinds=('post', 'run')):
        """True if the migration's phase really has no job.

        No job of its generation on the jobboard (a job whose conductor
        died is still there, and claimable again once that conductor's
        session expired), nobody posting one, no job of it running.
        """
        if jobboard.busy(self.zk, m['id'], kinds):
            return False
        return (m['id'], m['generation']) not in self.live_jobs()

    def repost(self, ctx, m, phase):
        """Post the phase, if the migration is still as seen, jobless."""
        if jobboard.busy(self.zk, m['id']):
            return None

        def still_gone(row):
            # Under the post lock: what changed since the job began.
            return (row['state'] == m['state'] and
                    row['generation'] == m['generation'] and
                    self.gone(row, kinds=('run',)))

        posted = jobs.post(ctx, m['id'], phase, only_if=still_gone)
        if posted:
            LOG.warning('migration %s in %s had no job: posted %s as %s',
                        m['id'], m['state'], phase, posted)
        return posted


# --- the jobs, in their order --------------------------------------------------

@job()
def repost_lost_phases(sweeper, ctx):
    """A migration in a working state whose job is gone: post its phase.

    Its post was lost, fedex-api could not reach ZooKeeper, or its phase
    parked (Pack short of devices). Not a shipment group's follower whose
    leader is being prepared: its phase would only park again (it did at
    every sweep: 192 times in the eight-server wave, doc/source/
    manager.rst); the leader moves it on, and has a job or gets one here.
    A follower whose leader is aborted (it may lead now) or FAILED is
    posted as before.
    """
    groups = {}     # (group, source terminal) -> its migrations, this turn
    for m, _ in sweeper.quiet(ctx, SWEPT):
        if m['state'] in prepare_tasks.PREPARING and shipments.group_of(m):
            key = (shipments.group_of(m), m['source_terminal_id'])
            if key not in groups:
                groups[key] = shipments.members(ctx, m)
            lead = prepare_tasks.working_leader(ctx, m, groups[key])
            if lead is not None:
                LOG.debug('migration %s in %s: left to its leader %s (%s)',
                          m['id'], m['state'], lead['id'], lead['state'])
                continue
        sweeper.repost(ctx, m, jobs.PHASE_OF_STATE[m['state']])


@job()
def ready_for_cutover(sweeper, ctx):
    """Start automatic cutovers in their window, else keep-warm rounds.

    The longest cutovers first (a wave's members with the most disks).
    """
    ready = list(sweeper.quiet(ctx, (states.READY_FOR_CUTOVER,)))
    for m, age in waves.by_length(ready, member=lambda x: x[0]):
        if cutover_actions.starts_by_itself(m) and \
                cutover_actions.start_in_turn(ctx, m):
            continue
        if age.total_seconds() >= m['options'].get('keep_warm_seconds',
                                                   600):
            sweeper.repost(ctx, m, 'keep_warm')


@job()
def cutting_over(sweeper, ctx):
    """A cutover nobody ended: its phase again, or Nova's records read."""
    for m, _ in sweeper.quiet(ctx, (states.CUTTING_OVER,)):
        if CONF.conductor.compute_driver == 'none':
            sweeper.repost(ctx, m, 'cutover')
        elif CONF.conductor.compute_driver == 'nova':
            _read_back_from_nova(ctx, m)


def _read_back_from_nova(ctx, m):
    # nova_fedex's report of the end may be lost, and Nova may fail
    # before nova_fedex runs: Nova's own records say what happened.
    try:
        did = cutover_tasks.reconcile_nova_cutover(ctx, m)
    except Exception as e:
        LOG.warning('migration %s: cannot read the cutover back from '
                    'Nova: %s', m['id'], e)
        return
    LOG.info('migration %s: cutover read back from Nova: %s', m['id'], did)


@job()
def completed(sweeper, ctx):
    """COMPLETED: servers unlocked in Nova, cleanup after the retention.

    The safety net: a migration kept for no days has its cleanup posted
    by whoever recorded COMPLETED (:func:`fedex_manager.actions.cutover.
    cleanup_when_due`); one whose job is on the board is left alone
    (:meth:`Sweeper.quiet`).
    """
    now = db.now()
    for m, _ in sweeper.quiet(ctx, (states.COMPLETED,)):
        # fedex-api records COMPLETED (nova_fedex's report); the conductor,
        # which holds the [nova] credentials, undoes the lock: here for a
        # migration kept, else in the cleanup phase (once, either way).
        tasks_common.unlock_once(ctx, m)
        days = m['options'].get('retention_days', 0)
        done = db.utcfromiso(m['finished_at']) or now
        if now - done >= datetime.timedelta(days=days) and \
                not cutover_actions.final_state_pending(ctx, m):
            sweeper.repost(ctx, m, 'cleanup')


@job()
def courier_events(sweeper, ctx):
    """The couriers' new events of shipments on the road, recorded."""
    for s in db.list_(ctx, 'shipment', {'state': [
            states.S_SEALED, states.S_HANDED_TO_CARRIER,
            states.S_IN_TRANSIT]}):
        courier = couriers.get(s['carrier'])
        for ev in courier.poll(ctx, s):
            if ev['event'] in ('deliver', 'return') and hasattr(
                    courier, 'deliver_devices'):
                # Back to the sender: at the source terminal.
                courier.deliver_devices(ctx, s, db.get(
                    ctx, 'terminal', s['dest_terminal_id' if ev[
                        'event'] == 'deliver' else 'source_terminal_id']))
            try:
                shipping.carrier_event(
                    ctx, s['id'], ev['event'], seq=ev['seq'],
                    location=ev.get('location'),
                    devices_missing=ev.get('devices_missing'))
            except exception.InvalidTransition as e:
                LOG.warning('%s', e)
            except exception.InvalidInput as e:
                # Not yet (a return before the abort ended): the
                # courier's event is sent again at the next run.
                LOG.warning('%s', e)
                break
            if hasattr(courier, 'sent'):
                courier.sent(s, ev['seq'])


@job()
def wipe_returned_devices(sweeper, ctx):
    """Devices back at the source after an abort in transit, wiped.

    After courier_events: the erase of devices whose return was recorded
    there starts in the same turn (it ends at a later one).
    """
    custody.wipe_returned(ctx)


@job()
def return_devices_home(sweeper, ctx):
    """Wiped devices away from home handed to the courier back there.

    Packs the devices an operator or ``[conductor] return_devices`` sent
    home into return consignments and dispatches them; those not back
    within ``return_timeout`` go LOST. After wipe_returned_devices: a
    device wiped there goes home in the same turn.
    """
    return_trip.send_home(ctx)


@job(spacing=lambda conf: conf.conductor.server_check_interval,
     enabled=lambda conf: conf.conductor.compute_driver == 'nova')
def deleted_servers(sweeper, ctx):
    """A server deleted in Nova during its migration aborts it.

    One GET per server: at its own spacing, ``server_check_interval``.
    """
    from fedex_manager import nova_lock

    for m in db.list_(ctx, 'migration', {'state': [
            s for s in states.ABORTABLE if s != states.REQUESTED]}):
        try:
            gone = nova_lock.gone([s['server_id'] for s in m['servers']])
        except Exception as e:
            LOG.warning('cannot ask Nova about the servers of migration '
                        '%s: %s', m['id'], e)
            return
        if gone:
            LOG.warning('migration %s: server(s) %s deleted in Nova: '
                        'aborting it', m['id'], ', '.join(gone))
            lifecycle.migration_abort(
                ctx, m['id'], reason='server %s deleted in Nova' %
                ', '.join(gone))


@job()
def remove_ended_locks(sweeper, ctx):
    """The lock znodes of migrations that ended, removed.

    ``post-<id>`` and ``run-<id>`` under ``<[jobboard] path>-locks``:
    else two empty znodes stay for every migration ever run. One with
    a contender (its lock held: a phase still ending, a creator whose
    row is not written yet) is left to a later run; a lock taken
    again later (the cleanup of a COMPLETED migration) is made again
    by kazoo.
    """
    root = '%s-locks' % CONF.jobboard.path
    try:
        names = sweeper.zk.get_children(root)
    except kazoo_exceptions.NoNodeError:
        return
    ids = {n.partition('-')[2] for n in names}
    if not ids:
        return
    rows = {m['id']: m['state'] for m in db.list_(
        ctx, 'migration', {'id': sorted(ids)})}
    for name in names:
        state = rows.get(name.partition('-')[2])
        if state not in (None, states.COMPLETED) + states.MIGRATION_FINAL:
            continue
        try:
            sweeper.zk.delete('%s/%s' % (root, name))
        except (kazoo_exceptions.NotEmptyError,
                kazoo_exceptions.NoNodeError):
            pass


# --- the worker ----------------------------------------------------------------

def callables(sweeper, conf=CONF):
    """futurist's ``(callback, args, kwargs)`` of the enabled jobs."""
    out = []
    for fn, spacing, enabled in JOBS:
        if not enabled(conf):
            continue

        @periodics.periodic(spacing=spacing(conf))
        @functools.wraps(fn)
        def run(fn=fn):
            sweeper.run(fn)
        out.append((run, (), {}))
    return out


def worker(sweeper, conf=CONF):
    """The periodic worker of the sweeper's jobs; ``start()`` blocks."""
    # Spacing counted from the end of a run, as the sweep loop waited
    # sweep_interval after each sweep; the first run after one spacing.
    return periodics.PeriodicWorker(callables(sweeper, conf), log=LOG,
                                    schedule_strategy='last_finished')
