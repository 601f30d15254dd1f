"""Validation and evaluation of a migration's options.

rate_cap        bytes/s for catch-up and export reads (0: none)
rate_schedule   [{"days": "mon-fri", "start": "08:00", "end": "18:00",
                  "rate_cap": 10485760}]: a lower cap in business hours
downtime_budget seconds the final delta may take (sizes the last round)
cutover_window  {"start": "01:00", "end": "05:00"} UTC, daily
cutover         "automatic" or "approved" (an operator approves it)
retention_days  days the source images are kept after the cutover
parity          devices of a shipment that may be lost
threshold_bytes a round this small means converged
max_rounds      catch-up rounds before READY_FOR_CUTOVER anyway
keep_warm_seconds  interval of rounds in READY_FOR_CUTOVER
shipment_group  a label: migrations with the same one (same terminals)
                travel in the same shipments (a flock of clones dedups)
carrier         courier plugin of its shipments (default: [conductor]
                courier), e.g. "manual": an operator records the events
"""

import datetime
import re

from lsrp import exception

DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']
DEFAULTS = {'rate_cap': 0, 'rate_schedule': [], 'downtime_budget': 30,
            'cutover_window': None, 'cutover': 'approved',
            'retention_days': 7, 'parity': 1,
            'threshold_bytes': 8 << 20, 'max_rounds': 10,
            'keep_warm_seconds': 600, 'shipment_group': None,
            'carrier': None}
# Fixed once a migration exists.
FIXED = ('shipment_group', 'carrier')
GROUP_RE = re.compile(r'^[A-Za-z0-9._:-]{1,64}$')


def _bad(field, reason):
    raise exception.InvalidInput(field=field, reason=reason)


def _hhmm(field, text):
    try:
        h, m = str(text).split(':')
        h, m = int(h), int(m)
        if not (0 <= h < 24 and 0 <= m < 60):
            raise ValueError
    except ValueError:
        _bad(field, '%r is not a time HH:MM' % (text,))
    return h * 60 + m


def _days(field, text):
    out = set()
    for part in str(text).lower().split(','):
        if '-' in part:
            a, b = part.split('-', 1)
            if a not in DAYS or b not in DAYS:
                _bad(field, '%r: days are %s' % (part, ', '.join(DAYS)))
            i, j = DAYS.index(a), DAYS.index(b)
            out.update(DAYS[k % 7] for k in range(i, i + (j - i) % 7 + 1))
        elif part in DAYS:
            out.add(part)
        else:
            _bad(field, '%r: days are %s' % (part, ', '.join(DAYS)))
    return out


def _nonneg_int(field, value):
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        _bad(field, '%r is not a whole number >= 0' % (value,))


def _courier(name):
    from stevedore import extension     # late: only when asked for
    known = sorted(extension.ExtensionManager(
        'fedex_manager.couriers').names())
    if name not in known:
        _bad('carrier', '%r is not a courier plugin; known: %s'
             % (name, ', '.join(known)))


def validate(options, partial=False):
    """Check ``options``; return them with defaults filled in."""
    options = dict(options or {})
    unknown = set(options) - set(DEFAULTS)
    if unknown:
        _bad('options', 'unknown option(s) %s; known: %s' % (
            ', '.join(sorted(unknown)), ', '.join(sorted(DEFAULTS))))
    for key in ('rate_cap', 'downtime_budget', 'retention_days', 'parity',
                'threshold_bytes', 'max_rounds', 'keep_warm_seconds'):
        if key in options:
            _nonneg_int(key, options[key])
    if options.get('carrier') is not None:
        _courier(options['carrier'])
    if 'cutover' in options and options['cutover'] not in ('automatic',
                                                           'approved'):
        _bad('cutover', "%r is not 'automatic' or 'approved'"
             % (options['cutover'],))
    for i, entry in enumerate(options.get('rate_schedule') or []):
        field = 'rate_schedule[%d]' % i
        if not isinstance(entry, dict) or set(entry) - {
                'days', 'start', 'end', 'rate_cap'}:
            _bad(field, 'needs days, start, end, rate_cap')
        _days(field + '.days', entry.get('days', 'mon-sun'))
        _hhmm(field + '.start', entry.get('start'))
        _hhmm(field + '.end', entry.get('end'))
        _nonneg_int(field + '.rate_cap', entry.get('rate_cap'))
    group = options.get('shipment_group')
    if group is not None and (not isinstance(group, str) or
                              not GROUP_RE.match(group)):
        _bad('shipment_group', '%r is not a label (1-64 of A-Z a-z 0-9 . _ '
             ': -)' % (group,))
    window = options.get('cutover_window')
    if window is not None:
        if not isinstance(window, dict) or set(window) != {'start', 'end'}:
            _bad('cutover_window', 'needs {"start": "HH:MM", "end": '
                 '"HH:MM"} (UTC)')
        _hhmm('cutover_window.start', window['start'])
        _hhmm('cutover_window.end', window['end'])
    if partial:
        return options
    out = dict(DEFAULTS)
    out.update(options)
    return out


def _within(minute, start, end):
    if start <= end:
        return start <= minute < end
    return minute >= start or minute < end       # over midnight


def rate_cap(options, when=None):
    """The rate cap in force at ``when`` (UTC).

    The schedule's entry covering ``when``, else the migration's cap.
    """
    when = when or datetime.datetime.utcnow()
    minute = when.hour * 60 + when.minute
    day = DAYS[when.weekday()]
    for entry in options.get('rate_schedule') or []:
        if day in _days('days', entry.get('days', 'mon-sun')) and _within(
                minute, _hhmm('start', entry['start']),
                _hhmm('end', entry['end'])):
            return entry['rate_cap']
    return options.get('rate_cap') or 0


def in_cutover_window(options, when=None):
    window = options.get('cutover_window')
    if not window:
        return True
    when = when or datetime.datetime.utcnow()
    return _within(when.hour * 60 + when.minute,
                   _hhmm('start', window['start']),
                   _hhmm('end', window['end']))
