"""Posting a migration's phases as jobs: the one door to the conductors.

A *phase* is one taskflow flow that ends in a stable state (see
doc/source/manager.rst). The facade changes the state in the database and
then posts the phase; the conductor (:mod:`fedex_manager.conductor`) sets
the real poster (the ZooKeeper jobboard). Without one (unit tests of the
facade) the post is recorded and the sweeper of the first conductor that
starts posts it.
"""

import contextlib
import threading

from oslo_log import log as logging

from fedex_manager.db import api as db
from fedex_manager import states

LOG = logging.getLogger(__name__)

# The phase a migration's state is worked on by.
PHASE_OF_STATE = {
    states.REQUESTED: 'prepare',
    states.SNAPSHOTTING: 'prepare',
    states.EXPORTING: 'prepare',
    states.CONSOLIDATING: 'prepare',
    states.DELIVERED: 'receive',
    states.IMPORTING: 'receive',
    states.CATCHING_UP: 'catchup',
    states.READY_FOR_CUTOVER: 'keep_warm',
    states.CUTTING_OVER: 'cutover',
    states.COMPLETED: 'cleanup',
    states.ABORTING: 'abort',
}

_poster = None
_lock = threading.Lock()


def set_poster(poster):
    """``poster(migration_id, phase, generation) -> job id`` or None."""
    global _poster
    with _lock:
        _poster = poster


@contextlib.contextmanager
def _hold(poster, migration_id):
    """The poster's hold on the migration (a ZooKeeper lock), if it has one.

    Yields None when held or when there is no such lock to take (no
    poster, or one without ``hold``); the error when ZooKeeper could not
    give it (unreachable): the caller decides what that means.
    """
    with contextlib.ExitStack() as stack:
        error = None
        if poster is not None and hasattr(poster, 'hold'):
            try:
                stack.enter_context(poster.hold(migration_id))
            except Exception as e:  # noqa: ZooKeeper unreachable
                error = e
        yield error


@contextlib.contextmanager
def holding(migration_id):
    """The migration's post lock, held by its creator (yields True).

    A migration created and posted under it is never posted by a sweeper
    that sees the new row before its creator's post. Yields False when
    there is no such lock (no poster, or ZooKeeper unreachable: the
    creator's post then fails and a sweeper posts the phase).
    """
    poster = _poster
    with _hold(poster, migration_id) as error:
        if error is not None:
            LOG.warning('migration %s: no post lock: %s', migration_id,
                        error)
        yield error is None and hasattr(poster, 'hold')


def post(ctx, migration_id, phase, only_if=None, held=False):
    """Post ``phase`` of a migration and bump its generation.

    Stale jobs of an older generation find it changed and end without
    doing anything. A poster with a ``hold(migration_id)`` context manager
    (the conductor's: a ZooKeeper lock) holds it from the bump to the
    post, so a sweeper never takes a post in flight for a lost one.
    ``only_if(migration row)``, called under that hold, lets the sweeper
    check again that the phase still has no job; False posts nothing.
    ``held``: the caller holds it already (:func:`holding`).
    """
    poster = _poster
    with _hold(None if held else poster, migration_id) as error:
        if only_if is not None:
            if error is not None:
                LOG.warning('migration %s: not posting %s again: %s',
                            migration_id, phase, error)
                return None
            if not only_if(db.get(ctx, 'migration', migration_id)):
                return None
        return _post(ctx, poster, migration_id, phase, error)


def _post(ctx, poster, migration_id, phase, error):
    with db.writer(ctx) as session:
        row = db._get(session, 'migration', migration_id)
        row.generation = (row.generation or 0) + 1
        row.job_id = None
        generation = row.generation
    if poster is None:
        db.add_event(ctx, 'migration', migration_id, 'job',
                     'phase %s (generation %d) waits for a conductor'
                     % (phase, generation), migration_id=migration_id)
        return None
    if error is None:
        try:
            job_id = poster(migration_id, phase, generation)
        except Exception as e:  # noqa: a lost post is the sweeper's to redo
            error = e
    if error is not None:
        # ZooKeeper unreachable (a loaded machine loses sessions): the
        # state change stands; a conductor's sweeper finds the migration
        # without a job and posts this phase again.
        LOG.warning('migration %s: posting %s failed: %s', migration_id,
                    phase, error)
        db.add_event(ctx, 'migration', migration_id, 'job',
                     'phase %s (generation %d) could not be posted (%s); '
                     'a conductor\'s sweeper posts it' % (
                         phase, generation, error), migration_id=migration_id)
        return None
    db.update(ctx, 'migration', migration_id, {'job_id': job_id})
    db.add_event(ctx, 'migration', migration_id, 'job',
                 'phase %s (generation %d) posted as job %s'
                 % (phase, generation, job_id), migration_id=migration_id)
    return job_id
