"""The LSRP message set, with the thesis' codes, and what each may carry.

Every field of every message is checked against this table when a frame is
decoded (and before one is sent): unknown fields, missing fields, wrong types
and out-of-range values are protocol errors. A response (FLAG_RESPONSE)
carries the fields listed under ``response``.
"""

from lsrp import exception

MAX_INT = (1 << 63) - 1
MAX_STR = 4096
MAX_LIST = 1 << 20

# --- field kinds -----------------------------------------------------------


def _int(v):
    return type(v) is int and 0 <= v <= MAX_INT


def _str(v):
    return isinstance(v, str) and len(v) <= MAX_STR


def _bytes(v):
    return isinstance(v, bytes)


def _bool(v):
    return type(v) is bool


def _digest(v):
    return isinstance(v, bytes) and len(v) == 32


def _list_of(check):
    return lambda v: (isinstance(v, list) and len(v) <= MAX_LIST
                      and all(check(i) for i in v))


FIELDS = {
    'version': _int, 'id': _str, 'peer': _str, 'server': _str,
    'state': _str, 'disks': _list_of(_str), 'disk': _str, 'shipment': _str,
    'session': _int, 'size': _int, 'snapshot': _str, 'from_snapshot': _str,
    'offset': _int, 'length': _int, 'block': _int,
    'digests': _list_of(_digest), 'differ': _list_of(_int),
    'data': _bytes, 'digest': _digest, 'name': _str, 'last': _bool,
    'code': _str, 'message': _str, 'group': _str, 'phase': _str,
    'acked': _int, 'image_digest': _str, 'version_id': _int,
    'zstd': _bool, 'final': _bool, 'attach': _int,
    'object_size': _int, 'features': _list_of(_str),
    # Proof of N-1 (doc/source/protocol.rst): source snapshot identities,
    # a BLAKE3 digest in hex, the snapshots each disk has.
    'base_id': _str, 'snapshot_id': _str, 'base_digest': _str,
    'snapshots': _list_of(_list_of(_str)),
    # Reads (a terminal as a source): the digest wanted at the end of a
    # stream, and the algorithm of READ_DIGEST ('blake3', 'sha256').
    'with_digest': _bool, 'algorithm': _str,
    # A cutover's final delta: close the images at the commit (their rbd
    # exclusive lock free for the resumed guest's first write).
    'release': _bool,
    # ... and B's state at N kept in a record written after the commit's
    # answer, not in a snapshot inside the pause (lsrp.server.records).
    'record': _bool, 'defer': _bool,
}

# --- messages: code -> (name, thesis code, request fields, response fields)
# A field name ending in '?' is optional.

_MESSAGES = {
    # With ``shipment`` and ``disks``: the snapshots each of those disks
    # has here, in order (a catch-up plans its first round with them).
    0x01: ('GET_SERVER_STATE', 'D1', ('shipment?', 'disks?'),
           ('state', 'disks', 'snapshots?')),
    0x02: ('HANDSHAKE', 'D2', ('version', 'id', 'peer'),
           ('version', 'id', 'server')),
    # With ``attach``, another stream (connection) joins that session.
    0x03: ('INIT_SESSION', 'D3', ('disk', 'shipment', 'attach?'),
           ('session', 'size', 'snapshot?')),
    # ``object_size`` and ``features`` describe the image for a sink that
    # records it (a device set); ``offset``: where to go on from.
    # ``base_id``/``snapshot_id``: the source's N-1 and N (their ids);
    # ``base_digest``: N-1's digest, sent when asked (BASE_UNPROVEN).
    # ``record``: keep the state at N in a record, not in snapshot N
    # (lsrp.server.records: a cutover's final delta).
    0x04: ('REPLICATION_START', 'D4', ('snapshot', 'from_snapshot?', 'size',
                                       'object_size?', 'features?',
                                       'base_id?', 'snapshot_id?',
                                       'base_digest?', 'record?'),
           ('offset',)),
    0x05: ('REPLICATION_CHECKSUM', 'D5', ('offset', 'block', 'digests'),
           ('offset', 'differ')),
    0x06: ('REPLICATION_UPDATE', 'D6', ('offset', 'data', 'digest', 'zstd?'),
           ('acked',)),
    # With ``group``, snapshot N waits for that group's commit (C4).
    0x07: ('REPLICATION_COMPLETE', 'D7',
           ('snapshot', 'image_digest?', 'final?', 'group?'),
           ('snapshot', 'image_digest?')),
    0x08: ('TRANSFER_CONFIG_FILE', 'D8', ('name', 'offset', 'data', 'last'),
           ('acked',)),
    0x09: ('DELTA_CONSOLIDATION_START', 'D9',
           ('snapshot', 'from_snapshot', 'size'), ('offset',)),
    0x0A: ('DELTA_CONSOLIDATION_UPDATE', 'D10',
           ('offset', 'data', 'digest', 'zstd?'),
           ('acked',)),
    0x0B: ('DELTA_CONSOLIDATION_COMPLETE', 'D11',
           ('snapshot', 'image_digest'), ('snapshot', 'image_digest',
                                          'version_id')),
    # Ours: a range that reads as zeros, sent as metadata only (the thesis'
    # "skip all-zero blocks").
    0x0C: ('REPLICATION_ZERO', 'D6z', ('offset', 'length'), ('acked',)),
    # Ours: reads, a terminal as a *source* (``lsrp.server.reads``,
    # ``lsrp.protocol.remote_source``). READ_OPEN answers a read id, which
    # the other reads carry as their session; READ_CHANGES starts a stream
    # (a delta with ``from_snapshot``, resumed at ``offset``); each
    # READ_NEXT answers its next piece (no ``data``: zeros), the last one
    # ``last`` and, when asked, the image digest.
    0x0D: ('READ_OPEN', 'R1', ('disk', 'shipment', 'snapshot'),
           ('session', 'size', 'object_size?', 'features?')),
    0x0E: ('READ_CHANGES', 'R2', ('from_snapshot?', 'offset',
                                  'with_digest?'), ('offset',)),
    0x0F: ('READ_NEXT', 'R3', (),
           ('offset', 'length', 'data?', 'digest?', 'last?',
            'image_digest?')),
    0x10: ('READ_DIGEST', 'R4', ('algorithm',), ('image_digest',)),
    0x21: ('CTL_GET_SERVER_STATE', 'C1', (), ('state', 'disks')),
    0x22: ('CTL_REPLICATION_START', 'C2', ('group', 'disks'), ()),
    0x23: ('CTL_TRANSFER_CONFIG_FILE', 'C3', ('name',), ()),
    # phase 'prepare': every disk has its round applied, recorded; 'commit':
    # snapshot N on every disk of the group, or on none (``defer``: the
    # records of the rounds started with ``record``, after the answer).
    0x24: ('CTL_GROUP_PREPARE_AND_COMMIT', 'C4',
           ('group', 'phase', 'disks', 'snapshot', 'release?', 'defer?'),
           ('phase', 'disks')),
    0x25: ('CTL_DELTA_CONSOLIDATION_START', 'C5', ('group', 'disks'), ()),
    0x26: ('CTL_DELTA_CONSOLIDATION_UPDATE', 'C6', ('group',), ()),
    0x41: ('EV_GET_SERVER_STATE', 'E1', ('state', 'disks'), ()),
    0x42: ('EV_REPLICATION_COMPLETE', 'E2', ('disk', 'snapshot'), ()),
    0x43: ('EV_TRANSFER_CONFIG_FILE', 'E3', ('name',), ()),
    0x44: ('EV_DELTA_CONSOLIDATION_RESULT', 'E4', ('disk', 'state'), ()),
    0x45: ('EV_DELTA_CONSOLIDATION_COMPLETED', 'E5', ('disk', 'snapshot'),
           ()),
    # Sent in answer to a request (FLAG_RESPONSE), or unprompted before the
    # connection is closed.
    0x7F: ('ERROR', '-', ('code', 'message'), ('code', 'message')),
}

NAMES = {code: m[0] for code, m in _MESSAGES.items()}
THESIS_CODES = {m[0]: m[1] for m in _MESSAGES.values()}
globals().update({m[0]: code for code, m in _MESSAGES.items()})

ERROR_CODES = ('BAD_MAGIC', 'BAD_VERSION', 'UNKNOWN_TYPE', 'BAD_FLAGS',
               'TOO_LARGE', 'BAD_CHECKSUM', 'BAD_BODY', 'BAD_FIELD',
               'STALE_SESSION', 'BAD_STATE', 'NOT_ALLOWED', 'DIGEST_MISMATCH',
               'TRUNCATED', 'INTERNAL', 'BASE_UNPROVEN', 'BASE_DIFFERS')


def _split(spec):
    required = {f for f in spec if not f.endswith('?')}
    allowed = {f.rstrip('?') for f in spec}
    return required, allowed


_SCHEMAS = {code: (_split(m[2]), _split(m[3])) for code, m in
            _MESSAGES.items()}


def validate(type_, body, response=False):
    """Raise ProtocolError(BAD_FIELD) unless ``body`` fits the message."""
    if type_ not in _SCHEMAS:
        raise exception.ProtocolError(code='UNKNOWN_TYPE',
                                      reason='type %#x' % type_)
    required, allowed = _SCHEMAS[type_][1 if response else 0]
    name = NAMES[type_] + (' response' if response else '')
    keys = set(body)
    if keys - allowed:
        raise exception.ProtocolError(code='BAD_FIELD', reason='%s: unknown '
                                      'fields %s' % (name, sorted(
                                          map(str, keys - allowed))))
    if required - keys:
        raise exception.ProtocolError(code='BAD_FIELD', reason='%s: missing '
                                      'fields %s' % (name,
                                                     sorted(required - keys)))
    for key, value in body.items():
        if not FIELDS[key](value):
            raise exception.ProtocolError(
                code='BAD_FIELD', reason='%s: field %s has a bad value (%s)'
                % (name, key, type(value).__name__))
