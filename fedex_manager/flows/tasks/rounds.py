"""One catch-up round over LSRP, as the catch-up and the cutover run it.

:func:`one_round` runs the next round (a catch-up round waits, within
``[conductor] peer_patience``, for a destination terminal that does not
answer; the cutover's final delta does not) and records its figures and a
``progress`` event; :func:`round_params` and :func:`catchup_name` say what
the source terminal sends and under which name.
"""

import time

from oslo_config import cfg
import tenacity

from fedex_manager.actions import sites
from fedex_manager.db import api as db
from fedex_manager.flows.tasks import common
from fedex_manager import options as options_mod
from lsrp import exception

CONF = cfg.CONF


def catchup_name(ctx, m):
    """The name m's rounds go under at the destination.

    Its shipment's when one shipment carried all its images (the import
    authorized them under it); else (several shipments, or seeded over
    the WAN) one of its own, authorized by :class:`Authorize`.
    """
    sids = {v['shipment_id'] for v in m['volumes']}
    if len(sids) == 1 and None not in sids:
        return db.get(ctx, 'shipment', sids.pop())['name']
    return 'fedex-%s-wan' % common.short(m['id'])


def round_params(ctx, m):
    dest = common._terminal(ctx, m['dest_terminal_id'])
    return {'shipment_id': catchup_name(ctx, m), 'images': common._specs(m),
            'base': m['last_snapshot'],
            'peer': {'name': dest['name'],
                     'address': dest['lsrp_address']},
            'rate_cap': options_mod.rate_cap(m['options'])}


def _unreachable(e):
    return isinstance(e, exception.OperationFailed) and \
        'TerminalUnreachable' in str(e)


def _round_op_id(ctx, m, kind, number):
    """Round ``number``'s operation id; a new one after each unreachable try.

    Taken from the database, so that a conductor that resumes the phase
    finds the try in flight rather than starting another.
    """
    base = '%s.%s.%d' % (m['id'], kind, number)
    failed = [o for o in db.list_(ctx, 'operation', {'migration_id': m['id'],
                                                     'kind': kind})
              if (o['id'] == base or o['id'].startswith(base + '.try')) and
              o['state'] == 'ERROR']
    return '%s.try%d' % (base, len(failed) + 1) if failed else base


def _wait_for_peer(ctx, m, generation, task_, failed_at, deadline):
    """Until the destination beats UP after ``failed_at``, or ``deadline``.

    A heartbeat says UP only once the terminal's LSRP port accepts
    connections (lsrp-agent), so the next try does not fail the same way.
    """
    while time.monotonic() < deadline:
        common.guard(ctx, m['id'], generation, task_.phase, task_.allowed)
        term = sites.terminal_show(ctx, m['dest_terminal_id'])
        beat = db.utcfromiso(term.get('last_heartbeat'))
        if term['health'] == 'UP' and beat and beat > failed_at:
            return
        time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))


def _round_with_patience(task_, ctx, m, generation, kind, number):
    """One round; waits for an unreachable destination, within patience.

    The destination terminal may be down for a while (a restart, a
    crash): the round is tried again, each time with a new operation id,
    when the terminal reports UP again (or every ``[conductor]
    peer_retry_interval``), until it passes or ``[conductor] peer_patience``
    runs out (PeerGone: the migration FAILED naming the terminal).
    """
    patience = CONF.conductor.peer_patience
    interval = CONF.conductor.peer_retry_interval
    since = time.monotonic()
    dest = common._terminal(ctx, m['dest_terminal_id'])['name']
    waits = []

    def attempt():
        params = dict(round_params(ctx, m), number=number)
        return task_.op(ctx, m, generation, m['source_terminal_id'], kind,
                        _round_op_id(ctx, m, kind, number), params)

    def wait_for_peer(state):
        waits.append(state.outcome.exception())
        failed_at = db.now()
        db.add_event(ctx, 'migration', m['id'], 'error',
                     'round %d: destination terminal %s unreachable (%s); '
                     'waiting for it, then trying again (%d s of %d s of '
                     'patience spent)' % (number, dest, waits[-1],
                                          time.monotonic() - since,
                                          patience),
                     migration_id=m['id'])
        _wait_for_peer(ctx, m, generation, task_, failed_at, min(
            time.monotonic() + interval, since + patience))

    try:
        result = tenacity.Retrying(
            retry=tenacity.retry_if_exception(_unreachable),
            stop=tenacity.stop_after_delay(patience),
            wait=tenacity.wait_none(), before_sleep=wait_for_peer,
            reraise=True)(attempt)
    except exception.OperationFailed as e:
        if not _unreachable(e):
            raise
        raise exception.PeerGone(migration=m['id'], operation='%s %d' % (
            kind, number), terminal=dest, seconds=time.monotonic() - since,
            reason=e)
    if waits:
        db.add_event(ctx, 'migration', m['id'], 'health',
                     'round %d: destination terminal %s answers again after '
                     '%d tries; catch-up goes on'
                     % (number, dest, len(waits) + 1),
                     migration_id=m['id'])
    return result


def one_round(task_, ctx, m, generation, kind='catchup_round'):
    number = (m['rounds'] or 0) + 1
    if kind == 'catchup_round':
        result = _round_with_patience(task_, ctx, m, generation, kind,
                                      number)
    else:
        # The final delta runs with the VM paused: no waiting there (the
        # cutover's own rules roll it back).
        params = dict(round_params(ctx, m), number=number)
        result = task_.op(ctx, m, generation, m['source_terminal_id'], kind,
                          '%s.%s.%d' % (m['id'], kind, number), params)
    rate = result.get('wire_rate')
    # In the catch-up the ETA is that of the next round (what the writers
    # dirty at this round's rate): whether it converges is the rounds' job.
    values = {'rounds': number, 'last_snapshot': result['snapshot'],
              'last_round_bytes': result['wire_bytes'], 'rate': rate,
              'eta_seconds': result['estimate'] / rate if rate else None}
    m = db.update(ctx, 'migration', m['id'], values)
    db.add_event(ctx, 'migration', m['id'], 'progress',
                 'round %d: %d bytes changed, %d on the wire in %.1f s; '
                 'next about %d' % (number, result['changed_bytes'],
                                    result['wire_bytes'], result['seconds'],
                                    result['estimate']),
                 migration_id=m['id'], details=result)
    return m, result
