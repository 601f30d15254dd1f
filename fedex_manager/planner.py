"""The ship-or-WAN planner: is FedEx faster and cheaper than the WAN?

(One module past 400 lines on purpose: its models are one derivation that
reads top to bottom, as ``doc/source/planner.rst`` follows it.)

Pure arithmetic over figures the operator measures or knows; no fitted
constant. Units: bytes, seconds, bytes per second, one currency.

WAN-only (plain live migration, one VM after the other, as the thesis
compares it): a VM's storage and memory are pre-copied in rounds. Round 0
sends the allocated bytes; each next round sends what the guest wrote during
the previous one, so round k lasts ``t0 * r**k`` with ``r = w / B``. The sum
converges to ``(A + M) / (B - w)`` only when ``w < B``; otherwise the plan is
refused. The rounds stop when one would last no longer than the downtime
budget: that round runs with the guest paused, so it is the expected pause.

FedEx: (1) export every VM's allocated bytes to devices at the source
terminal, (2) ship them, (3) import them at the destination terminal,
(4) catch up over the WAN what the guests wrote since the export snapshot,
all VMs at once, while their replicas are kept in sync (so the sum of their
write rates must stay below the bandwidth), then (5) cut them over one after
the other, each sending its memory and a final delta like the last rounds of
a live migration.

The break-even number of VMs is the smallest N for which FedEx takes no
longer than the WAN. With costs that grow linearly in N (the thesis' setting:
a fixed shipping time plus a per-VM time each way) it is
``ceil(fixed / (per_vm_wan - per_vm_fedex))``; the planner finds it by
comparing both totals, which also covers the non-linear parts (devices
filling up, the catch-up growing with the time spent shipping).

This is the fleet planner, over figures a user gives. The forecast of one
migration request, from that request's own servers, link and courier, is
:mod:`fedex_manager.actions.forecast`; its memory copy and pause use
:func:`memory_copy` here.
"""

import dataclasses
import math
import re

from lsrp import exception

GB = 10 ** 9
DAY = 86400.0
HOUR = 3600.0


PlanCannotConverge = exception.PlanCannotConverge
InvalidPlanInput = exception.InvalidPlanInput


@dataclasses.dataclass
class VMProfile:
    """One VM (or ``count`` identical VMs) to move."""

    size: int                      # provisioned bytes of all its disks
    allocated: int = None          # bytes actually allocated (default: size)
    write_rate: float = 0.0        # bytes/s of distinct changed extents
    memory: int = 0                # bytes of RAM sent at cutover
    count: int = 1
    # bytes/s of memory its guest dirties (measure one with virsh
    # domdirtyrate-calc); None: its write_rate, as the thesis assumes.
    dirty_rate: float = None

    def __post_init__(self):
        if self.allocated is None:
            self.allocated = self.size
        for field in ('size', 'allocated', 'memory', 'write_rate',
                      'dirty_rate'):
            if (getattr(self, field) or 0) < 0:
                raise InvalidPlanInput(field=field, reason='must be >= 0')
        if self.allocated > self.size:
            raise InvalidPlanInput(
                field='allocated',
                reason='%d bytes exceed the size %d' % (self.allocated,
                                                        self.size))
        if self.count < 1:
            raise InvalidPlanInput(field='count', reason='must be >= 1')


@dataclasses.dataclass
class Link:
    """The WAN and the two terminals' devices, the courier, the prices."""

    wan_bandwidth: float               # bytes/s available to migrations
    device_write_rate: float = 200e6   # bytes/s per device slot, source
    device_read_rate: float = 200e6    # bytes/s per device slot, destination
    device_capacity: int = 8 * 10 ** 12
    device_slots: int = 1              # devices written/read at once
    parity: int = 0                    # extra devices a shipment may lose
    transit_time: float = 12 * HOUR    # courier door to door
    downtime_budget: float = 0.5       # longest acceptable pause, s
    # A guest that would not converge: 'auto-converge' or 'refuse'.
    convergence: str = 'auto-converge'
    cost_per_shipment: float = 0.0
    cost_per_device: float = 0.0       # bought or rented, per device
    wan_cost_per_gb: float = 0.0

    def __post_init__(self):
        for field in ('wan_bandwidth', 'device_write_rate',
                      'device_read_rate', 'device_capacity', 'device_slots',
                      'downtime_budget'):
            if getattr(self, field) <= 0:
                raise InvalidPlanInput(field=field, reason='must be > 0')
        for field in ('transit_time', 'cost_per_shipment', 'cost_per_device',
                      'wan_cost_per_gb', 'parity'):
            if getattr(self, field) < 0:
                raise InvalidPlanInput(field=field, reason='must be >= 0')


@dataclasses.dataclass
class LiveCopy:
    """A pre-copy of ``bytes_`` while the guest writes ``write_rate``."""

    time: float       # seconds from first byte to resume
    wan_bytes: float  # bytes sent, every round counted
    rounds: int
    pause: float      # the last round, run with the guest paused


def live_copy(bytes_, write_rate, bandwidth, downtime_budget, what='a VM'):
    """Rounds of a pre-copy over ``bandwidth``; see the module docstring."""
    if write_rate >= bandwidth:
        raise PlanCannotConverge(what=what, write_rate=rate(write_rate),
                                 bandwidth=rate(bandwidth))
    r = write_rate / bandwidth
    t = bytes_ / bandwidth
    total, rounds = 0.0, 0
    # The round that fits the budget is the paused one; a guest that never
    # writes needs one round only.
    while True:
        rounds += 1
        total += t
        if t <= downtime_budget or r == 0.0:
            break
        t *= r
    # With no writes the one round runs live and nothing is left for the
    # pause; otherwise the last round is the paused one.
    pause = 0.0 if r == 0.0 else t
    return LiveCopy(time=total, wan_bytes=total * bandwidth, rounds=rounds,
                    pause=pause)


def memory_copy(memory, dirty_rate, bandwidth, downtime_limit):
    """QEMU's pre-copy of a guest's ``memory``; None if it never converges.

    The rounds of :func:`live_copy` over the memory: the copy switches over
    when what is left fits ``downtime_limit`` (QEMU's max downtime, Nova's
    ``live_migration_downtime``), and that last round, sent with the guest
    paused, is the memory's part of the pause. A guest that dirties its
    memory at or above ``bandwidth`` never gets there (QEMU's stock
    pre-copy runs until Nova's completion timeout): None.
    """
    if memory <= 0:
        return LiveCopy(time=0.0, wan_bytes=0.0, rounds=0, pause=0.0)
    if dirty_rate >= bandwidth:
        return None
    return live_copy(memory, dirty_rate, bandwidth, downtime_limit)


# QEMU's auto-converge (VIR_MIGRATE_AUTO_CONVERGE), its defaults in QEMU 10:
# at a dirty-bitmap sync at least a second after the last check, a period
# in which the guest dirtied more than half of what was sent counts as
# high; every second high period throttles the vCPUs, first to 20 %, then
# 10 points more each time, up to 99 %.
THROTTLE_INITIAL = 0.20
THROTTLE_INCREMENT = 0.10
THROTTLE_MAX = 0.99
THROTTLE_PERIOD = 1.0
THROTTLE_TRIGGER = 0.5
# A forecast copy longer than this never ends for practical purposes.
COPY_HORIZON = 86400.0
# How a guest's memory crosses at the cutover (MemoryForecast.means).
PRE_COPY = 'pre-copy'
AUTO_CONVERGE = 'auto-converge'
# The policies of a migration's ``convergence`` option.
CONVERGENCE_POLICIES = (AUTO_CONVERGE, 'refuse')


@dataclasses.dataclass
class ThrottledCopy(LiveCopy):
    """A pre-copy with auto-converge: also the vCPU throttle it reached."""

    throttle: float = 0.0


def auto_converge_copy(memory, dirty_rate, bandwidth, downtime_limit,
                       working_set=None):
    """QEMU's pre-copy with auto-converge; None if even 99 % is too little.

    Each round sends what the guest dirtied during the previous one (at
    most its ``working_set``, else its whole memory), at ``dirty_rate``
    times what the throttle leaves of its vCPUs' time; the throttle rises
    as QEMU raises it (the THROTTLE_* constants). The copy switches over,
    as without throttling, when what is left fits ``downtime_limit``.
    """
    cap = float(min(memory, working_set or memory))
    if memory <= 0:
        return ThrottledCopy(time=0.0, wan_bytes=0.0, rounds=0, pause=0.0)
    left, total, sent, rounds = float(memory), 0.0, 0.0, 0
    throttle, high = 0.0, 0
    period = period_sent = period_dirtied = 0.0
    while total <= COPY_HORIZON:
        t = left / bandwidth
        rounds += 1
        if t <= downtime_limit or dirty_rate == 0:
            return ThrottledCopy(time=total + t, wan_bytes=sent + left,
                                 rounds=rounds, pause=t if dirty_rate
                                 else 0.0, throttle=throttle)
        dirtied = min(dirty_rate * (1.0 - throttle) * t, cap)
        total += t
        sent += left
        period += t
        period_sent += left
        period_dirtied += dirtied
        if period >= THROTTLE_PERIOD:
            if period_dirtied > THROTTLE_TRIGGER * period_sent:
                high += 1
                if high >= 2:
                    high = 0
                    throttle = (min(throttle + THROTTLE_INCREMENT,
                                    THROTTLE_MAX) if throttle
                                else THROTTLE_INITIAL)
            period = period_sent = period_dirtied = 0.0
        if (throttle >= THROTTLE_MAX and
                dirty_rate * (1.0 - throttle) >= bandwidth):
            return None
        left = dirtied
    return None


@dataclasses.dataclass
class MemoryForecast:
    """One guest's memory at its cutover: how it crosses, and the pause.

    ``means``: ``pre-copy`` (QEMU's stock pre-copy converges and the pause
    fits the budget), ``auto-converge`` (only with the vCPUs throttled), or
    None: the cutover must be refused. ``reason`` says why the stock
    pre-copy is not enough (None when it is). ``copy_seconds``,
    ``pause_seconds``...: of the means chosen; when refused, what the stock
    pre-copy would give if forced to switch over (its whole remainder).
    """

    memory: int
    dirty_rate: float
    link_rate: float
    budget: float
    means: str
    reason: str
    copy_seconds: float
    rounds: int
    wan_bytes: float
    pause_seconds: float
    memory_pause_seconds: float
    throttle: float = 0.0

    @property
    def converges(self):
        return self.means is not None

    def as_dict(self):
        return dict(dataclasses.asdict(self), converges=self.converges)


def _mbps(bytes_per_s):
    return '%.1f MB/s' % (bytes_per_s / 1e6)


def memory_forecast(memory, dirty_rate, link_rate, downtime_limit,
                    other_pause=0.0, budget=None, policy=AUTO_CONVERGE,
                    working_set=None):
    """The one model of a guest's memory copy and pause, and its verdict.

    The planner, the request's forecast and the manager's check before a
    cutover (:func:`fedex_manager.actions.cutover.convergence`) all ask
    it. ``other_pause``: the rest of the pause (libvirt's switchover and
    resume, the final delta over the link, a round trip); ``budget``: the
    longest pause allowed (None: any); ``policy``: ``auto-converge`` (cut
    over with QEMU's auto-converge when the stock pre-copy would not do)
    or ``refuse``. ``memory``: the bytes the first round sends (a guest's
    resident memory when known: QEMU sends untouched pages as a flag);
    ``working_set``: the most the guest dirties between two rounds, when
    measured (else its memory).
    """
    rest = float(min(memory, working_set or memory))

    def result(means, copy, reason, throttle=0.0):
        return MemoryForecast(
            memory=memory, dirty_rate=dirty_rate, link_rate=link_rate,
            budget=budget, means=means, reason=reason,
            copy_seconds=copy.time if copy else None,
            rounds=copy.rounds if copy else None,
            wan_bytes=copy.wan_bytes if copy else None,
            pause_seconds=copy.pause + other_pause if copy else (
                rest / link_rate + other_pause),
            memory_pause_seconds=copy.pause if copy else rest / link_rate,
            throttle=throttle)

    def fits(copy):
        return copy is not None and (
            budget is None or copy.pause + other_pause <= budget)

    plain = memory_copy(memory, dirty_rate, link_rate, downtime_limit)
    if fits(plain):
        return result(PRE_COPY, plain, None)
    if plain is None:
        # Forced to switch over, the stock pre-copy would pause the guest
        # for all it dirties: each round is longer than the last.
        pause = rest / link_rate + other_pause
        reason = ('dirty rate %s exceeds the link\'s %s; expected pause '
                  '%.1f s' % (_mbps(dirty_rate), _mbps(link_rate), pause))
    else:
        pause = plain.pause + other_pause
        reason = ('dirty rate %s, link %s; expected pause %.1f s' % (
            _mbps(dirty_rate), _mbps(link_rate), pause))
    if budget is not None:
        reason += ' > budget %s s' % ('%g' % budget)
    if policy == AUTO_CONVERGE:
        throttled = auto_converge_copy(memory, dirty_rate, link_rate,
                                       downtime_limit, working_set)
        if fits(throttled):
            return result(AUTO_CONVERGE, throttled, reason,
                          throttled.throttle)
        reason += ('; auto-converge would not help (the vCPUs throttled '
                   'to %d %%)' % (THROTTLE_MAX * 100) if throttled is None
                   else '; nor with auto-converge')
    out = result(None, plain, reason)
    out.pause_seconds = pause
    return out


@dataclasses.dataclass
class WayResult:
    """Totals of one way (WAN-only or FedEx) for a given set of VMs."""

    way: str
    total_time: float
    phases: dict            # phase name -> seconds, in order
    wan_bytes: float
    expected_pause: float   # the longest pause of any VM
    devices: int
    shipments: int
    cost: float

    def as_dict(self):
        return dataclasses.asdict(self)


def _expand(vms):
    for vm in vms:
        for _ in range(vm.count):
            yield vm


def wan_only(vms, link):
    """One VM after the other over the WAN, each a full live migration."""
    total, wan_bytes, pause = 0.0, 0.0, 0.0
    for i, vm in enumerate(vms):
        copy = live_copy(vm.allocated + vm.memory, vm.write_rate,
                         link.wan_bandwidth, link.downtime_budget,
                         what='VM group %d' % i)
        total += copy.time * vm.count
        wan_bytes += copy.wan_bytes * vm.count
        pause = max(pause, copy.pause)
    return WayResult(way='wan', total_time=total,
                     phases={'live_migration': total}, wan_bytes=wan_bytes,
                     expected_pause=pause, devices=0, shipments=0,
                     cost=wan_bytes / GB * link.wan_cost_per_gb)


def devices_needed(vms, link):
    """Devices to hold every VM's allocated bytes, plus parity devices.

    Images may span devices; parity devices hold no more data.
    """
    allocated = sum(vm.allocated * vm.count for vm in vms)
    return max(1, math.ceil(allocated / link.device_capacity)) + link.parity


def fedex(vms, link, warnings=None):
    """Export, ship, import, catch up, cut over; see the module docstring.

    ``warnings``: a list to which a VM group that converges only with
    auto-converge is added.
    """
    allocated = sum(vm.allocated * vm.count for vm in vms)
    aggregate_rate = sum(vm.write_rate * vm.count for vm in vms)
    devices = devices_needed(vms, link)
    # Parity is written alongside the data: it adds no time of its own
    # when there is a slot for it.
    slots = min(link.device_slots, devices - link.parity) or 1
    export = allocated / (link.device_write_rate * slots)
    import_ = allocated / (link.device_read_rate * slots)
    since_snapshot = export + link.transit_time + import_
    if aggregate_rate >= link.wan_bandwidth:
        raise PlanCannotConverge(
            what='the %d VMs together' % sum(vm.count for vm in vms),
            write_rate=rate(aggregate_rate), bandwidth=rate(link.wan_bandwidth))
    # What the guests changed since the snapshot, never more than they hold.
    delta = sum(min(vm.write_rate * since_snapshot, vm.allocated) * vm.count
                for vm in vms)
    catch_up = delta / (link.wan_bandwidth - aggregate_rate)
    # While one VM cuts over, the replicas of the others are kept in sync.
    cutover, cut_bytes, pause = 0.0, 0.0, 0.0
    for i, vm in enumerate(vms):
        others = aggregate_rate - vm.write_rate
        dirty = vm.write_rate if vm.dirty_rate is None else vm.dirty_rate
        room = link.wan_bandwidth - others
        # The cutover's model (memory_forecast), its memory and final delta.
        copy = memory_forecast(
            vm.memory + vm.write_rate * link.downtime_budget, dirty, room,
            link.downtime_budget, policy=link.convergence)
        if not copy.converges:
            raise PlanCannotConverge(what='VM group %d' % i,
                                     write_rate=rate(dirty),
                                     bandwidth=rate(room))
        if copy.means == AUTO_CONVERGE and warnings is not None:
            warnings.append(
                'VM group %d will not converge by pre-copy alone (%s): its '
                'cutover throttles the vCPUs up to %d %% (auto-converge), '
                'the memory copy about %s' % (
                    i, copy.reason, round(copy.throttle * 100),
                    duration(copy.copy_seconds)))
        cutover += copy.copy_seconds * vm.count
        cut_bytes += copy.wan_bytes * vm.count
        pause = max(pause, copy.memory_pause_seconds)
    # Mirroring during catch-up and cutover is WAN traffic too.
    wan_bytes = (delta + aggregate_rate * (catch_up + cutover) + cut_bytes)
    phases = {'export': export, 'ship': link.transit_time, 'import': import_,
              'catch_up': catch_up, 'cutover': cutover}
    cost = (link.cost_per_shipment + devices * link.cost_per_device
            + wan_bytes / GB * link.wan_cost_per_gb)
    return WayResult(way='fedex', total_time=sum(phases.values()),
                     phases=phases, wan_bytes=wan_bytes,
                     expected_pause=pause, devices=devices, shipments=1,
                     cost=cost)


def break_even_linear(fixed, per_vm_wan, per_vm_fedex):
    """Smallest N with ``fixed + N*per_vm_fedex <= N*per_vm_wan``, or None."""
    saving = per_vm_wan - per_vm_fedex
    if saving <= 0:
        return None
    return max(1, math.ceil(fixed / saving))


def break_even(vm, link, limit=10 ** 6, key='total_time'):
    """Smallest count of VMs like ``vm`` for which FedEx is no worse.

    ``key`` is 'total_time' or 'cost'. None when FedEx never wins below
    ``limit`` VMs (or when that many cannot converge at all).
    """
    def fedex_wins(n):
        group = [dataclasses.replace(vm, count=n)]
        try:
            f = fedex(group, link)
        except PlanCannotConverge:
            return None
        return getattr(f, key) <= getattr(wan_only(group, link), key)

    # FedEx's fixed part is paid once, its per-VM part is smaller: once it
    # wins it keeps winning until the catch-up stops converging. Double, then
    # bisect.
    hi = 1
    while True:
        won = fedex_wins(hi)
        if won is None:
            return None
        if won:
            break
        if hi >= limit:
            return None
        hi = min(hi * 2, limit)
    lo = hi // 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fedex_wins(mid):
            hi = mid
        else:
            lo = mid
    return hi


@dataclasses.dataclass
class Plan:
    wan: WayResult
    fedex: WayResult
    break_even_vms: int          # by time, for VMs like the average one
    break_even_vms_cost: int     # by cost; None when FedEx never is cheaper
    recommended: str             # 'fedex' or 'wan'
    warnings: list = dataclasses.field(default_factory=list)

    def as_dict(self):
        return {'wan': self.wan.as_dict(), 'fedex': self.fedex.as_dict(),
                'break_even_vms': self.break_even_vms,
                'break_even_vms_cost': self.break_even_vms_cost,
                'recommended': self.recommended,
                'warnings': list(self.warnings)}


def average_vm(vms):
    """One VM profile with the mean of every figure of ``vms``."""
    n = sum(vm.count for vm in vms)
    return VMProfile(
        size=sum(vm.size * vm.count for vm in vms) // n,
        allocated=sum(vm.allocated * vm.count for vm in vms) // n,
        write_rate=sum(vm.write_rate * vm.count for vm in vms) / n,
        memory=sum(vm.memory * vm.count for vm in vms) // n,
        dirty_rate=None if all(vm.dirty_rate is None for vm in vms) else
        sum((vm.write_rate if vm.dirty_rate is None else vm.dirty_rate) *
            vm.count for vm in vms) / n)


def plan(vms, link):
    """Both ways for ``vms`` over ``link``, and where FedEx starts to pay."""
    vms = list(vms)
    if not vms:
        raise InvalidPlanInput(field='vms', reason='at least one VM is needed')
    wan = wan_only(vms, link)
    warnings = []
    fx = fedex(vms, link, warnings)
    average = average_vm(vms)
    by_cost = None
    if link.wan_cost_per_gb or link.cost_per_shipment or link.cost_per_device:
        by_cost = break_even(average, link, key='cost')
    return Plan(wan=wan, fedex=fx,
                break_even_vms=break_even(average, link),
                break_even_vms_cost=by_cost,
                recommended='fedex' if fx.total_time < wan.total_time
                else 'wan', warnings=warnings)


def curve(vm, link, counts):
    """(count, wan seconds, fedex seconds or None) for each count: a chart."""
    for n in counts:
        group = [dataclasses.replace(vm, count=n)]
        try:
            f = fedex(group, link).total_time
        except PlanCannotConverge:
            f = None
        try:
            w = wan_only(group, link).total_time
        except PlanCannotConverge:
            w = None
        yield n, w, f


# --- measuring write rates -------------------------------------------------

def changed_bytes(image, from_snapshot):
    """Bytes changed since ``from_snapshot`` in an open lsrp.rbd.Image.

    The image is opened at a later snapshot or at its head.
    """
    return sum(ext.length for ext in image.extents(from_snapshot=from_snapshot))


def measure_write_rate(pool, image_name, older, newer, interval=None):
    """Write rate of an RBD image between two of its snapshots, bytes/s.

    ``pool`` is an open :class:`lsrp.rbd.Pool`. ``interval`` defaults to the
    time between the two snapshots' creation timestamps.
    """
    with pool.open_image(image_name, snapshot=newer) as image:
        changed = changed_bytes(image, older)
        if interval is None:
            interval = (image.snapshot_timestamp(newer)
                        - image.snapshot_timestamp(older))
    if interval <= 0:
        raise InvalidPlanInput(
            field='interval',
            reason='snapshots %s and %s of %s were taken less than a second '
                   'apart; give the interval' % (older, newer, image_name))
    return changed / interval


# --- units -------------------------------------------------------------------

_SIZE = {'': 1, 'b': 1, 'k': 10 ** 3, 'kb': 10 ** 3, 'm': 10 ** 6,
         'mb': 10 ** 6, 'g': GB, 'gb': GB, 't': 10 ** 12, 'tb': 10 ** 12,
         'kib': 2 ** 10, 'mib': 2 ** 20, 'gib': 2 ** 30, 'tib': 2 ** 40}
_RATE = {'bit/s': 1 / 8, 'kbit/s': 1e3 / 8, 'mbit/s': 1e6 / 8,
         'gbit/s': 1e9 / 8, 'b/s': 1, 'kb/s': 1e3, 'mb/s': 1e6, 'gb/s': 1e9,
         'kib/s': 2 ** 10, 'mib/s': 2 ** 20, 'gib/s': 2 ** 30, 'bps': 1 / 8,
         'kbps': 1e3 / 8, 'mbps': 1e6 / 8, 'gbps': 1e9 / 8}
_TIME = {'': 1, 'ms': 1e-3, 's': 1, 'min': 60, 'm': 60, 'h': HOUR,
         'd': DAY}
_NUMBER = re.compile(r'^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z/]*)\s*$',
                     re.IGNORECASE)


def _parse(text, units, field):
    if isinstance(text, (int, float)):
        return float(text)
    m = _NUMBER.match(str(text))
    if not m or m.group(2).lower() not in units:
        raise InvalidPlanInput(
            field=field, reason='%r is not a number with one of the units %s'
            % (text, ', '.join(sorted(u for u in units if u))))
    return float(m.group(1)) * units[m.group(2).lower()]


def parse_size(text, field='size'):
    """'50GB' -> 5e10 bytes (SI), '4GiB' -> 2**32; a bare number is bytes."""
    return int(_parse(text, _SIZE, field))


def parse_rate(text, field='rate'):
    """'44.76Mbit/s' -> bytes/s; a bare number is bytes/s."""
    if isinstance(text, (int, float)):
        return float(text)
    return _parse(text, dict(_RATE, **{'': 1}), field)


def parse_duration(text, field='time'):
    """'12h' -> 43200.0, '20ms' -> 0.02; a bare number is seconds."""
    return _parse(text, _TIME, field)


def rate(bytes_per_s):
    """Human form of a rate, in bits like network links are sold."""
    return '%.2f Mbit/s' % (bytes_per_s * 8 / 1e6)


def duration(seconds):
    if seconds >= DAY:
        return '%.1f d' % (seconds / DAY)
    if seconds >= HOUR:
        return '%.1f h' % (seconds / HOUR)
    if seconds >= 60:
        return '%.1f min' % (seconds / 60)
    return '%.1f s' % seconds
