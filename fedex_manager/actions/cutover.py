"""The cutover, as Nova (or the sandbox's stand-in) and operators see it.

Approved (or automatic) and in its window, a READY_FOR_CUTOVER migration
may start its cutover; the final delta runs while the VM is paused, and
Nova reports the end: COMPLETED, or ROLLED_BACK and catching up again.
"""

from oslo_config import cfg
from oslo_log import log as logging

from fedex_manager.actions import progress
from fedex_manager import cinder
from fedex_manager.db import api as db
from fedex_manager import jobs
from fedex_manager import options as options_mod
from fedex_manager import opts
from fedex_manager import states
from lsrp import exception

CONF = cfg.CONF
LOG = logging.getLogger(__name__)
APPROVED = 'cutover approved'


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
        return progress.annotate(m)
    m = db.transition(ctx, 'migration', migration, 'rollback',
                      values={'last_error': reason},
                      message='cutover rolled back: %s' % reason)
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
    return progress.annotate(m)


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
