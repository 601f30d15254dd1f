"""Terminal operations: recorded once by id, then reported on."""

from oslo_db import exception as db_exc

from fedex_manager.db import engine
from fedex_manager.db import models
from fedex_manager.db import times


def operation_start(ctx, op_id, migration_id, terminal, kind):
    """Record operation ``op_id`` (once); returns it as a dict.

    The migrations of one shipment group start the group's operations
    (its import) at the same moment: the one whose insert loses the race
    counts an attempt on the row the other made.
    """
    try:
        return _operation_start(ctx, op_id, migration_id, terminal, kind)
    except db_exc.DBDuplicateEntry:
        return _operation_start(ctx, op_id, migration_id, terminal, kind)


def _operation_start(ctx, op_id, migration_id, terminal, kind):
    with engine.writer(ctx) as session:
        row = session.get(models.Operation, op_id)
        if row is None:
            row = models.Operation(id=op_id, migration_id=migration_id,
                                   terminal=terminal, kind=kind,
                                   state='PENDING')
            session.add(row)
        row.attempts = (row.attempts or 0) + 1
        session.flush()
        return row.as_dict()


def operation_report(ctx, op_id, **values):
    """A terminal's progress or completion of ``op_id`` (E1-E5)."""
    with engine.writer(ctx) as session:
        row = session.get(models.Operation, op_id)
        if row is None:
            return None
        if row.state in ('DONE', 'ERROR') and values.get('state') not in (
                None, 'DONE', 'ERROR'):
            # A late progress report after completion changes nothing.
            return row.as_dict()
        for k, v in values.items():
            setattr(row, k, v)
        row.updated_at = times.now()
        session.flush()
        return row.as_dict()


def operation_take_status(ctx, op_id, rec):
    """A terminal's answer to ``status`` taken into the operation row.

    DONE or ERROR with its result and error, or RUNNING; the row, or None
    for an answer that says nothing of the operation (UNKNOWN,
    INTERRUPTED: the caller starts it again).
    """
    if rec.get('state') in ('DONE', 'ERROR'):
        return operation_report(ctx, op_id, state=rec['state'],
                                result=rec.get('result'),
                                error=rec.get('error'))
    if rec.get('state') == 'RUNNING':
        return operation_report(ctx, op_id, state='RUNNING')
    return None
