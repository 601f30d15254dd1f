"""State changes: the state machine asked, the row moved by compare and swap.

Every state change goes through :func:`transition`, which asks the state
machine, updates the row only if it is still in the state it was read in
(two conductors never both move it), and appends the event in the same
transaction. A migration's change is also a versioned notification
(:mod:`fedex_manager.notifications`), sent once the transaction committed.
"""

from oslo_log import log as logging
import sqlalchemy as sa

from fedex_manager.db import crud
from fedex_manager.db import engine
from fedex_manager.db import events
from fedex_manager.db import times
from fedex_manager.notifications import notifier
from fedex_manager import states
from lsrp import exception

LOG = logging.getLogger(__name__)
hooks = []


def on_transition(hook):
    """Call ``hook(kind, id, old, new, message)`` after each state change.

    Only changes committed by this process; the conductor sends them as
    notifications.
    """
    hooks.append(hook)


def _notify(kind, ident, old, new, message):
    for hook in list(hooks):
        try:
            hook(kind, ident, old, new, message)
        except Exception:  # noqa: monitoring never breaks a transition
            LOG.exception('%s %s: hook %r failed on %s -> %s', kind, ident,
                          hook, old, new)


def transition(ctx, kind, ident, event=None, target=None, expect=None,
               values=None, message=None, details=None, location=None,
               occurred_at=None, event_kind='state'):
    """Move ``kind`` ``ident`` by ``event`` (or to ``target``), CAS.

    ``expect``: a state or tuple of states the row must be in, else
    :class:`InvalidTransition`. Returns the row as a dict.
    """
    machine = states.MACHINES[kind]
    model = crud.MODELS[kind]
    with engine.writer(ctx) as session:
        row = crud.get_row(session, kind, ident)
        current = row.state
        if expect is not None:
            expected = (expect,) if isinstance(expect, str) else expect
            if current not in expected:
                raise exception.InvalidTransition(
                    kind=kind, id=row.id, current=current,
                    target=target or machine._target_of(event),
                    reason='expected %s' % ' or '.join(expected))
        if event is None:
            event = machine.event_to(current, target, row.id)
        new = machine.next_state(current, event, row.id)
        values = dict(values or {})
        values['state'] = new
        values['updated_at'] = times.now()
        result = session.execute(
            sa.update(model).where(model.id == row.id,
                                   model.state == current).values(**values))
        if result.rowcount != 1:
            raise exception.Conflict(
                kind=kind, id=row.id,
                reason='changed state while going from %s to %s; try '
                'again' % (current, new))
        events.record(session, ctx, kind, row.id, event_kind, current, new,
                      message or '%s: %s -> %s' % (event, current, new),
                      migration_id=row.id if kind == 'migration' else None,
                      details=details, location=location,
                      occurred_at=occurred_at)
        session.expire(row)
        row = crud.get_row(session, kind, row.id)
        out = crud.as_dict(row)
        if kind == 'migration':
            # Versioned notification, sent once this change is committed.
            notifier.migration_state_changed(session, ctx, row, current,
                                             event, message)
    _notify(kind, out['id'], current, new, message)
    return out
