"""The jobboard on ZooKeeper: posting phases as jobs, and running them.

A claim is an ephemeral znode: when a conductor is killed (``kill -9``)
its ZooKeeper session expires after ``[jobboard] session_timeout`` seconds,
the job is free again, another conductor claims it and the flow resumes
from the task after the last one saved in the flow's logbook (taskflow's
SQL persistence, in the manager's database). The task that was running is
run again: every task is idempotent (``fedex_manager.flows.tasks``).

Two more locks per migration, ephemeral znodes under
``<[jobboard] path>-locks``: ``post-<id>`` (held from the generation bump
to the job on the board) and ``run-<id>`` (held while a job's engine runs).
"""

import contextlib
import logging as py_logging
import socket
import uuid

from kazoo import client as kazoo_client
from kazoo import exceptions as kazoo_exceptions
from oslo_config import cfg
from oslo_log import log as logging
from taskflow.conductors.backends import impl_nonblocking
from taskflow import engines
from taskflow.jobs import backends as job_backends
from taskflow.persistence import backends as persistence_backends
from taskflow.persistence import models as tf_models
from taskflow.utils import persistence_utils  # noqa: F401

from fedex_manager.flows import phases
from fedex_manager.flows import tasks
from fedex_manager import jobs
from lsrp import exception

CONF = cfg.CONF
LOG = logging.getLogger(__name__)


def persistence(conf=CONF):
    """taskflow's SQL persistence, in the manager's database."""
    return persistence_backends.fetch(
        {'connection': conf.database.connection})


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
    """A started kazoo client of the jobboard's ZooKeeper."""
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
        detail = tf_models.FlowDetail(name, str(uuid.uuid4()))
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


def busy(zk, migration_id, kinds=('post', 'run'), conf=CONF):
    """Who posts or runs a phase of the migration now (ZooKeeper's view).

    Lock contenders are ephemeral znodes: a dead process is no contender
    once its session ended.
    """
    return [who for kind in kinds for who in zk.Lock(
        lock_path(kind, migration_id, conf)).contenders()]


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


class QuietSuperseded(py_logging.Filter):
    """Drops taskflow's "Job execution failed" for a superseded phase.

    A phase that parks (:class:`~fedex_manager.flows.tasks.Parked`) or
    finds its migration moved on ends by raising, so that its flow stops
    and reverts; taskflow's conductor logs every such end as a failed job
    with the exception's traceback (a WARNING whose traceback lines
    oslo.log tags ERROR: 192 of them in the eight-server wave, each a
    follower parking). It is the expected end of the phase, said already
    in one INFO line by the phase's first task (``Begin.revert``: parked
    and why). Only records carrying a Superseded are dropped: any other
    failure keeps its warning and traceback.
    """

    def filter(self, record):
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, tasks.Superseded)


def _quiet_superseded(log):
    """Add :class:`QuietSuperseded` to the logger (an adapter's) once."""
    logger = getattr(log, 'logger', log)
    if not any(isinstance(f, QuietSuperseded) for f in logger.filters):
        logger.addFilter(QuietSuperseded())


class OneRunConductor(impl_nonblocking.NonBlockingConductor):
    """Runs at most one job of a migration at a time, over all conductors.

    A job holds its migration's run lock (an ephemeral znode) while its
    engine runs: a second job of the same migration (a phase re-posted
    while the first still ran, whatever the reason) waits for the first to
    end, or for its conductor's ZooKeeper session to die, and then finds
    itself superseded at its first guard, or goes on if it is the newer.
    A phase that parks or is superseded ends without a failure's traceback
    in the log (:class:`QuietSuperseded`).
    """

    def __init__(self, zk, conf, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._zk, self._conf = zk, conf
        _quiet_superseded(self._log)

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
