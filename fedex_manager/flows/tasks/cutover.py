"""The cutover phase: the final delta, then Nova's live migration.

:class:`FinalDelta` runs the last round while the VM is paused;
:func:`start_nova_cutover` asks Nova for the live migration of each
server, and :func:`reconcile_nova_cutover` (the conductor's sweeper) reads
Nova's records back when nobody reported the cutover's end.
"""

from oslo_config import cfg
from oslo_log import log as logging

from fedex_manager.actions import cutover as cutover_actions
from fedex_manager import cloud_preflight
from fedex_manager.db import api as db
from fedex_manager.flows.tasks import common
from fedex_manager.flows.tasks import rounds
from fedex_manager import jobs
from fedex_manager import nova
from fedex_manager import states
from lsrp import exception

CONF = cfg.CONF
LOG = logging.getLogger(__name__)


class Cutover(common.PhaseTask):
    phase = 'cutover'
    allowed = (states.CUTTING_OVER,)


class BeginCutover(common.Begin, Cutover):
    pass


class FinalDelta(Cutover):
    """The last round while the VM is paused, verified whole.

    Nova pauses the VM; the sandbox demo pauses its writer.
    """

    def run(self, ctx, m, generation):
        op_id_prefix = '%s.final_delta.' % m['id']
        done = [o for o in db.list_(ctx, 'operation',
                                    {'migration_id': m['id'],
                                     'kind': 'final_delta'})
                if o['id'].startswith(op_id_prefix) and o['state'] == 'DONE']
        if not done:
            m, result = rounds.one_round(self, ctx, m, generation, 'final_delta')
        if not m['servers'] and m['state'] == states.CUTTING_OVER:
            # Detached volumes only: nothing runs on them, so this round
            # is the final state; Cinder then hands them to the
            # destination's backend. No Nova.
            cutover_actions.volumes_to_destination(ctx, m['id'])
        if CONF.conductor.compute_driver == 'none' or not m['servers']:
            # No Nova to switch a VM over (the sandbox's stand-in, or no
            # server at all).
            m = common.step(ctx, m, 'complete', values={'finished_at': db.now()})
            cutover_actions.cleanup_when_due(ctx, m['id'])
        elif CONF.conductor.compute_driver == 'nova':
            start_nova_cutover(ctx, m)


NOVA_REQUESTED = 'nova live migration requested'
NOVA_UNCLEAR = 'nova gave no clear answer'
NOVA_FOUND = 'nova live migration found'
# Seconds after a request before "Nova has no record of it" means it never
# started.
NOVA_START_GRACE = 300
# Seconds nova_fedex, once it reported a step of this cutover, is given to
# report its end after Nova's records say it ended: it sends its
# "completed" after Nova's post-migration, which marks Nova's record
# completed first.
NOVA_REPORT_GRACE = 120
# Seconds a failed record of a server that moved is given for Nova to set
# the server ERROR (see _error_to_come).
NOVA_ERROR_GRACE = 120


def cutover_began(ctx, m):
    """When this cutover began (the newest move to CUTTING_OVER), ISO."""
    began = cutover_actions.cutover_starts(
        db.events(ctx, {'migration_id': m['id']}))
    return max(began) if began else m['updated_at']


def _nova_requests(ctx, m, began=None):
    """This cutover's requests to Nova: [(server_id, request_id, at)].

    ``began``: the cutover's start, when the caller has it already.
    """
    began = began or cutover_began(ctx, m)
    return [(e['details'].get('server_id'), e['details'].get('request_id'),
             e['created_at'])
            for e in db.events(ctx, {'migration_id': m['id'],
                                     'kind': 'cutover'})
            if e['message'].startswith((NOVA_REQUESTED, NOVA_UNCLEAR,
                                        NOVA_FOUND)) and
            e['created_at'] >= began and e['details']]


def choose_dest_host(ctx, m):
    """The destination host of a migration that named none, recorded.

    Nova's scheduler cannot choose it: the live migration is forced (the
    servers' availability zone is site A's, which it would keep), so the
    manager picks a host of the destination site's aggregate with room
    for the servers (:func:`fedex_manager.cloud_preflight.choose_host`)
    and keeps it on the migration, where the read-back
    (:func:`reconcile_nova_cutover`) and a later cutover find it.
    """
    site = db.get(ctx, 'site', m['dest_site_id'])
    if not site.get('aggregate'):
        raise exception.NoDestinationHost(
            aggregate='(none)', reason='site %s names no aggregate '
            '(openstack fedex site set --aggregate)' % site['name'])
    cloud = cloud_preflight.Cloud.from_conf()
    if cloud is None:
        raise exception.NoDestinationHost(
            aggregate=site['aggregate'],
            reason='the manager has no [nova] credentials to ask')
    host = cloud_preflight.choose_host(
        cloud, [s['server_id'] for s in m['servers']], site['aggregate'])
    m = db.update(ctx, 'migration', m['id'], {'dest_host': host})
    db.add_event(ctx, 'migration', m['id'], 'cutover',
                 'destination host %s chosen in aggregate %s (the most '
                 'memory left of the hosts with room)' % (
                     host, site['aggregate']), migration_id=m['id'])
    return m


def start_nova_cutover(ctx, m):
    """Nova's live migration of each server, once per cutover.

    nova_fedex applies the final delta inside the pause and reports the
    end (fedex-api's cutover-events). Nova's refusal in its pre-checks
    rolls back at once, naming Nova's reason; an unclear answer (timeout,
    5xx) is recorded, and the sweeper reads Nova's records back
    (:func:`reconcile_nova_cutover`).
    """
    began = cutover_began(ctx, m)
    if _nova_requests(ctx, m, began):
        return
    if not m['dest_host']:
        try:
            m = choose_dest_host(ctx, m)
        except exception.ManagerError as e:
            cutover_actions.migration_cutover_finish(
                ctx, m['id'], success=False, reason=str(e))
            return
    restore_errored_servers(ctx, m)
    for s in m['servers']:
        if _found_in_nova(ctx, m, s['server_id'], began):
            continue
        try:
            request_id = nova.live_migrate(s['server_id'], m['dest_host'])
        except exception.NovaRefused as e:
            cutover_actions.migration_cutover_finish(
                ctx, m['id'], success=False, reason=str(e))
            return
        except Exception as e:
            db.add_event(ctx, 'migration', m['id'], 'cutover',
                         '%s to the live migration of server %s (%s): '
                         'reading its records back' % (
                             NOVA_UNCLEAR, s['server_id'], e),
                         migration_id=m['id'],
                         details={'server_id': s['server_id']})
            continue
        db.add_event(ctx, 'migration', m['id'], 'cutover',
                     '%s: server %s to %s' % (NOVA_REQUESTED, s['server_id'],
                                              m['dest_host']),
                     migration_id=m['id'],
                     details={'server_id': s['server_id'],
                              'request_id': request_id})


def _found_in_nova(ctx, m, server_id, began):
    """Nova's live migration of the server since this cutover began, as ours.

    Our request is recorded after Nova took it: a database or conductor
    that fails between the two (seen in the soak: MariaDB restarting
    right then) loses the record, the sweeper posts the cutover again, and
    a second request, refused ("task_state migrating"), was taken for a
    failure of the cutover while Nova's first one ran. Nova's records
    since the cutover began are this cutover's (the server is locked for
    it): recorded as its request, their outcome read back.
    """
    try:
        outcome = nova.live_migration_outcome(server_id, since=began)
    except exception.ManagerError as e:
        LOG.warning('migration %s: cannot read Nova\'s live migrations of '
                    'server %s (%s): asking for one', m['id'], server_id, e)
        return False
    if outcome['status'] is None:
        return False
    db.add_event(ctx, 'migration', m['id'], 'cutover',
                 '%s: server %s has Nova\'s live migration %s (%s) since '
                 'this cutover began, whose request was not recorded (the '
                 'database or the conductor failed after Nova took it): '
                 'not asked for again, its outcome read back' % (
                     NOVA_FOUND, server_id, outcome['migration'],
                     outcome['status']),
                 migration_id=m['id'], details={'server_id': server_id})
    return True


# nova_fedex's reports that end a cutover (fedex-api acts on them).
ENDS = {'completed', 'rolled_back'}


def _report_ages(ctx, m, began):
    """nova_fedex's reports of this cutover: {event: seconds since}."""
    now, ages = db.now(), {}
    for e in db.events(ctx, {'migration_id': m['id'], 'kind': 'cutover'}):
        event = (e['details'] or {}).get('event')
        if event and e['created_at'] >= began:
            ages[event] = min(ages.get(event, float('inf')), (
                now - db.utcfromiso(e['created_at'])).total_seconds())
    return ages


def _reports_said(reports):
    if not reports:
        return 'no report from nova_fedex'
    said = ', '.join(sorted(reports))
    if ENDS & set(reports):
        return 'nova_fedex reported %s, which did not end it' % said
    return 'nova_fedex reported %s, not the end' % said


def _unsaved_for(outcome, now):
    """Seconds since Nova last saved its record; None: no record."""
    if not outcome.get('updated_at'):
        return None
    return (now - nova.iso_to_utc(outcome['updated_at'])).total_seconds()


def _stalled(outcome, now):
    """Nova's record says running but nothing saved it for too long."""
    if outcome['ended'] is not None:
        return False
    unsaved = _unsaved_for(outcome, now)
    return unsaved is not None and \
        unsaved > CONF.conductor.nova_stall_seconds


STALLED = 'Nova lost the live migration'
MOVED = 'Nova failed live migrations after they moved the servers'


def _say_stalled(ctx, m, stalled, events):
    """Tell the operator, once per server, what to look at and reset."""
    for sid, o in sorted(stalled.items()):
        text = (
            '%s %s of server %s: its record says %s, not updated since %s '
            '(more than [conductor] nova_stall_seconds), and the server is '
            'in task %s on %s: Nova\'s compute failed under it and did '
            'not roll it back. Find where the guest runs (virsh list on %s '
            'and on %s); if on %s, finish Nova\'s rollback '
            '(nova-fedex-rollback --config-file nova.conf --apply %s: it '
            'also resets the server, where openstack server set --state '
            'active %s alone leaves Placement\'s allocation and the volume '
            'attachments at the destination): the cutover then rolls back '
            'by itself and catch-up goes on; if on %s only, the guest moved '
            'and Nova\'s post-migration failed: Nova\'s records of it need '
            'repair (doc/source/cutover-e2e.rst), do not reset it' % (
                STALLED, o['migration'], sid, o['status'], o['updated_at'],
                o['task_state'], o['host'], o['host'], m['dest_host'],
                o['host'], sid, sid, m['dest_host']))
        if not any(e['message'] == text for e in events):
            db.add_event(ctx, 'migration', m['id'], 'cutover', text,
                         migration_id=m['id'], details={
                             'server_id': sid, 'stalled': o['migration']})
            LOG.warning('migration %s: %s', m['id'], text)


def _undo_nova_error(ctx, m, server_id, outcome, moved=False):
    """ACTIVE again, a server Nova left in ERROR for our failed request.

    Nova sets a server to ERROR when a live migration fails in a way it
    did not expect (seen in the soak: placement's database restarting as
    the pre-checks failed, "ConsumerAllocationRetrievalFailed"), though
    its guest runs on at the source, untouched. The migration rolls back
    and leaves the server as it found it: only when Nova reports the
    guest running, at a host other than the destination, with no task.
    ``moved``: the guest runs at the destination on its final state
    (:func:`_moved_though_failed`): reset when Nova reports it there.
    """
    if not (outcome['server_status'] == 'ERROR' and
            outcome['task_state'] is None and
            outcome.get('power_state') == nova.RUNNING and
            outcome['host'] and
            (outcome['host'] == m['dest_host']) == moved):
        return
    try:
        nova.reset_to_active(server_id)
    except exception.FedexException as e:
        db.add_event(ctx, 'migration', m['id'], 'cutover',
                     'server %s is in ERROR in Nova after the failed live '
                     'migration, its guest running on %s; not reset to '
                     'ACTIVE: %s' % (server_id, outcome['host'], e),
                     migration_id=m['id'])
        return
    db.add_event(ctx, 'migration', m['id'], 'cutover',
                 'server %s reset to ACTIVE: Nova set it to ERROR for the '
                 'failed live migration, its guest running on %s'
                 % (server_id, outcome['host']), migration_id=m['id'],
                 details={'server_id': server_id})


def first_cutover_began(ctx, m):
    """When the migration's first cutover began, ISO; None: none did."""
    return min(cutover_actions.cutover_starts(
        db.events(ctx, {'migration_id': m['id']})), default=None)


def restore_errored_servers(ctx, m):
    """ACTIVE again, the servers an earlier cutover's failure left in ERROR.

    Nova may set a server to ERROR seconds after its record of our live
    migration says "error" (its compute saves the record first, then the
    server, each through nova-conductor): after the cutover was already
    rolled back on nova_fedex's report or on that record (CI's short
    soak, seed 2511: RabbitMQ restarting and the source's compute killed
    under the cutover). The next cutover, refused by Nova for a server in
    ERROR, and an abort, which leaves the server as it found it, first
    make it ACTIVE again here: only a server whose newest live migration
    since the first cutover of this migration failed (ours), and whose
    guest Nova reports running at a host other than the destination (see
    :func:`_undo_nova_error`). Nova not answering leaves it as it is.
    """
    since = first_cutover_began(ctx, m)
    if since is None or CONF.conductor.compute_driver != 'nova':
        return
    for s in m['servers']:
        try:
            outcome = nova.live_migration_outcome(s['server_id'],
                                                  since=since)
        except Exception as e:      # best effort: never stops the caller
            LOG.warning('migration %s: cannot read Nova\'s state of server '
                        '%s (%s): not restored', m['id'], s['server_id'], e)
            continue
        if outcome['status'] is not None and outcome['ended'] == 'failed':
            _undo_nova_error(ctx, m, s['server_id'], outcome)


def reconcile_nova_cutover(ctx, m):
    """A CUTTING_OVER migration nobody ended: read Nova's records back.

    nova_fedex reports the end of the cutover; when that report is lost
    (or Nova failed before nova_fedex ran), Nova's migration record and
    the server say it: every live migration failed and the servers are
    back at the source -> ROLLED_BACK with Nova's reason; all completed
    at the destination host -> COMPLETED. Still running: nothing yet. A
    guest that nova_fedex reported stranded is left to the operator; one
    whose end nova_fedex reported is fedex-api's to end, and one whose
    steps it reported waits ``NOVA_REPORT_GRACE`` for that report.
    Returns what it did (for the log and the tests).
    """
    m = db.get(ctx, 'migration', m['id'])
    if m['state'] != states.CUTTING_OVER:
        return 'ended'          # nova_fedex's report came first
    began = cutover_began(ctx, m)
    events = [e for e in db.events(ctx, {'migration_id': m['id'],
                                         'kind': 'cutover'})
              if e['created_at'] >= began]
    if any(e['message'].startswith('nova: stranded') for e in events):
        return 'stranded'
    requests = _nova_requests(ctx, m, began)
    if not requests:
        # The cutover job ended without asking Nova: ask again.
        jobs.post(ctx, m['id'], 'cutover')
        return 'reposted'
    outcomes = {}
    now = db.now()
    for server_id, request_id, at in requests:
        outcome = nova.live_migration_outcome(server_id, request_id,
                                              since=began)
        if outcome['status'] is None and (
                now - db.utcfromiso(at)).total_seconds() < NOVA_START_GRACE:
            # No record yet: a request that reached Nova late (an
            # overloaded API) may still start it.
            outcome['ended'] = None
        outcomes[server_id] = outcome
    stalled = {sid: o for sid, o in outcomes.items() if _stalled(o, now)}
    for sid, o in stalled.items():
        if o['task_state'] is None and o['host'] != m['dest_host']:
            # The operator reset the server (the guest runs at the
            # source): Nova's record will say "running" for ever.
            o['ended'] = 'failed'
            o['reason'] = o['reason'] or (
                'Nova\'s record %s stalled at %s, the server reset' % (
                    o['migration'], o['status']))
        elif o['task_state'] is None and o['host'] == m['dest_host']:
            # The destination took the server over (its part of Nova's
            # post-migration ran), and the source's compute failed before
            # it marked the record: the guest moved.
            o['ended'] = 'failed'
            o['reason'] = o['reason'] or (
                'Nova\'s record %s stalled at %s after %s took the '
                'server' % (o['migration'], o['status'], o['host']))
    if any(o['ended'] is None or o['task_state'] is not None
           for o in outcomes.values()):
        if stalled:
            _say_stalled(ctx, m, stalled, events)
            return 'stalled'
        return 'running'
    moved = {sid: o for sid, o in outcomes.items()
             if o['ended'] == 'failed' and o['host'] == m['dest_host']}
    if moved:
        return _moved_though_failed(ctx, m, outcomes, moved, began, events)
    # nova_fedex's reports of this cutover: {event: seconds since}.
    reports = _report_ages(ctx, m, began)
    if any(reports[e] < NOVA_REPORT_GRACE for e in ENDS & set(reports)):
        return 'ended'          # fedex-api is ending it on that report
    if all(o['ended'] == 'completed' and o['host'] == m['dest_host']
           for o in outcomes.values()):
        if reports and min(reports.values()) < NOVA_REPORT_GRACE:
            # nova_fedex drives this cutover: its report of the end
            # follows Nova's record.
            return 'running'
        try:
            cutover_actions.migration_cutover_finish(
                ctx, m['id'], success=True, message=(
                    'Nova completed the live migration to %s (read back '
                    'from Nova\'s records; %s)' % (
                        m['dest_host'], _reports_said(reports))))
        except (exception.InvalidTransition, exception.Conflict):
            return 'ended'      # nova_fedex's report came meanwhile
        return 'completed'
    if all(o['ended'] == 'failed' for o in outcomes.values()):
        reason = '; '.join(
            'Nova %s the live migration of server %s (status %s, server %s '
            'on %s)%s' % ('did not start' if o['status'] is None else
                          'failed', sid, o['status'], o['server_status'],
                          o['host'],
                          ': %s' % o['reason'] if o['reason'] else '')
            for sid, o in sorted(outcomes.items()))
        for sid, o in sorted(outcomes.items()):
            _undo_nova_error(ctx, m, sid, o)
        cutover_actions.migration_cutover_finish(ctx, m['id'], success=False,
                                                 reason=reason)
        return 'rolled_back'
    # Some servers moved, some did not: an operator decides.
    text = 'servers split between the sites after the cutover: %s' % (
        ', '.join('%s %s on %s' % (sid, o['ended'], o['host'])
                  for sid, o in sorted(outcomes.items())))
    if not any(e['message'] == text for e in events):
        db.add_event(ctx, 'migration', m['id'], 'cutover', text,
                     migration_id=m['id'])
    return 'split'


def _delta_applied(ctx, m, began):
    """The servers whose final delta nova_fedex reported applied."""
    servers = [s['server_id'] for s in m['servers']]
    out = set()
    for e in db.events(ctx, {'migration_id': m['id'], 'kind': 'cutover'}):
        details = e['details'] or {}
        if details.get('event') == 'delta_applied' and \
                e['created_at'] >= began:
            # Reports of older nova_fedex name no server.
            sid = details.get('server_id') or (
                servers[0] if len(servers) == 1 else None)
            out.add(sid)
    return out


def _moved_though_failed(ctx, m, outcomes, moved, began, events):
    """Nova failed live migrations that had moved the servers: not a rollback.

    Nova marks its record and the server ERROR when its post-migration
    fails, even after the destination took the server over ("almost
    certainly too late to rollback", says its compute manager; seen in the
    soak with RabbitMQ restarting under the call to the destination): the
    server's host is then the destination. Taking that for a rollback
    sent catch-up rounds from A's stale images and let an abort remove
    the disks the guest ran on at B. With nova_fedex's report that the
    final delta was applied, the guest runs at B on the final state: the
    cutover completed; the server, in ERROR but running there, is reset
    to ACTIVE (once Nova set it: :func:`_error_to_come`). That report
    lost (a compute killed before it sent it), the server's host says the
    same: nova_fedex lets Nova's post-migration run, which makes the
    destination the server's host, only once the final delta is applied
    (``FedexLibvirtDriver._fedex_post``); a failed delta rolls back with
    the source as host. Servers split between the sites are the
    operator's, told not to abort.
    """
    applied = _delta_applied(ctx, m, began)
    said = '; '.join(
        'server %s on %s, Nova\'s record %s %s%s' % (
            sid, o['host'], o['migration'], o['status'],
            ': %s' % o['reason'] if o['reason'] else '')
        for sid, o in sorted(moved.items()))
    unreported = sorted(sid for sid in moved if sid not in applied)
    elsewhere = sorted(sid for sid, o in outcomes.items()
                       if o['host'] != m['dest_host'])
    if elsewhere:
        text = (
            '%s to %s (%s); %s still at the source: the cutover waits for '
            'the operator. Look where each guest runs (virsh list at both '
            'sites) and at Nova\'s records (doc/source/cutover-e2e.rst); do '
            'not abort the migration: it would remove the disks at %s '
            'under a guest that runs on them' % (
                MOVED, m['dest_host'], said, ', '.join(elsewhere),
                m['dest_host']))
        if not any(e['message'] == text for e in events):
            db.add_event(ctx, 'migration', m['id'], 'cutover', text,
                         migration_id=m['id'])
            LOG.warning('migration %s: %s', m['id'], text)
        return 'moved'
    if any(_error_to_come(o) for o in moved.values()):
        return 'running'
    for sid, o in sorted(moved.items()):
        _undo_nova_error(ctx, m, sid, o, moved=True)
    try:
        cutover_actions.migration_cutover_finish(
            ctx, m['id'], success=True, message=(
                'the servers run at %s on their final state: Nova failed '
                'its live migrations after the move (%s), and %s; Nova\'s '
                'records of the move may be incomplete '
                '(doc/source/nova.rst)' % (
                    m['dest_host'], said,
                    'nova_fedex reported each final delta applied'
                    if not unreported else
                    'nova_fedex\'s report of the final delta of %s was lost, '
                    'but Nova made %s their host, which nova_fedex lets it '
                    'do only once the final delta is applied' % (
                        ', '.join(unreported), m['dest_host']))))
    except (exception.InvalidTransition, exception.Conflict):
        return 'ended'
    return 'completed'


def _error_to_come(outcome):
    """Nova marked its record failed and has yet to set the server ERROR.

    Its compute's ``_do_live_migration`` saves the record "error" first,
    then refreshes the server and sets it ERROR, each a call through
    nova-conductor: seconds apart with RabbitMQ restarting. Completed in
    between, the cutover left the server in ERROR at B for good (CI's
    short soak, seed 2511). Not for a record stalled at "running": the
    compute that would set the ERROR is gone.
    """
    if outcome['status'] != 'error' or outcome['server_status'] == 'ERROR':
        return False
    unsaved = _unsaved_for(outcome, db.now())
    return unsaved is not None and unsaved < NOVA_ERROR_GRACE
