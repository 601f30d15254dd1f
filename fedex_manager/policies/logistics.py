"""Rules of /v1/shipments, /v1/devices, /v1/terminals, /v1/sites.

Devices, shipments and terminals are the operator's hardware: projects do
not see them. The service role is what the terminals and the courier
integration call in with.
"""

from oslo_policy import policy

from fedex_manager.policies import base

SHIPMENT_LIST = 'fedex:shipment:list'
SHIPMENT_SHOW = 'fedex:shipment:show'
SHIPMENT_EVENT = 'fedex:shipment:event'
DEVICE_LIST = 'fedex:device:list'
DEVICE_SHOW = 'fedex:device:show'
DEVICE_CREATE = 'fedex:device:create'
DEVICE_DELETE = 'fedex:device:delete'
DEVICE_RETURN = 'fedex:device:return'
DEVICE_CUSTODY = 'fedex:device:custody'
TERMINAL_LIST = 'fedex:terminal:list'
TERMINAL_SHOW = 'fedex:terminal:show'
TERMINAL_REGISTER = 'fedex:terminal:register'
TERMINAL_HEALTH = 'fedex:terminal:health'
SITE_LIST = 'fedex:site:list'
SITE_SHOW = 'fedex:site:show'
SITE_REGISTER = 'fedex:site:register'


def _rule(name, check, description, *operations):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check, description=description,
        operations=[{'method': m, 'path': p} for m, p in operations],
        scope_types=['project'])


rules = [
    _rule(SHIPMENT_LIST, base.RULE_ADMIN_OR_SERVICE, 'List shipments.',
          ('GET', '/v1/shipments')),
    _rule(SHIPMENT_SHOW, base.RULE_ADMIN_OR_SERVICE,
          'Show a shipment with its devices and carrier events.',
          ('GET', '/v1/shipments/{shipment_id}')),
    _rule(SHIPMENT_EVENT, base.RULE_ADMIN_OR_SERVICE,
          'Record a carrier event (handed to carrier with tracking number, '
          'in transit, delivered, lost, damaged).',
          ('POST', '/v1/shipments/{shipment_id}/events')),
    _rule(DEVICE_LIST, base.RULE_ADMIN_OR_SERVICE, 'List devices.',
          ('GET', '/v1/devices')),
    _rule(DEVICE_SHOW, base.RULE_ADMIN_OR_SERVICE,
          'Show a device and its chain of custody.',
          ('GET', '/v1/devices/{device_id}')),
    _rule(DEVICE_CREATE, base.RULE_ADMIN, 'Register a device.',
          ('POST', '/v1/devices')),
    _rule(DEVICE_DELETE, base.RULE_ADMIN,
          'Retire a device (BLANK, ERASED or LOST, unplugged).',
          ('DELETE', '/v1/devices/{device_id}')),
    _rule(DEVICE_RETURN, base.RULE_ADMIN,
          'Send a wiped device home (the courier takes it back to the '
          'terminal it was registered at).',
          ('POST', '/v1/devices/{device_id}/return')),
    _rule(DEVICE_CUSTODY, base.RULE_ADMIN_OR_SERVICE,
          'Record who holds a device (custody).',
          ('POST', '/v1/devices/{device_id}/custody')),
    _rule(TERMINAL_LIST, base.RULE_ADMIN_OR_SERVICE, 'List terminals.',
          ('GET', '/v1/terminals')),
    _rule(TERMINAL_SHOW, base.RULE_ADMIN_OR_SERVICE,
          'Show a terminal and its health.',
          ('GET', '/v1/terminals/{terminal_id}')),
    _rule(TERMINAL_REGISTER, base.RULE_ADMIN_OR_SERVICE,
          'Register a terminal (a terminal registers itself).',
          ('POST', '/v1/terminals')),
    _rule(TERMINAL_HEALTH, base.RULE_ADMIN_OR_SERVICE,
          'Report a terminal\'s health (heartbeat).',
          ('PUT', '/v1/terminals/{terminal_id}/health')),
    _rule(SITE_LIST, base.RULE_ANY_READER,
          'List sites (a project picks a destination from them).',
          ('GET', '/v1/sites')),
    _rule(SITE_SHOW, base.RULE_ANY_READER, 'Show a site.',
          ('GET', '/v1/sites/{site_id}')),
    _rule(SITE_REGISTER, base.RULE_ADMIN, 'Register a site.',
          ('POST', '/v1/sites')),
]


def list_rules():
    return rules
