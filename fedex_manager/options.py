"""A migration's options: their one schema, its check, what they mean now.

:data:`SCHEMA` (JSON schema, draft 7) is the only place their types,
limits and defaults are written: fedex-api checks request bodies against
it (:mod:`fedex_manager.api.schemas` builds from it) and every caller
passes through :func:`validate`, which checks against the same schema and
fills in the defaults.

rate_cap        bytes/s for catch-up and export reads (0: none)
rate_schedule   [{"days": "mon-fri", "start": "08:00", "end": "18:00",
                  "rate_cap": 10485760}]: a lower cap in business hours
downtime_budget seconds the final delta may take (sizes the last round)
cutover_window  {"start": "01:00", "end": "05:00"} UTC, daily
cutover         "automatic" or "approved" (an operator approves it)
retention_days  days the source images are kept after the cutover
parity          devices of a shipment that may be lost
threshold_bytes a round this small means converged
max_rounds      catch-up rounds before READY_FOR_CUTOVER anyway (at least
                1: the catch-up always runs one round, see
                :class:`fedex_manager.flows.tasks.catchup.Rounds`)
keep_warm_seconds  interval of rounds in READY_FOR_CUTOVER
shipment_group  a label: migrations with the same one (same terminals)
                travel in the same shipments (a flock of clones dedups)
max_parallel_cutovers  cutovers of one shipment group (a wave) running at
                once (:mod:`fedex_manager.waves`)
carrier         courier plugin of its shipments (default: [conductor]
                courier), e.g. "manual": an operator records the events
convergence     "auto-converge" or "refuse": a guest whose memory copy
                would not fit downtime_budget is cut over with QEMU's
                auto-converge, or its cutover refused before the pause
                (:func:`fedex_manager.actions.cutover.convergence`)
"""

import datetime

import jsonschema
from stevedore import extension

from fedex_manager import couriers
from lsrp import exception

DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']


def _any_case(word):
    return ''.join('[%s%s]' % (c, c.upper()) for c in word)


# "mon-fri", "sat,sun", "Mon-Wed,fri": day names or ranges, any case.
_DAY = '(%s)' % '|'.join(_any_case(d) for d in DAYS)
_SPAN = '%s(-%s)?' % (_DAY, _DAY)
DAYS_SPEC = {'type': 'string', 'pattern': '^%s(,%s)*$' % (_SPAN, _SPAN),
             'description': 'days like mon-fri or sat,sun'}
HHMM = {'type': 'string', 'pattern': '^([01][0-9]|2[0-3]):[0-5][0-9]$',
        'description': 'a time HH:MM (UTC)'}
LABEL = {'type': ['string', 'null'], 'pattern': '^[A-Za-z0-9._:-]{1,64}$',
         'description': 'a label (1-64 of A-Z a-z 0-9 . _ : -)'}


def _count(default, description, minimum=0):
    return {'type': 'integer', 'minimum': minimum, 'default': default,
            'description': description}


SCHEMA = {
    'type': 'object', 'additionalProperties': False,
    'properties': {
        'rate_cap': _count(0, 'bytes/s of catch-up and export reads '
                              '(0: none)'),
        'rate_schedule': {
            'type': 'array', 'default': [],
            'description': 'lower caps at times of the week',
            'items': {'type': 'object', 'additionalProperties': False,
                      'required': ['start', 'end', 'rate_cap'],
                      'properties': {'days': DAYS_SPEC, 'start': HHMM,
                                     'end': HHMM,
                                     'rate_cap': _count(0, 'bytes/s')}}},
        'downtime_budget': _count(30, 'seconds the final delta may take'),
        'cutover_window': {
            'type': ['object', 'null'], 'default': None,
            'additionalProperties': False, 'required': ['start', 'end'],
            'properties': {'start': HHMM, 'end': HHMM},
            'description': 'daily window of the cutover (UTC)'},
        'cutover': {'enum': ['automatic', 'approved'], 'default': 'approved',
                    'description': 'whether an operator approves it'},
        'retention_days': _count(7, 'days the source images are kept '
                                    'after the cutover'),
        'parity': _count(1, 'devices of a shipment that may be lost'),
        'threshold_bytes': _count(8 << 20, 'a round this small means '
                                           'converged'),
        # 0 would run one round all the same (the check follows it).
        'max_rounds': _count(10, 'catch-up rounds before '
                                 'READY_FOR_CUTOVER anyway', minimum=1),
        'keep_warm_seconds': _count(600, 'interval of rounds in '
                                         'READY_FOR_CUTOVER'),
        'shipment_group': dict(LABEL, default=None),
        # A group made whole by one request (a wave): nobody joins later,
        # so its leader packs at once (no shipment_group_window).
        'shipment_group_closed': {'type': 'boolean', 'default': False,
                                  'description': 'the group was made in '
                                                 'one request'},
        'max_parallel_cutovers': _count(
            2, 'cutovers of its wave (shipment group) at once', minimum=1),
        'convergence': {'enum': ['auto-converge', 'refuse'],
                        'default': 'auto-converge',
                        'description': 'a guest that would not converge: '
                                       'throttled, or its cutover refused'},
        'carrier': {'type': ['string', 'null'], 'minLength': 1,
                    'maxLength': 64, 'default': None,
                    'description': 'courier plugin of its shipments'},
    },
}
DEFAULTS = {k: v['default'] for k, v in SCHEMA['properties'].items()}
# Fixed once a migration exists.
FIXED = ('shipment_group', 'shipment_group_closed', 'carrier')


def _whole(checker, instance):
    # 1.0 is an integer to JSON Schema; not to the slices and ranges that
    # use these counts.
    return isinstance(instance, int) and not isinstance(instance, bool)


_VALIDATOR = jsonschema.validators.extend(
    jsonschema.Draft7Validator,
    type_checker=jsonschema.Draft7Validator.TYPE_CHECKER.redefine(
        'integer', _whole))(SCHEMA)


def _bad(field, reason):
    raise exception.InvalidInput(field=field, reason=reason)


def _field(path):
    """A jsonschema path as the field's name: rate_schedule[0].days."""
    out = ''
    for p in path:
        if isinstance(p, int):
            out += '[%d]' % p
        else:
            out += '.%s' % p if out else p
    return out


def _raise(error):
    field = _field(error.absolute_path)
    if error.validator == 'additionalProperties':
        known = error.schema['properties']
        unknown = ', '.join(sorted(set(error.instance) - set(known)))
        if not field:
            _bad('options', 'unknown option(s) %s; known: %s' % (
                unknown, ', '.join(sorted(known))))
        _bad(field, 'unknown field(s) %s; known: %s' % (
            unknown, ', '.join(sorted(known))))
    if error.validator == 'pattern':
        _bad(field, '%r is not %s' % (error.instance,
                                      error.schema['description']))
    _bad(field or 'options', error.message)


def _courier(name):
    known = sorted(extension.ExtensionManager(couriers.NAMESPACE).names())
    if name not in known:
        _bad('carrier', '%r is not a courier plugin; known: %s'
             % (name, ', '.join(known)))


def validate(options, partial=False):
    """Check ``options`` against :data:`SCHEMA`; InvalidInput naming one.

    Returns them with the defaults filled in (``partial``: as given, for
    an update merged into the migration's options afterwards).
    """
    options = dict(options or {})
    # Unknown options first, then the first field in order.
    errors = sorted(_VALIDATOR.iter_errors(options), key=lambda e: (
        e.validator != 'additionalProperties',
        [str(p) for p in e.absolute_path]))
    if errors:
        _raise(errors[0])
    if options.get('carrier') is not None:
        _courier(options['carrier'])
    if partial:
        return options
    out = dict(DEFAULTS)
    out.update(options)
    return out


def _hhmm(text):
    h, m = str(text).split(':')
    return int(h) * 60 + int(m)


def _days(text):
    out = set()
    for part in str(text).lower().split(','):
        a, _, b = part.partition('-')
        i, j = DAYS.index(a), DAYS.index(b or a)
        out.update(DAYS[k % 7] for k in range(i, i + (j - i) % 7 + 1))
    return out


def _within(minute, start, end):
    if start <= end:
        return start <= minute < end
    return minute >= start or minute < end       # over midnight


def rate_cap(options, when=None):
    """The rate cap in force at ``when`` (UTC), of validated options.

    The schedule's entry covering ``when``, else the migration's cap.
    """
    when = when or datetime.datetime.utcnow()
    minute = when.hour * 60 + when.minute
    day = DAYS[when.weekday()]
    for entry in options.get('rate_schedule') or []:
        if day in _days(entry.get('days', 'mon-sun')) and _within(
                minute, _hhmm(entry['start']), _hhmm(entry['end'])):
            return entry['rate_cap']
    return options.get('rate_cap') or 0


def in_cutover_window(options, when=None):
    window = options.get('cutover_window')
    if not window:
        return True
    when = when or datetime.datetime.utcnow()
    return _within(when.hour * 60 + when.minute, _hhmm(window['start']),
                   _hhmm(window['end']))
