"""A FedEx cutover's memory copy: the guest's dirty rate, and its bounds.

Before anything pauses, the source compute measures how fast the guest
dirties its memory (libvirt's ``virDomainStartDirtyRateCalc``, QEMU's
``calc-dirty-rate``) and reports it to the manager, whose forecast
(:func:`fedex_manager.planner.memory_forecast`, one model for the planner
and the cutover) answers with the means: QEMU's stock pre-copy,
auto-converge, or a refusal. The plan then carries what the copy must
respect, which :func:`apply` puts on libvirt's migration call, and a
:class:`Watchdog` aborts a copy that outlives its bound (never an endless
pre-copy: Nova's own completion timeout is 800 s per GiB by default).

Page-sampling is the one mode that measures under TCG: QEMU 10 answers the
dirty-bitmap mode with 0 without KVM, and dirty-ring needs KVM's dirty
ring. It samples 512 pages per GiB and compares their digests: for a
256 MiB guest 128 pages, so one 1-second sample of a guest dirtying
20 MiB/s read between 10 and 36 (measured by hand with QMP): the median of
three is taken. A sample over a longer window gives the guest's working
set (the distinct bytes it dirties, which bounds what a round resends).
"""

import statistics
import threading
import time

from oslo_log import log as logging

LOG = logging.getLogger(__name__)
MIB = 1 << 20
# libvirt's constants (nova's fake libvirt lacks them).
MODE_PAGE_SAMPLING = 0          # VIR_DOMAIN_DIRTYRATE_MODE_PAGE_SAMPLING
STATS_DIRTYRATE = 1 << 9        # VIR_DOMAIN_STATS_DIRTYRATE
# QEMU samples 512 pages per GiB of guest memory: one sampled page stands
# for 2 MiB, and libvirt reports whole MiB/s; a guest that dirties less than
# 2 MiB in a sample's second reads 0 (measured: 0, 0, 0 for a guest whose
# migration then counted 1.3 MiB/s dirtied).
SAMPLED_BYTES_PER_PAGE = (1 << 30) // 512
MEASURED = 2                    # VIR_DOMAIN_DIRTYRATE_MEASURED
AUTO_CONVERGE = 1 << 13         # VIR_MIGRATE_AUTO_CONVERGE


def _calc(conn, dom, seconds, timeout):
    """One dirty-rate calculation over ``seconds``; bytes/s."""
    before = _stats(conn, dom).get('dirtyrate.calc_start_time')
    dom.startDirtyRateCalc(seconds, MODE_PAGE_SAMPLING)
    time.sleep(seconds)
    deadline = time.monotonic() + timeout
    while True:
        stats = _stats(conn, dom)
        if (stats.get('dirtyrate.calc_status') == MEASURED and
                stats.get('dirtyrate.calc_start_time') != before):
            return stats['dirtyrate.megabytes_per_second'] * MIB
        if time.monotonic() > deadline:
            raise TimeoutError('libvirt reported no dirty rate within '
                               '%d s (%s)' % (seconds + timeout, stats))
        time.sleep(0.05)


def _stats(conn, dom):
    found = conn.domainListGetStats([dom], STATS_DIRTYRATE)
    return found[0][1] if found else {}


def measure(conn, dom, samples=3, seconds=1, window=3, timeout=10):
    """The guest's dirty rate, working set and memory, measured now.

    ``samples`` calculations over ``seconds`` (their median is the rate)
    and one over ``window`` seconds (distinct bytes dirtied in it: the
    working set, at least one second's worth of the rate). ``conn``: a
    libvirt connection of this thread's own. Returns the figures reported
    to the manager (bytes, bytes/s, seconds).
    """
    began = time.monotonic()
    rates = [_calc(conn, dom, seconds, timeout) for _ in range(samples)]
    rate = statistics.median(rates)
    working_set = rate * seconds
    if window:
        working_set = max(working_set,
                          _calc(conn, dom, window, timeout) * window)
    figures = {'dirty_rate': rate, 'samples': rates,
               'working_set': working_set, 'mode': 'page-sampling',
               'resolution': SAMPLED_BYTES_PER_PAGE / float(seconds),
               'memory': dom.maxMemory() * 1024}
    try:
        # QEMU's resident set: the pages the guest ever touched, which the
        # first round sends (untouched ones cross as a flag).
        rss = dom.memoryStats().get('rss')
        if rss:
            figures['resident'] = min(rss * 1024, figures['memory'])
    except Exception as e:
        LOG.debug('no memory stats: %s', e)
    figures['seconds'] = time.monotonic() - began
    return figures


def apply(convergence, flags, bandwidth):
    """libvirt's (flags, bandwidth in MiB/s) for the manager's verdict.

    ``auto-converge`` adds VIR_MIGRATE_AUTO_CONVERGE; ``max_bandwidth``
    (bytes/s, the link or the migration's rate cap) caps QEMU's copy, so
    the memory stream takes no more of a shared WAN than the forecast
    counted on. Nova's own ``bandwidth`` (``live_migration_bandwidth``)
    stays when it is lower.
    """
    if not convergence:
        return flags, bandwidth
    if convergence.get('means') == 'auto-converge':
        flags |= AUTO_CONVERGE
    cap = convergence.get('max_bandwidth')
    if cap:
        mib = max(1, int(cap // MIB))
        bandwidth = min(bandwidth, mib) if bandwidth else mib
    return flags, bandwidth


def downtime_floor_ms(convergence, nova_max_ms):
    """The downtime limit a FedEx cutover's copy may switch over at, ms.

    The manager's forecast (and its verdict of convergence) counts on
    QEMU switching over once what is left would cross the link in
    ``max_downtime`` (its ``[planner] memory_downtime``, Nova's
    ``live_migration_downtime``: 500 ms). Nova starts a live migration at
    a tenth of it and raises it every ``live_migration_downtime_delay`` s
    a GiB of RAM (at least 2: a step every 150 s): on a 100 Mbit/s link
    50 ms leave 0.6 MB, less than an idle TCG guest dirtied between two
    rounds, and its copy ran until the manager's bound (111 s) aborted
    it. The floor is the verdict's ``max_downtime``, else Nova's top step.
    """
    seconds = (convergence or {}).get('max_downtime')
    if seconds:
        return max(1, int(round(seconds * 1000)))
    return int(nova_max_ms)


class DowntimeFloor(object):
    """A Guest whose downtime limit is never set below ``floor_ms``.

    Handed to Nova's live migration monitor, whose downtime steps then
    start at the floor and go on from there.
    """

    def __init__(self, guest, floor_ms):
        self._guest = guest
        self.floor_ms = floor_ms

    def __getattr__(self, name):
        return getattr(self._guest, name)

    def migrate_configure_max_downtime(self, mstime):
        return self._guest.migrate_configure_max_downtime(
            max(int(mstime), self.floor_ms))


class Watchdog(object):
    """Aborts the migration job after ``timeout`` s, unless ``done()``.

    ``done``: whether the memory copy ended (the pause began): from then
    on the job is the cutover's to finish or roll back, never aborted.
    The abort leaves the guest running at the source (a pre-copy's job
    cancelled before its switchover resumes nothing: the source never
    stopped), and Nova's monitor rolls back.
    """

    def __init__(self, dom, timeout, done, describe=''):
        self.dom = dom
        self.timeout = timeout
        self.done = done
        self.describe = describe
        self.fired = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name='fedex-copy-watchdog')

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()

    def _run(self):
        if self._stop.wait(self.timeout) or self.done():
            return
        LOG.error('FedEx: the memory copy of %s did not end within its '
                  'bound of %d s: aborting it (the guest keeps running at '
                  'the source)', self.describe, self.timeout)
        self.fired = True
        try:
            self.dom.abortJob()
        except Exception as e:
            LOG.warning('FedEx: aborting the migration job: %s', e)
