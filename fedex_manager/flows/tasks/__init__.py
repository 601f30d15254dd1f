"""The tasks of the migration phases, one module per phase.

Every task is idempotent: taskflow re-runs the task that was in flight
when a conductor died, so each one first looks at what is already done
(the migration's state, the shipment's, the terminal's operation record)
and only does the rest. Terminal work goes through
:func:`~fedex_manager.flows.tasks.common.run_op`, whose operation id is
fixed by the migration, so a re-run finds the operation the dead
conductor started instead of starting a second one.

A task whose migration moved on (aborted, or its phase posted again with
a newer generation) raises :class:`Superseded`; the phase then ends
without marking anything failed (nor logging a failure).

Where things are: ``common`` (the base classes, guards, ``run_op``,
``park``), ``prepare`` (snapshot, pack) and ``seal`` (export,
consolidate, seal, dispatch), ``receive`` (custody check, import),
``rounds`` (one catch-up round), ``catchup`` (catch-up and keep-warm),
``cutover`` (final delta, Nova's live migration), ``erase`` (what cleanup
and abort both undo), ``cleanup``, ``abort``. The flows built from them
are in :mod:`fedex_manager.flows.phases`.

:class:`Superseded` and :class:`Parked` are defined here, not in
``common``: taskflow saves a task's failure in the flow's logbook under
its exception's qualified class name, and a resumed flow (one posted
before an upgrade) tells a superseded phase from a failed one by that
name (``Begin.revert``), so it must stay
``fedex_manager.flows.tasks.Superseded``.
"""

from lsrp import exception


class Superseded(exception.ManagerError):
    message = ('migration %(id)s: phase %(phase)s generation %(generation)s'
               ' superseded (%(reason)s)')


class Parked(Superseded):
    """The phase waits for the outside world without holding a conductor.

    Its job ends (nothing failed); the migration keeps its state with no
    job. ``then`` says what moves it on: by default a conductor's sweeper
    posts the phase again; a shipment group's follower is moved on by its
    leader. The conductor logs a park as one INFO line, no traceback
    (:class:`fedex_manager.conductor.jobboard.QuietSuperseded`).
    """
    message = ('migration %(id)s: phase %(phase)s parked: %(reason)s; '
               '%(then)s')

    def __init__(self, message=None, cause=None, **kwargs):
        kwargs.setdefault('then', 'a sweep posts it again')
        super().__init__(message, cause, **kwargs)
