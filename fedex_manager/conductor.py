"""``fedex-conductor``: runs the migrations' phases, any number at once.

Three parts in one oslo.service process:

* a taskflow conductor (non-blocking, ``[conductor] max_jobs`` at once)
  claiming jobs from the jobboard on ZooKeeper. A claim is an ephemeral
  znode: when a conductor is killed (``kill -9``) its ZooKeeper session
  expires after ``[jobboard] session_timeout`` seconds, the job is free
  again, another conductor claims it and the flow resumes from the task
  after the last one saved in the flow's logbook (taskflow's SQL
  persistence, in the manager's database). The task that was running is run
  again: every task is idempotent (``fedex_manager.flows.tasks``).
* an RPC server on ``fedex-manager``: the terminals' progress, completion
  and heartbeats, written into the database.
* a sweeper (one at a time, under a ZooKeeper lock): posts the phase of a
  migration that has no job (its post was lost, or the API could not
  reach ZooKeeper), keep-warm rounds, automatic cutovers, cleanups after
  the retention, and the simulated courier's events.

    fedex-conductor --config-file fedex.conf
"""

import contextlib
import datetime
import os
import socket
import sys
import threading
import time

from kazoo import client as kazoo_client
from kazoo import exceptions as kazoo_exceptions
from oslo_config import cfg
from oslo_log import log as logging
from oslo_service import backend as service_backend
from taskflow.conductors.backends import impl_nonblocking
from taskflow import engines
from taskflow.jobs import backends as job_backends
from taskflow.persistence import backends as persistence_backends
from taskflow.persistence import models as tf_models
from taskflow.utils import persistence_utils  # noqa: F401

from lsrp import exception
from fedex_manager import actions
from fedex_manager import context as context_mod
from fedex_manager import couriers
from fedex_manager import custody
from fedex_manager.db import api as db
from fedex_manager.flows import legacy
from fedex_manager.flows import phases
from fedex_manager.flows.tasks import common as tasks_common
from fedex_manager.flows.tasks import cutover as cutover_tasks
from fedex_manager import jobs
from fedex_manager import opts
from fedex_manager import rpc
from fedex_manager import states

CONF = cfg.CONF
LOG = logging.getLogger(__name__)
PROGRESS_EVENT_EVERY = 30.0


# --- persistence and the jobboard ----------------------------------------------

def persistence(conf=CONF):
    backend = persistence_backends.fetch(
        {'connection': conf.database.connection})
    return backend


def jobboard(backend, client=None, conf=CONF):
    """The ZooKeeper jobboard (connected)."""
    board = job_backends.fetch(
        'fedex', {'board': 'zookeeper', 'hosts': ','.join(
            conf.jobboard.hosts), 'path': conf.jobboard.path,
            'timeout': conf.jobboard.session_timeout,
            # kazoo's version check needs the 'envi' four-letter word,
            # which ZooKeeper 3.5+ disables by default.
            'check_compatible': False},
        persistence=backend, client=client)
    board.connect()
    return board


def zk_client(conf=CONF):
    client = kazoo_client.KazooClient(
        hosts=','.join(conf.jobboard.hosts),
        timeout=conf.jobboard.session_timeout)
    client.start(timeout=30)
    return client


class Poster(object):
    """Posts phases as jobs: ``jobs.set_poster(Poster(...))``.

    The flow is not serialized: its factory's import path is saved in a
    new flow detail, and any conductor rebuilds it from there.
    """

    def __init__(self, backend, board, zk, conf=CONF):
        self.backend, self.board, self.zk = backend, board, zk
        self.conf = conf

    @contextlib.contextmanager
    def hold(self, migration_id):
        """The migration's post lock, from the generation bump to the post.

        An ephemeral znode: a poster killed while holding it lets go when
        its ZooKeeper session ends.
        """
        lock = self.zk.Lock(lock_path('post', migration_id, self.conf),
                            self.conf.conductor.name or socket.gethostname())
        wait = 3 * self.conf.jobboard.session_timeout
        if not _acquire(lock, wait):
            raise exception.ManagerError(
                reason='migration %s: its post lock was not free within '
                '%.0f s (another process posting, or ZooKeeper slow)'
                % (migration_id, wait))
        try:
            yield
        finally:
            _release(lock, migration_id)

    def __call__(self, migration_id, phase, generation):
        name = '%s-%s-%d' % (phase, migration_id, generation)
        book = tf_models.LogBook(name)
        detail = tf_models.FlowDetail(name, _uuid())
        book.add(detail)
        with contextlib.closing(self.backend.get_connection()) as conn:
            conn.save_logbook(book)
        engines.save_factory_details(detail, phases.FACTORIES[phase], (),
                                     {}, backend=self.backend)
        job = self.board.post(name, book=book, details={'store': {
            'migration_id': migration_id, 'generation': generation},
            'phase': phase, 'migration_id': migration_id,
            'generation': generation})
        LOG.info('posted %s as job %s', name, job.uuid)
        return job.uuid


def _acquire(lock, timeout):
    """kazoo's Lock.acquire, False (not LockTimeout) when not free in time."""
    try:
        return lock.acquire(timeout=timeout)
    except kazoo_exceptions.LockTimeout:
        return False


def _release(lock, migration_id):
    try:
        lock.release()
    except Exception as e:  # noqa: a lost session let it go already
        LOG.warning('lock %s of migration %s: %s', lock.path, migration_id,
                    e)


def lock_path(kind, migration_id, conf=CONF):
    """The ZooKeeper lock of a migration: ``post`` or ``run``."""
    return '%s-locks/%s-%s' % (conf.jobboard.path, kind, migration_id)


def _uuid():
    import uuid
    return str(uuid.uuid4())


def install_poster(conf=CONF):
    """Connect and set the poster, for any process that posts phases.

    fedex-api calls it too. Returns (backend, board) to close at exit.
    """
    backend = persistence(conf)
    zk = zk_client(conf)
    board = jobboard(backend, client=zk, conf=conf)
    close = board.close

    def close_all():
        # The board does not stop a client it was given.
        close()
        zk.stop()
        zk.close()

    board.close = close_all
    jobs.set_poster(Poster(backend, board, zk, conf))
    return backend, board


# --- the terminals' side of RPC ------------------------------------------------

class ManagerEndpoint(object):
    """What terminals tell the manager (casts)."""

    def __init__(self):
        self._progress_events = {}

    def progress(self, ctxt, terminal, op_id, bytes_done, bytes_total, rate):
        ctx = context_mod.admin(terminal)
        op = db.operation_report(ctx, op_id, bytes_done=bytes_done,
                                 bytes_total=bytes_total, rate=rate,
                                 state='RUNNING')
        if not op or not op['migration_id']:
            return
        if op['kind'] in ('export', 'import', 'consolidate', 'snapshot'):
            self._migration_progress(ctx, op)

    def _migration_progress(self, ctx, op):
        try:
            m = db.get(ctx, 'migration', op['migration_id'])
        except exception.NotFound:
            return
        total = op['bytes_total'] or m['bytes_total']
        done = op['bytes_done']
        rate = op['rate']
        eta = (total - done) / rate if rate and total and total > done \
            else None
        db.update(ctx, 'migration', m['id'], {
            'bytes_done': done, 'bytes_total': total or m['bytes_total'],
            'rate': rate, 'eta_seconds': eta})
        now = time.monotonic()
        if now - self._progress_events.get(op['id'], 0) >= \
                PROGRESS_EVENT_EVERY:
            self._progress_events[op['id']] = now
            db.add_event(ctx, 'migration', m['id'], 'progress',
                         '%s: %d of %d bytes%s' % (
                             op['kind'], done, total, ', %.1f MB/s' %
                             (rate / 1e6) if rate else ''),
                         migration_id=m['id'],
                         details={'op_id': op['id'], 'bytes_done': done,
                                  'bytes_total': total, 'rate': rate,
                                  'eta_seconds': eta})

    def finished(self, ctxt, terminal, op_id, state, result=None,
                 error=None):
        ctx = context_mod.admin(terminal)
        op = db.operation_report(ctx, op_id, state=state, result=result,
                                 error=error)
        tasks_common.op_ended(op_id)
        if op and op['migration_id']:
            db.add_event(ctx, 'migration', op['migration_id'],
                         'error' if state == 'ERROR' else 'progress',
                         '%s %s on %s: %s' % (
                             op['kind'], 'done' if state == 'DONE' else
                             'failed', terminal, error or 'ok'),
                         migration_id=op['migration_id'],
                         details={'op_id': op_id})

    def heartbeat(self, ctxt, terminal, info):
        ctx = context_mod.admin(terminal)
        try:
            term = db.get(ctx, 'terminal', terminal)
        except exception.NotFound:
            term = actions.terminal_register(
                ctx, terminal, info['site'], rpc_topic=info['rpc_topic'],
                lsrp_address=info.get('lsrp_address'))
        if term['lsrp_address'] != info.get('lsrp_address'):
            db.update(ctx, 'terminal', term['id'],
                      {'lsrp_address': info.get('lsrp_address')})
        actions.terminal_heartbeat(ctx, terminal, info)
        devices = info.get('devices') or []
        known = {d['serial']: d for d in db.list_(ctx, 'device', {
            'serial': [d['serial'] for d in devices]})} if devices else {}
        scanned = db.utcfromiso(info.get('scanned_at'))
        for dev in devices:
            k = known.get(dev['serial'])
            if k and k['terminal_id'] == term['id'] and \
                    k['path'] == dev['path']:
                continue
            if k and k['terminal_id'] not in (None, term['id']) and \
                    listed_before_move(scanned, k):
                LOG.info('heartbeat of %s scanned at %s lists device %s, '
                         'recorded at another terminal since %s: stale, '
                         'ignored', terminal, info.get('scanned_at'),
                         k['serial'], k['updated_at'])
                continue
            actions.device_register(ctx, dev['serial'], terminal,
                                    dev.get('capacity_bytes', 0),
                                    _slot(dev.get('slot')), dev['path'])


def listed_before_move(scanned, device):
    """Whether a heartbeat's list of devices predates the device's move.

    A heartbeat is a cast: it may reach a conductor seconds after its
    terminal listed its slots (a loaded machine, a backlog of casts), and
    after the courier plugged the device in at another terminal. Believed,
    it would move the device back to where it no longer is, and the import
    at the destination would miss it (the 50-migration benchmark's
    ``DevicesMissing: device 0``, 3 s after the custody check had passed).
    A real move between terminals takes minutes (same site) to days;
    the second of margin covers the database's whole-second timestamps.
    A terminal that does not say when it listed (``scanned_at``) is
    believed, as before.
    """
    if scanned is None:
        return False
    moved = db.utcfromiso(device['updated_at'])
    return scanned < moved + datetime.timedelta(seconds=1)


def _slot(slot):
    try:
        return int(str(slot).lstrip('slotusb'))
    except (TypeError, ValueError):
        return None


# --- the sweeper -----------------------------------------------------------------

# Working states: a phase must have a live job while a migration is there.
# Seconds between the sweeper's looks for servers deleted in Nova.
SERVERS_CHECK = 20
SWEPT = (states.REQUESTED, states.SNAPSHOTTING, states.EXPORTING,
         states.CONSOLIDATING, states.DELIVERED, states.IMPORTING,
         states.CATCHING_UP, states.ABORTING)


class Sweeper(object):

    def __init__(self, board, zk, name):
        self.board, self.zk, self.name = board, zk, name
        self.lock = zk.Lock('%s-sweeper' % CONF.jobboard.path, name)

    def live_jobs(self):
        out = set()
        for job in self.board.iterjobs(ensure_fresh=True):
            d = job.details or {}
            out.add((d.get('migration_id'), d.get('generation')))
        return out

    def sweep(self):
        if not self.lock.acquire(blocking=False):
            return
        try:
            self._sweep()
        finally:
            self.lock.release()

    def _sweep(self):
        ctx = context_mod.admin('sweeper')
        live = self.live_jobs()
        now = db.now()
        grace = datetime.timedelta(seconds=CONF.conductor.sweep_interval)
        for m in db.list_(ctx, 'migration', {'state': list(SWEPT) + [
                states.READY_FOR_CUTOVER, states.COMPLETED,
                states.CUTTING_OVER]}):
            key = (m['id'], m['generation'])
            age = now - db.utcfromiso(m['updated_at'])
            # The grace only spares a fresh state change the round trip
            # below; whether a job is gone is ZooKeeper's to say.
            if key in live or age < grace:
                continue
            if m['state'] in SWEPT:
                self._repost(ctx, m, jobs.PHASE_OF_STATE[m['state']])
            elif m['state'] == states.READY_FOR_CUTOVER:
                self._ready(ctx, m, age)
            elif m['state'] == states.CUTTING_OVER and \
                    CONF.conductor.compute_driver == 'none':
                self._repost(ctx, m, 'cutover')
            elif m['state'] == states.CUTTING_OVER and \
                    CONF.conductor.compute_driver == 'nova':
                self._nova(ctx, m)
            elif m['state'] == states.COMPLETED:
                self._unlock_once(ctx, m)
                days = m['options'].get('retention_days', 0)
                done = db.utcfromiso(m['finished_at']) or now
                if now - done >= datetime.timedelta(days=days):
                    self._repost(ctx, m, 'cleanup')
        self._couriers(ctx)
        custody.wipe_returned(ctx)
        self._deleted_servers(ctx)
        self._remove_ended_locks(ctx)

    def _remove_ended_locks(self, ctx):
        """The lock znodes of migrations that ended, removed.

        ``post-<id>`` and ``run-<id>`` under ``<[jobboard] path>-locks``:
        else two empty znodes stay for every migration ever run. One with
        a contender (its lock held: a phase still ending, a creator whose
        row is not written yet) is left to a later sweep; a lock taken
        again later (the cleanup of a COMPLETED migration) is made again
        by kazoo.
        """
        root = '%s-locks' % CONF.jobboard.path
        try:
            names = self.zk.get_children(root)
        except kazoo_exceptions.NoNodeError:
            return
        ids = {n.partition('-')[2] for n in names}
        if not ids:
            return
        rows = {m['id']: m['state'] for m in db.list_(
            ctx, 'migration', {'id': sorted(ids)})}
        for name in names:
            state = rows.get(name.partition('-')[2])
            if state not in (None, states.COMPLETED) + \
                    states.MIGRATION_FINAL:
                continue
            try:
                self.zk.delete('%s/%s' % (root, name))
            except (kazoo_exceptions.NotEmptyError,
                    kazoo_exceptions.NoNodeError):
                pass

    def gone(self, m, kinds=('post', 'run')):
        """True if the migration's phase really has no job.

        No job of its generation on the jobboard (a job whose conductor
        died is still there, and claimable again once that conductor's
        session expired), nobody posting one, no job of it running.
        """
        if busy(self.zk, m['id'], kinds):
            return False
        return (m['id'], m['generation']) not in self.live_jobs()

    def _repost(self, ctx, m, phase):
        if busy(self.zk, m['id']):
            return None

        def still_gone(row):
            # Under the post lock: what changed since the sweep began.
            return (row['state'] == m['state'] and
                    row['generation'] == m['generation'] and
                    self.gone(row, kinds=('run',)))

        job = jobs.post(ctx, m['id'], phase, only_if=still_gone)
        if job:
            LOG.warning('migration %s in %s had no job: posted %s as %s',
                        m['id'], m['state'], phase, job)
        return job

    def _unlock_once(self, ctx, m):
        # fedex-api records COMPLETED (nova_fedex's report); the conductor,
        # which holds the [nova] credentials, undoes the lock.
        if CONF.conductor.compute_driver != 'nova':
            return
        said = [e['message'] for e in db.events(
            ctx, {'migration_id': m['id'], 'kind': 'nova'})]
        if any(x.startswith('servers locked') for x in said) and not any(
                x.startswith('servers unlocked') for x in said):
            tasks_common.unlock_servers(ctx, m)

    def _deleted_servers(self, ctx):
        """A server deleted in Nova during its migration aborts it."""
        from fedex_manager import nova_lock

        if CONF.conductor.compute_driver != 'nova':
            return
        # One GET per server: not at every sweep.
        now = time.monotonic()
        if now - getattr(self, '_servers_checked', 0) < SERVERS_CHECK:
            return
        self._servers_checked = now
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
                actions.migration_abort(
                    ctx, m['id'], reason='server %s deleted in Nova' %
                    ', '.join(gone))

    def _ready(self, ctx, m, age):
        # With Nova, an approved cutover starts here too (without Nova the
        # caller that approved it plays Nova and starts it).
        start = (m['options'].get('cutover') == 'automatic' or
                 CONF.conductor.compute_driver == 'nova' and
                 m['cutover_approved'])
        if start and actions.cutover_ready(ctx, m['id'])['ready']:
            actions.migration_cutover_start(ctx, m['id'])
        elif age.total_seconds() >= m['options'].get('keep_warm_seconds',
                                                     600):
            self._repost(ctx, m, 'keep_warm')

    def _nova(self, ctx, m):
        # nova_fedex's report of the end may be lost, and Nova may fail
        # before nova_fedex runs: Nova's own records say what happened.
        try:
            did = cutover_tasks.reconcile_nova_cutover(ctx, m)
        except Exception as e:
            LOG.warning('migration %s: cannot read the cutover back from '
                        'Nova: %s', m['id'], e)
            return
        LOG.info('migration %s: cutover read back from Nova: %s', m['id'],
                 did)

    def _couriers(self, ctx):
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
                    actions.carrier_event(
                        ctx, s['id'], ev['event'], seq=ev['seq'],
                        location=ev.get('location'),
                        devices_missing=ev.get('devices_missing'))
                except exception.InvalidTransition as e:
                    LOG.warning('%s', e)
                except exception.InvalidInput as e:
                    # Not yet (a return before the abort ended): the
                    # courier's event is sent again at the next sweep.
                    LOG.warning('%s', e)
                    break
                if hasattr(courier, 'sent'):
                    courier.sent(s, ev['seq'])


class OneRunConductor(impl_nonblocking.NonBlockingConductor):
    """Runs at most one job of a migration at a time, over all conductors.

    A job holds its migration's run lock (an ephemeral znode) while its
    engine runs: a second job of the same migration (a phase re-posted
    while the first still ran, whatever the reason) waits for the first to
    end, or for its conductor's ZooKeeper session to die, and then finds
    itself superseded at its first guard, or goes on if it is the newer.
    """

    def __init__(self, zk, conf, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._zk, self._conf = zk, conf

    def _dispatch_job(self, job):
        mid = (job.details or {}).get('migration_id')
        if not mid:
            return super()._dispatch_job(job)
        lock = self._zk.Lock(lock_path('run', mid, self._conf), self._name)
        waited = False
        while not _acquire(lock, 5):
            if not waited:
                waited = True
                LOG.info('job %s waits for the other job of migration %s '
                         'to end', job.name, mid)
            if self._wait_timeout.is_stopped():
                # Not consumed: another conductor takes it over.
                return False
        try:
            return super()._dispatch_job(job)
        finally:
            _release(lock, mid)


def busy(zk, migration_id, kinds=('post', 'run'), conf=CONF):
    """Who posts or runs a phase of the migration now (ZooKeeper's view).

    Lock contenders are ephemeral znodes: a dead process is no contender
    once its session ended.
    """
    return [who for kind in kinds for who in zk.Lock(
        lock_path(kind, migration_id, conf)).contenders()]


# --- the service ---------------------------------------------------------------------

class Conductor(object):

    def __init__(self, conf=CONF):
        self.conf = conf
        self.name = conf.conductor.name or 'conductor-%s-%d' % (
            socket.gethostname(), os.getpid())
        conf.set_override('name', self.name, group='conductor')
        self.stop_event = threading.Event()

    def start(self):
        db.configure(self.conf.database.connection)
        # Jobs posted before the package's move name lsrp.manager's flows.
        legacy.install()
        self.backend = persistence(self.conf)
        self.zk = zk_client(self.conf)
        self.board = jobboard(self.backend, client=self.zk, conf=self.conf)
        jobs.set_poster(Poster(self.backend, self.board, self.zk, self.conf))
        # Every state change is also an oslo.messaging notification.
        notifier = rpc.Notifier(self.conf)
        db.on_transition(notifier.state)
        self.conductor = OneRunConductor(
            self.zk, self.conf, self.name, self.board,
            persistence=self.backend, engine='serial',
            max_simultaneous_jobs=self.conf.conductor.max_jobs,
            # Between looks at the jobboard's list (kept fresh by ZooKeeper
            # watches, so a look costs nothing): a new phase's job waits
            # at most this long to be claimed.
            wait_timeout=0.2)
        self.rpc_server = rpc.server([ManagerEndpoint()], rpc.manager_topic(self.conf),
                                     self.name, self.conf)
        self.rpc_server.start()
        self.sweeper = Sweeper(self.board, self.zk, self.name)
        self.threads = [
            threading.Thread(target=self.conductor.run, daemon=True,
                             name='conductor'),
            threading.Thread(target=self._sweep_loop, daemon=True,
                             name='sweeper')]
        for t in self.threads:
            t.start()
        print('fedex-conductor %s: running (jobboard %s%s)' % (
            self.name, ','.join(self.conf.jobboard.hosts),
            self.conf.jobboard.path), flush=True)

    def _sweep_loop(self):
        while not self.stop_event.wait(self.conf.conductor.sweep_interval):
            try:
                self.sweeper.sweep()
            except Exception as e:  # noqa: the next sweep tries again
                LOG.exception('sweep failed: %s', e)

    def stop(self):
        self.stop_event.set()
        # Running engines are suspended and their jobs abandoned, not
        # consumed: another conductor takes them over.
        self.conductor.stop()
        self.conductor.wait(30)
        self.rpc_server.stop()
        self.rpc_server.wait()
        self.board.close()
        self.zk.stop()


def _service_class():
    from oslo_service import service

    class ConductorService(service.Service):

        def __init__(self):
            super().__init__()
            self.conductor = Conductor()

        def start(self):
            super().start()
            self.conductor.start()

        def stop(self, graceful=False):
            self.conductor.stop()
            super().stop(graceful)

    return service, ConductorService


def main(argv=None):
    logging.register_options(CONF)
    CONF.set_default('use_stderr', True)
    opts.register_opts(CONF)
    CONF(sys.argv[1:] if argv is None else argv, project='fedex',
         prog='fedex-conductor')
    logging.setup(CONF, 'fedex-conductor')
    if not CONF.database.connection:
        CONF.set_override('connection', 'sqlite:///%s/manager.sqlite'
                          % CONF.manager.state_path, group='database')
    service_backend.init_backend(service_backend.BackendType.THREADING)
    service, cls = _service_class()
    try:
        launcher = service.launch(CONF, cls(), restart_method='mutate')
        launcher.wait()
    except exception.FedexException as e:
        print('fedex-conductor: error: %s' % e, file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main())
