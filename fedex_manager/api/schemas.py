"""JSON schemas of the request bodies (draft 7, no extra fields).

Limits the manager knows too are not written here: a migration's options
are :data:`fedex_manager.options.SCHEMA`'s, image names, serials and
carrier events those of the action modules that use them.
"""

from fedex_manager.actions import devices
from fedex_manager.actions import migrations
from fedex_manager.actions import shipping
from fedex_manager import options

# Names and ids are shown in tables and logs (a terminal's is in its RPC
# topic): no control characters (a newline, a NUL). Lengths: their columns'.
_PRINTABLE = '^[^\\x00-\\x1f\\x7f]*$'
NAME = {'type': 'string', 'minLength': 1, 'maxLength': 255,
        'pattern': _PRINTABLE,
        'description': 'a name without control characters'}
ID = {'type': 'string', 'minLength': 1, 'maxLength': 64,
      'pattern': _PRINTABLE, 'description': 'an id without control characters'}
NONNEG_INT = {'type': 'integer', 'minimum': 0}
# An INTEGER column (32 bits in MySQL): a slot, a count of slots, a
# carrier's event number.
SMALL_INT = {'type': 'integer', 'minimum': 0, 'maximum': 2 ** 31 - 1}
TIMESTAMP = {'type': 'string', 'format': 'date-time', 'minLength': 10}
POOL = {'type': 'string', 'maxLength': 255,
        'pattern': '^[A-Za-z0-9_.-]+$', 'description': 'an RBD pool name'}

# shipment_group is given by a wave made in one shipment
# (actions.migrations.migrations_create), not by an API caller.
OPTIONS = dict(options.SCHEMA, properties={
    k: v for k, v in options.SCHEMA['properties'].items()
    if k not in ('shipment_group', 'shipment_group_closed')})
# What a running migration's PATCH may change.
UPDATABLE_OPTIONS = ('rate_cap', 'rate_schedule', 'downtime_budget',
                     'cutover_window', 'cutover', 'max_parallel_cutovers')

IMAGE_SPEC = migrations.IMAGE_SPEC
SERVER = {
    'oneOf': [
        ID,
        {'type': 'object', 'additionalProperties': False,
         'required': ['server_id'],
         'properties': {
             'server_id': ID, 'name': NAME,
             'volumes': {'type': 'array', 'minItems': 1, 'items': {
                 'oneOf': [IMAGE_SPEC, {
                     'type': 'object', 'additionalProperties': False,
                     'required': ['source_image'],
                     'properties': {'source_image': IMAGE_SPEC,
                                    'dest_image': IMAGE_SPEC,
                                    'volume_id': ID,
                                    'kind': {'enum': ['disk', 'volume']},
                                    'size_bytes': NONNEG_INT}}]}}}}]}

MIGRATION_CREATE = {
    'type': 'object', 'additionalProperties': False,
    # servers or volumes (detached Cinder volumes moved on their own);
    # source_site: found from the volumes' zone when only volumes move.
    'required': ['dest_site'],
    'properties': {
        'name': NAME,
        'servers': {'type': 'array', 'minItems': 1, 'maxItems': 1000,
                    'items': SERVER},
        'volumes': {'type': 'array', 'minItems': 1, 'maxItems': 1000,
                    'items': {'type': 'object', 'additionalProperties': False,
                              'required': ['volume_id'],
                              'properties': {'volume_id': ID,
                                             'dest_image': IMAGE_SPEC}}},
        'source_site': NAME,
        'dest_site': NAME,
        'source_host': NAME,
        'dest_host': NAME,
        'source_terminal': NAME,
        'dest_terminal': NAME,
        'pool_map': {'type': 'object', 'propertyNames': POOL,
                     'additionalProperties': POOL},
        'options': OPTIONS,
    },
}

# A wave: servers only (each becomes a migration of the wave); its name
# is its id, a shipment group's label.
WAVE_CREATE = dict(MIGRATION_CREATE, required=['dest_site', 'servers'],
                   properties=dict({
                       k: v for k, v in MIGRATION_CREATE['properties'].items()
                       if k != 'volumes'}, name=dict(
                           options.LABEL, type='string')))

WAVE_ACTION = {
    'type': 'object', 'minProperties': 1, 'maxProperties': 1,
    'additionalProperties': False,
    'properties': {
        'abort': {'type': 'object', 'additionalProperties': False,
                  'properties': {'reason': {'type': 'string',
                                            'maxLength': 1024}}},
        'cutover': {'type': 'object', 'additionalProperties': False},
    },
}

MIGRATION_UPDATE = {
    'type': 'object', 'additionalProperties': False, 'minProperties': 1,
    'properties': dict({k: OPTIONS['properties'][k]
                        for k in UPDATABLE_OPTIONS}, name=NAME),
}

MIGRATION_ACTION = {
    'type': 'object', 'minProperties': 1, 'maxProperties': 1,
    'additionalProperties': False,
    'properties': {
        'abort': {'type': 'object', 'additionalProperties': False,
                  'properties': {'reason': {'type': 'string',
                                            'maxLength': 1024}}},
        'retry': {'type': 'object', 'additionalProperties': False},
        'cutover': {'type': 'object', 'additionalProperties': False},
        'reship': {'type': 'object', 'additionalProperties': False,
                   'properties': {'seed_over_wan': {'type': 'boolean'}}},
    },
}

# The issue's words and the manager's verbs, both accepted.
CARRIER_EVENT_ALIASES = {'handed_to_carrier': 'hand_over',
                         'in_transit': 'scan', 'departed': 'depart',
                         'delivered': 'deliver', 'lost': 'lose',
                         'damaged': 'damage', 'returned': 'return'}
CARRIER_EVENTS = sorted(set(CARRIER_EVENT_ALIASES)
                        | set(shipping.CARRIER_EVENTS))
SHIPMENT_EVENT = {
    'type': 'object', 'additionalProperties': False, 'required': ['event'],
    'properties': {
        'event': {'enum': CARRIER_EVENTS},
        'tracking_number': dict(NAME, maxLength=128),
        'location': {'type': 'string', 'maxLength': 255},
        'occurred_at': TIMESTAMP,
        'seq': SMALL_INT,
        'devices_missing': {'type': 'array', 'items': {'type': 'string'}},
        'details': {'type': 'object'},
    },
    # The hand-over is the moment the tracking number exists.
    'if': {'properties': {'event': {'enum': ['handed_to_carrier',
                                             'hand_over']}}},
    'then': {'required': ['tracking_number']},
}

DEVICE_CREATE = {
    'type': 'object', 'additionalProperties': False,
    'required': ['serial', 'capacity_bytes', 'terminal'],
    'properties': {'serial': devices.SERIAL,
                   'capacity_bytes': {'type': 'integer', 'minimum': 1},
                   'terminal': NAME, 'slot': SMALL_INT,
                   'path': {'type': 'string', 'maxLength': 1024}},
}

# POST /v1/devices/{id}/return: the body is optional.
DEVICE_RETURN = {
    'type': 'object', 'additionalProperties': False,
    'properties': {'reason': {'type': 'string', 'maxLength': 1024}},
}

DEVICE_CUSTODY = {
    'type': 'object', 'additionalProperties': False,
    'required': ['holder'],
    'properties': {'holder': NAME, 'location': {'type': 'string',
                                                'maxLength': 255},
                   'occurred_at': TIMESTAMP,
                   'message': {'type': 'string', 'maxLength': 1024}},
}

TERMINAL_CREATE = {
    'type': 'object', 'additionalProperties': False,
    'required': ['name', 'site'],
    'properties': {'name': NAME, 'site': NAME,
                   'rpc_topic': NAME, 'lsrp_address': NAME,
                   'capacity_bytes': NONNEG_INT, 'slots': SMALL_INT},
}

TERMINAL_HEALTH = {
    'type': 'object', 'additionalProperties': False, 'required': ['state'],
    'properties': {'state': {'enum': ['UP']},
                   'info': {'type': 'object'}},
}

SITE_CREATE = {
    'type': 'object', 'additionalProperties': False, 'required': ['name'],
    'properties': {'name': NAME, 'availability_zone': NAME,
                   'aggregate': NAME,
                   'ceph_conf': {'type': 'string', 'maxLength': 1024},
                   'ceph_keyring': {'type': 'string', 'maxLength': 1024},
                   'ceph_client': {'type': 'string', 'maxLength': 64}},
}

SIZE = {'oneOf': [NONNEG_INT, {'type': 'string', 'minLength': 1}]}
POSITIVE = {'oneOf': [{'type': 'number', 'exclusiveMinimum': 0},
                      {'type': 'string', 'minLength': 1}]}
PLAN_CREATE = {
    'type': 'object', 'additionalProperties': False,
    'required': ['vms', 'wan_bandwidth'],
    'properties': {
        'name': {'type': 'string', 'minLength': 1, 'maxLength': 255},
        'vms': {'type': 'array', 'minItems': 1, 'items': {
            'type': 'object', 'additionalProperties': False,
            'required': ['size'],
            'properties': {'size': SIZE, 'allocated': SIZE,
                           'write_rate': SIZE, 'memory': SIZE,
                           'dirty_rate': SIZE,
                           'count': {'type': 'integer', 'minimum': 1}}}},
        'wan_bandwidth': POSITIVE,
        'device_write_rate': POSITIVE, 'device_read_rate': POSITIVE,
        'device_capacity': POSITIVE,
        'device_slots': {'type': 'integer', 'minimum': 1},
        'parity': NONNEG_INT,
        'transit_time': SIZE,
        'downtime_budget': POSITIVE,
        'cost_per_shipment': {'type': 'number', 'minimum': 0},
        'cost_per_device': {'type': 'number', 'minimum': 0},
        'wan_cost_per_gb': {'type': 'number', 'minimum': 0},
        'curve': {'type': 'array', 'maxItems': 200,
                  'items': {'type': 'integer', 'minimum': 1}},
    },
}

# POST /v1/plans with a migration request: the forecast of that request
# (fedex_manager.actions.plans); the guests' rates when known.
PLAN_FORECAST = {
    'type': 'object', 'additionalProperties': False,
    'required': ['migration'],
    'properties': {'name': NAME, 'migration': MIGRATION_CREATE,
                   'dirty_rate': SIZE, 'write_rate': SIZE},
}
