"""A running migration's turns: abort, retry, re-ship, clean up early.

Each changes the state, then posts the phase that does the work.
"""

from fedex_manager.actions import progress
from fedex_manager.db import api as db
from fedex_manager import jobs
from fedex_manager import states
from lsrp import exception


def migration_abort(ctx, migration, reason=None):
    m = db.transition(ctx, 'migration', migration, 'abort',
                      message='abort requested%s' % (
                          ': %s' % reason if reason else ''))
    jobs.post(ctx, m['id'], 'abort')
    return progress.annotate(m)


def migration_retry(ctx, migration):
    m = db.get(ctx, 'migration', migration)
    if m['state'] != states.FAILED:
        raise exception.InvalidTransition(
            kind='migration', id=m['id'], current=m['state'],
            target=m['failed_in'] or '(its last state)',
            reason='only a FAILED migration is retried')
    back = m['failed_in'] or states.SNAPSHOTTING
    m = db.transition(ctx, 'migration', m['id'], 'retry_' + back.lower(),
                      values={'last_error': None},
                      message='retry in %s' % back)
    jobs.post(ctx, m['id'], jobs.PHASE_OF_STATE[back])
    return progress.annotate(m)


def migration_cleanup(ctx, migration):
    """Clean up a COMPLETED migration now, before its retention ends.

    Devices crypto-erased, the key destroyed, our snapshots removed.
    """
    m = db.get(ctx, 'migration', migration)
    if m['state'] != states.COMPLETED:
        raise exception.InvalidTransition(
            kind='migration', id=m['id'], current=m['state'],
            target=states.CLEANED, reason='only a COMPLETED migration is '
            'cleaned up')
    jobs.post(ctx, m['id'], 'cleanup')
    return progress.annotate(db.get(ctx, 'migration', m['id']))


def migration_reship(ctx, migration, seed_over_wan=False):
    """A lost, damaged or tampered shipment: ship again, or use the WAN.

    Re-shipping exports again from the same base snapshot.
    """
    event = 'seed_over_wan' if seed_over_wan else 'reship'
    m = db.transition(ctx, 'migration', migration, event)
    db.volumes_update(ctx, m['id'], {'shipment_id': None})
    jobs.post(ctx, m['id'], 'catchup' if seed_over_wan else 'prepare')
    return progress.annotate(m)
