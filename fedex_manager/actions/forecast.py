"""The forecast of one migration request: its own servers, link, courier.

The fleet planner (:mod:`fedex_manager.planner`) answers "from how many
VMs does FedEx pay?" from figures a user types. This module answers "how
long will *this* request take, what will cross the WAN, how long will each
server pause?" from the figures of the request itself, which
:mod:`fedex_manager.actions.plans` gathers (each with the words saying
where it comes from, or that it is a default):

FedEx
    *export* every image's allocated bytes at the source terminal, *ship*
    (the courier's door to door, and the sweeper's wait to record it),
    *import*, *catch up* in rounds like the conductor's (the first sends
    what the guests wrote since the export's snapshot; each next one what
    they wrote during the previous one; over when the next one would send
    no more than ``threshold_bytes``, or after ``max_rounds``), then
    *cut over* the servers, ``Route.parallel_cutovers`` at a time (one
    after another unless the request is forecast as a wave, whose
    ``max_parallel_cutovers`` bound it): Nova's own steps, QEMU's
    pre-copy of the memory (:func:`fedex_manager.planner.memory_copy`)
    over the cutovers' share of the link, and the pause.

WAN only
    A plain live migration with block migration, one server after the
    other: the disks' pre-copy (the mirror then stays in step), the memory's
    pre-copy, the pause.

The expected pause of a server is the fixed part measured on the
mini-cloud (libvirt's switchover, the resume, the guest's first write),
the memory left when a pre-copy round fits QEMU's downtime limit, the
final delta (what its disks were written since the last catch-up round)
over the link, and one round trip. A guest that dirties memory at or above
the link's rate has no pause to forecast: its pre-copy never converges, and
the forecast says so.
"""

import dataclasses

from oslo_config import cfg

from fedex_manager import planner

GROUP = 'planner'

planner_opts = [
    cfg.MultiStrOpt(
        'wan_link', default=[],
        help='The WAN between two sites, as "SITE_A SITE_B RATE [ROUND_'
             'TRIP]", e.g. "site-a site-b 100Mbit/s 40ms" (either '
             'direction); repeat it for each pair of sites. Forecasts of '
             'migration requests use it for the memory copy, the final '
             'delta and the catch-up (capped by the migration\'s rate_cap).'),
    cfg.StrOpt('default_wan_rate', default='100Mbit/s',
               help='Rate of a link no wan_link names, stated as assumed in '
                    'the forecast (the rate cap of a migration, when it has '
                    'one, is taken instead).'),
    cfg.StrOpt('default_round_trip', default='20ms',
               help='Round trip of a link no wan_link names (or names '
                    'without one), stated as assumed.'),
    cfg.StrOpt('default_dirty_rate', default='1MB/s',
               help='Rate at which a guest dirties its memory when the '
                    'request does not say (an idle guest\'s order; measure '
                    'one with virsh domdirtyrate-calc), stated as assumed.'),
    cfg.StrOpt('default_write_rate', default='100KiB/s',
               help='Rate at which a server writes distinct blocks of its '
                    'disks when the request does not say (measure one with '
                    'fedex_manager.planner.measure_write_rate), stated as '
                    'assumed.'),
    cfg.StrOpt('export_rate', default='200MB/s',
               help='Bytes per second a source terminal exports to its '
                    'devices (all of them together).'),
    cfg.StrOpt('import_rate', default='200MB/s',
               help='Bytes per second a destination terminal imports from '
                    'its devices (all of them together).'),
    cfg.StrOpt('transit_time', default='24h',
               help='Door to door of a courier that publishes no timetable '
                    '(the manual courier).'),
    cfg.StrOpt('memory_downtime', default='500ms',
               help='QEMU\'s downtime limit at the end of the memory\'s '
                    'pre-copy (Nova\'s live_migration_downtime): the copy '
                    'switches over when what is left would cross in this '
                    'long.'),
    cfg.StrOpt('pause_fixed', default='340ms',
               help='Fixed part of a FedEx cutover\'s pause: libvirt\'s '
                    'switchover, the resume, the guest\'s first write '
                    '(median 343 ms on the mini-cloud, unshaped link, '
                    'cutover-e2e.rst).'),
    cfg.StrOpt('plain_pause_fixed', default='220ms',
               help='Fixed part of a plain live migration\'s pause (median '
                    '216 ms on the mini-cloud, cutover-e2e.rst).'),
    cfg.StrOpt('cutover_setup', default='30s',
               help='Nova\'s own steps of one server\'s live migration '
                    'around the memory copy (pre-checks, '
                    'pre_live_migration, post-migration; 30-38 s on the '
                    'mini-cloud, cutover-e2e.rst).'),
    cfg.IntOpt('live_migrations_per_host', default=1, min=1,
               help='Live migrations a source compute runs at once (Nova\'s '
                    '[DEFAULT] max_concurrent_live_migrations there; Nova\'s '
                    'default is 1). A wave\'s cutovers beyond it wait in '
                    'Nova\'s queue, so the forecast runs no more at once '
                    'than the servers\' hosts allow, and says so.'),
]


def register_opts(conf):
    conf.register_opts(planner_opts, group=GROUP)


def list_opts():
    return [(GROUP, planner_opts)]


@dataclasses.dataclass
class Server:
    """One server (or detached volumes) of the request, its figures."""

    server_id: str
    allocated: int           # bytes allocated in its images (exported)
    memory: int              # bytes of RAM (0: no guest, volumes only)
    dirty_rate: float        # bytes/s of memory the guest dirties
    write_rate: float        # bytes/s of distinct disk blocks written
    guest: bool = True       # False: detached volumes, nothing to pause


@dataclasses.dataclass
class Route:
    """The link, the terminals, the courier and the options."""

    link_rate: float         # bytes/s of the WAN between the two sites
    round_trip: float        # s
    catch_up_rate: float     # bytes/s of the rounds (the link or the cap)
    export_rate: float
    import_rate: float
    transit: float           # s, door to door and recorded
    devices: int
    shipments: int
    threshold: int           # bytes: a round this small means converged
    max_rounds: int
    round_overhead: float    # s each round pays besides its bytes
    memory_downtime: float
    pause_fixed: float
    plain_pause_fixed: float
    cutover_setup: float
    # The pause allowed (the options' downtime_budget; None: any) and what
    # a guest that would not converge gets: 'auto-converge' or 'refuse'
    # (the options' convergence).
    downtime_budget: float = None
    convergence: str = 'refuse'
    # Cutovers running at once: a wave's max_parallel_cutovers; 1 (one
    # after another) for one migration.
    parallel_cutovers: int = 1


def _rate(v):
    return planner.rate(v)


def _catch_up(servers, route, since):
    """The conductor's rounds: (seconds, bytes, rounds, next, converged)."""
    total = sum(s.allocated for s in servers)
    writes = sum(s.write_rate for s in servers)
    chunk = sum(min(s.write_rate * since, s.allocated) for s in servers)
    seconds = sent = 0.0
    rounds = 0
    while True:
        rounds += 1
        took = chunk / route.catch_up_rate + route.round_overhead
        seconds += took
        sent += chunk
        chunk = min(writes * took, total)
        if chunk <= route.threshold:
            return seconds, sent, rounds, chunk, True
        if rounds >= route.max_rounds:
            return seconds, sent, rounds, chunk, False


def _cutovers(servers, route, left, warnings):
    """Each server's cutover, ``route.parallel_cutovers`` at a time.

    (rows, the phase's seconds); the seconds are None if one never ends.
    The servers take the slots in the request's order, each as soon as one
    frees (the conductor starts a wave's members as their turn comes).
    """
    writes = sum(s.write_rate for s in servers)
    slots = max(1, int(route.parallel_cutovers or 1))
    # When each slot frees, and each started cutover's end.
    free, ends = [0.0] * slots, []
    out, never = [], False
    for i, s in enumerate(servers):
        slot = min(range(slots), key=free.__getitem__)
        # After a cutover that never ends the phase has no end; the
        # servers after it are forecast from the catch-up's end (as
        # when they went one after another).
        start = 0.0 if never else free[slot]
        # The memory copies running at once share the link. Each gets
        # the link over the cutovers not yet over when it starts (itself
        # and those after it included), at most the slots, for its whole
        # copy and final delta: one figure known at its start, rather than
        # re-dividing the link at every start and end (each copy's rounds
        # depend on its rate). It errs long: it divides among the cutovers,
        # not only those copying at that moment (Nova's steps leave the
        # link to the others), and the last ones are alone for the end of
        # their copy. One server, or k = 1: the whole link, as before.
        sharing = min(slots, len(servers) - i +
                      sum(1 for e in ends if e > start))
        rate = route.link_rate / sharing
        shared = ('' if sharing == 1 else
                  ', its share of a %s link shared by %d cutovers at once' % (
                      _rate(route.link_rate), sharing))
        # The cutover's own model (planner.memory_forecast): first for the
        # copy's length, which sizes the final delta, then with the whole
        # pause against the budget.
        copy = _memory(s, route, route.pause_fixed + route.round_trip, rate)
        row = {'server_id': s.server_id, 'memory_bytes': s.memory,
               'dirty_rate': s.dirty_rate, 'write_rate': s.write_rate,
               'allocated_bytes': s.allocated, 'converges': copy.converges,
               'means': copy.means, 'throttle': copy.throttle,
               'memory_copy_seconds': None, 'memory_copy_rounds': None,
               'memory_bytes_over_wan': None, 'final_delta_bytes': None,
               'pause_seconds': None}
        out.append(row)
        if not copy.converges:
            warnings.append(
                'server %s will not converge: its guest dirties memory at '
                '%s, the link carries %s%s (%s); %s' % (
                    s.server_id, _rate(s.dirty_rate), _rate(rate), shared,
                    copy.reason, 'its cutover will be refused before the '
                    'pause (convergence: refuse). Lower its dirty rate or '
                    'give it a faster link.' if route.convergence == 'refuse'
                    else 'not even with auto-converge.'))
            never = True
            continue
        # The final delta: what the catch-up left, plus what the disks were
        # written since: from the catch-up's end to this cutover's pause.
        setup = route.cutover_setup if s.guest else 0.0
        share = left * s.write_rate / writes if writes else 0.0
        window = start + setup + copy.copy_seconds
        delta = min(share + s.write_rate * window, s.allocated)
        copy = _memory(s, route, route.pause_fixed + delta / rate
                       + route.round_trip, rate)
        row.update(converges=copy.converges, means=copy.means,
                   throttle=copy.throttle)
        if not copy.converges:
            warnings.append('server %s will not converge: %s' % (
                s.server_id, copy.reason))
            never = True
            continue
        if copy.means == planner.AUTO_CONVERGE:
            warnings.append(
                'server %s will not converge by pre-copy alone (%s): its '
                'cutover throttles the vCPUs up to %d %% (auto-converge).' % (
                    s.server_id, copy.reason, round(copy.throttle * 100)))
        took = setup + copy.copy_seconds + delta / rate + route.round_trip
        row.update(memory_copy_seconds=copy.copy_seconds,
                   memory_copy_rounds=copy.rounds,
                   memory_bytes_over_wan=copy.wan_bytes,
                   final_delta_bytes=delta)
        if s.guest:
            row['pause_seconds'] = copy.pause_seconds
            # The memory's last round is in its copy already.
            took += route.pause_fixed
        if not never:
            free[slot] = start + took
            ends.append(free[slot])
    return out, None if never else max(free)


def _memory(server, route, other_pause, rate):
    return planner.memory_forecast(
        server.memory, server.dirty_rate, rate,
        route.memory_downtime, other_pause=other_pause,
        budget=route.downtime_budget, policy=route.convergence)


def fedex(servers, route, warnings):
    """The FedEx way: a WayResult-like dict and the servers' rows."""
    allocated = sum(s.allocated for s in servers)
    export = allocated / route.export_rate
    import_ = allocated / route.import_rate
    since = export + route.transit + import_
    catch_up, sent, rounds, left, converged = _catch_up(servers, route, since)
    if not converged:
        warnings.append(
            'the catch-up will not converge: the servers write %s, the '
            'rounds send %s; after %d rounds the migration is ready anyway '
            'with a larger final delta.' % (
                _rate(sum(s.write_rate for s in servers)),
                _rate(route.catch_up_rate), route.max_rounds))
    rows, cutover = _cutovers(servers, route, left, warnings)
    phases = {'export': export, 'ship': route.transit, 'import': import_,
              'catch_up': catch_up, 'cutover': cutover}
    pauses = [r['pause_seconds'] for r, s in zip(rows, servers) if s.guest]
    over_wan = sent + sum(
        (r['memory_bytes_over_wan'] or 0) + (r['final_delta_bytes'] or 0)
        for r in rows)
    if cutover is None:
        over_wan = None         # a memory copy that never ends
    way = {'way': 'fedex', 'phases': phases, 'wan_bytes': over_wan,
           'total_time': None if cutover is None else sum(phases.values()),
           'expected_pause': None if None in pauses else max(pauses or [0]),
           'devices': route.devices, 'shipments': route.shipments}
    catch = {'rounds': rounds, 'converges': converged, 'bytes': sent,
             'seconds': catch_up, 'rate': route.catch_up_rate,
             'left_bytes': left}
    return way, rows, catch


def wan_only(servers, route, warnings):
    """Plain live migrations with block migration, one after the other."""
    total, over_wan, pause = 0.0, 0.0, 0.0
    for s in servers:
        # A plain live migration: Nova's stock pre-copy, no budget.
        memory = planner.memory_forecast(
            s.memory, s.dirty_rate, route.link_rate, route.memory_downtime,
            policy='refuse')
        copy = memory if memory.converges else None
        if s.write_rate >= route.link_rate:
            warnings.append(
                'over the WAN alone, server %s will not converge: its disks '
                'are written at %s, the link carries %s.' % (
                    s.server_id, _rate(s.write_rate), _rate(route.link_rate)))
            copy = None
        if copy is None or total is None:
            total = pause = None
            continue
        disk = planner.live_copy(s.allocated, s.write_rate, route.link_rate,
                                 route.memory_downtime)
        # The disks' mirror stays in step while the memory is copied.
        mirrored = s.write_rate * copy.copy_seconds
        this = (route.plain_pause_fixed + copy.memory_pause_seconds +
                route.round_trip)
        if not s.guest:
            # Detached volumes: a block copy, no guest to pause.
            total += disk.time + route.round_trip
            over_wan += disk.wan_bytes
            continue
        # The memory's last round is in its copy already.
        total += (route.cutover_setup + disk.time + copy.copy_seconds + this
                  - copy.memory_pause_seconds)
        over_wan += disk.wan_bytes + mirrored + copy.wan_bytes
        pause = max(pause, this)
    if total is None:
        over_wan = None
    return {'way': 'wan', 'total_time': total,
            'phases': {'live_migration': total}, 'wan_bytes': over_wan,
            'expected_pause': pause, 'devices': 0, 'shipments': 0}


def forecast(servers, route, assumes=None, warnings=()):
    """Both ways for the request's ``servers`` over ``route``.

    ``assumes``: {figure: [what it assumes, ...]} as gathered; returned as
    one sentence per figure the preview shows. ``warnings``: the gatherer's
    own (a preflight refusal, devices short...), then the model's.
    """
    warnings = list(warnings)
    fx, rows, catch = fedex(servers, route, warnings)
    wan = wan_only(servers, route, warnings)
    known = [w for w in (fx, wan) if w['total_time'] is not None]
    recommended = (min(known, key=lambda w: w['total_time'])['way']
                   if known else None)
    return {'kind': 'forecast', 'wan': wan, 'fedex': fx,
            'recommended': recommended, 'break_even_vms': None,
            'servers': rows, 'catch_up': catch,
            'link': {'rate': route.link_rate, 'round_trip': route.round_trip,
                     'catch_up_rate': route.catch_up_rate},
            'assumes': {k: ' '.join(v) for k, v in (assumes or {}).items()},
            'warnings': warnings}
