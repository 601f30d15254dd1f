"""The forecast of a migration request against what its run measured.

No cloud here: tests/benchmarks/wave_bench.py asks fedex-api for the
forecast of the wave's request (POST /v1/plans with the request as
``migration``) before the wave starts, measures the same figures while it
runs, and prints the rows :func:`compare` makes of the two.

A figure is named the same on both sides: ``total_time``, ``phase.<name>``
(the forecast's FedEx phases: export, ship, import, catch_up, cutover),
``wan_bytes``, ``catch_up_bytes``, ``final_delta_bytes``,
``disk_bytes_over_wan`` (the two before), ``memory_bytes_over_wan``,
``devices``, ``shipments``, ``expected_pause`` and ``pause.<server>`` (see
:func:`pause_key`). A figure only one side gives is a row too, said to be
not forecast or not measured.
"""

from fedex_manager import states
from fedex_manager import waves

# The bound: measured within 20 % of the forecast.
TOLERANCE = 0.2
WITHIN = 'within'
OUTSIDE = 'outside'
NOT_MEASURED = 'not measured'
NOT_FORECAST = 'not forecast'

# The phases a migration spends in each state, as the forecast splits
# them (fedex_manager.actions.forecast.fedex): the export ends when the
# shipment is handed over (SEALED is its last step), the journey when the
# delivery is recorded, the import with its verification; the cutover
# includes the wait for a cutover slot and a rollback's. REQUESTED, the
# wait before the first snapshot, is no phase of the forecast.
PHASES = ('requested', 'export', 'ship', 'import', 'catch_up', 'cutover')
PHASE_OF = {
    states.REQUESTED: 'requested',
    states.SNAPSHOTTING: 'export', states.EXPORTING: 'export',
    states.CONSOLIDATING: 'export', states.SEALED: 'export',
    states.IN_TRANSIT: 'ship',
    states.DELIVERED: 'import', states.IMPORTING: 'import',
    states.CATCHING_UP: 'catch_up',
    states.READY_FOR_CUTOVER: 'cutover', states.CUTTING_OVER: 'cutover',
    states.ROLLED_BACK: 'cutover',
}
ENDED = (states.COMPLETED, states.CLEANED)
# The forecast's notes (fedex_manager.actions.plans) one per kind of input;
# the other keys of its ``assumes`` gather these per figure shown.
NOTE_KEYS = ('disks', 'memory', 'dirty_rate', 'write_rate', 'link',
             'transit', 'terminals', 'devices', 'catch_up', 'cutover',
             'pause')


def pause_key(server_id):
    """The figure of a server's pause (its id's first 8 characters)."""
    return 'pause.%s' % server_id[:8]


def unit_of(figure):
    """'B' (bytes), 'n' (a count) or 's' (seconds)."""
    if figure in ('devices', 'shipments'):
        return 'n'
    if 'bytes' in figure:
        return 'B'
    return 's'


def _sum(values):
    """The sum, or None when any part is unknown (or there is none)."""
    values = list(values)
    if not values or any(v is None for v in values):
        return None
    return sum(values)


def forecast_figures(plan):
    """{figure: value} of the FedEx way of a request's forecast.

    ``plan``: what POST /v1/plans answers for a ``migration`` (or
    :func:`fedex_manager.actions.forecast.forecast`'s result). None: the
    forecast gives no value (a memory copy that never ends).
    """
    fx = plan['fedex']
    rows = plan.get('servers') or []
    catch = plan.get('catch_up') or {}
    out = {'total_time': fx.get('total_time')}
    for phase, seconds in (fx.get('phases') or {}).items():
        out['phase.%s' % phase] = seconds
    final = _sum(r.get('final_delta_bytes') for r in rows)
    out.update({
        'wan_bytes': fx.get('wan_bytes'),
        'catch_up_bytes': catch.get('bytes'),
        'final_delta_bytes': final,
        'disk_bytes_over_wan': _sum([catch.get('bytes'), final]),
        'memory_bytes_over_wan': _sum(
            r.get('memory_bytes_over_wan') for r in rows),
        'devices': fx.get('devices'),
        'shipments': fx.get('shipments'),
        'expected_pause': fx.get('expected_pause'),
    })
    for r in rows:
        out[pause_key(r['server_id'])] = r.get('pause_seconds')
    return out


def verdict(forecast, measured, tolerance=TOLERANCE):
    """(ratio measured/forecast, within, verdict) of one figure.

    ``within``: True, False, or None when a side is missing. A forecast of
    0 has no ratio (None): a measured 0 is within, anything else outside.
    """
    if forecast is None:
        return None, None, NOT_FORECAST
    if measured is None:
        return None, None, NOT_MEASURED
    if forecast == 0:
        ok = measured == 0
        return None, ok, WITHIN if ok else OUTSIDE
    ratio = measured / float(forecast)
    # (A hair over the bound for the floats' sake: 80 of 100 is within.)
    ok = abs(ratio - 1.0) <= tolerance + 1e-9
    return ratio, ok, WITHIN if ok else OUTSIDE


def compare(forecast, measured, tolerance=TOLERANCE, notes=None):
    """Rows of the forecast's figures against the measured ones.

    ``forecast``, ``measured``: {figure: value or None}. One row per figure
    of either, the forecast's first (in its order), then those only
    measured: {"figure", "unit", "forecast", "measured", "ratio",
    "within", "verdict", "note"}.
    """
    notes = notes or {}
    figures = list(forecast) + [f for f in measured if f not in forecast]
    rows = []
    for figure in figures:
        f, m = forecast.get(figure), measured.get(figure)
        ratio, ok, said = verdict(f, m, tolerance)
        rows.append({'figure': figure, 'unit': unit_of(figure),
                     'forecast': f, 'measured': m, 'ratio': ratio,
                     'within': ok, 'verdict': said,
                     'note': notes.get(figure)})
    return rows


def summary(rows):
    """How many figures were compared, within, and which were not."""
    def named(said):
        return [r['figure'] for r in rows if r['verdict'] == said]
    compared = [r for r in rows if r['within'] is not None]
    return {'compared': len(compared),
            'within': sum(1 for r in compared if r['within']),
            'outside': named(OUTSIDE), 'not_measured': named(NOT_MEASURED),
            'not_forecast': named(NOT_FORECAST),
            'all_within': bool(compared) and all(r['within']
                                                 for r in compared)}


def wave_phases(transitions):
    """Seconds the wave spent in each phase, from its members' states.

    ``transitions``: {member: [(time in seconds, state entered), ...]},
    each member's first the REQUESTED of its creation. The wave is as far
    as its slowest member (:func:`fedex_manager.waves.wave_state`), so the
    phases follow each other and add up to the wave's span: a member's
    cutover while another still catches up counts as catch-up. Returns
    ({phase: seconds}, started, ended): ``ended`` the time every member was
    COMPLETED (None: not all were); a state of no phase (FAILED...) is
    counted under its own name in lower case.
    """
    moves = sorted((t, i, member, state)
                   for member, seq in transitions.items()
                   for i, (t, state) in enumerate(seq))
    if not moves:
        return {}, None, None
    now = {}
    phases = {}
    started = previous = moves[0][0]
    ended = None
    for t, _i, member, state in moves:
        if now:
            wave = waves.wave_state([{'state': s} for s in now.values()])
            phase = PHASE_OF.get(wave, wave.lower())
            phases[phase] = phases.get(phase, 0.0) + (t - previous)
        now[member] = state
        previous = t
        if len(now) == len(transitions) and all(
                s in ENDED for s in now.values()):
            ended = t
            break
    ordered = {p: phases[p] for p in PHASES if p in phases}
    ordered.update((p, v) for p, v in phases.items() if p not in ordered)
    return ordered, started, ended


def first_round_write_rate(snapshot_at, round_end, round_seconds, changed):
    """Bytes/s of distinct blocks written before the first round, or None.

    Between the export's snapshot (``snapshot_at``) and the first catch-up
    round's, taken when that round began (``round_end - round_seconds``):
    what the first round sends.
    """
    if None in (snapshot_at, round_end, round_seconds, changed):
        return None
    window = round_end - round_seconds - snapshot_at
    if window <= 0:
        return None
    return changed / float(window)


def assumed_notes(plan):
    """The forecast's own notes that say a figure is assumed or a default."""
    said = plan.get('assumes') or {}
    return ['%s: %s' % (key, said[key]) for key in NOTE_KEYS
            if said.get(key) and ('assumed' in said[key] or
                                  'default' in said[key])]


def human(value, unit):
    """A value for the table: seconds, MiB or a count; '-' when unknown."""
    if value is None:
        return '-'
    if unit == 'B':
        return '%.2f MiB' % (value / float(1 << 20))
    if unit == 'n':
        return '%d' % value
    if abs(value) < 10:
        return '%.2f s' % value
    return '%.0f s' % value


def table(rows, tolerance=TOLERANCE):
    """The rows as a text table, one line per figure."""
    head = ('figure', 'forecast', 'measured', 'measured/forecast',
            'within %d %%' % round(tolerance * 100), 'note')
    lines = [head]
    for r in rows:
        if r['within'] is None:
            said = r['verdict']
        else:
            said = 'yes' if r['within'] else 'NO'
        lines.append((r['figure'], human(r['forecast'], r['unit']),
                      human(r['measured'], r['unit']),
                      '-' if r['ratio'] is None else '%.2f' % r['ratio'],
                      said, r['note'] or ''))
    widths = [max(len(line[i]) for line in lines) for i in range(5)]
    out = []
    for line in lines:
        cells = [c.ljust(w) if i == 0 else c.rjust(w)
                 for i, (c, w) in enumerate(zip(line, widths))]
        out.append(('  '.join(cells) + '  ' + line[5]).rstrip())
    return '\n'.join(out)
