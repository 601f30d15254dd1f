"""Rules of /v1/plans and /v1/events."""

from oslo_policy import policy

from fedex_manager.policies import base

PLAN_CREATE = 'fedex:plan:create'
PLAN_LIST = 'fedex:plan:list'
PLAN_LIST_ALL = 'fedex:plan:list:all_projects'
PLAN_SHOW = 'fedex:plan:show'
PLAN_DELETE = 'fedex:plan:delete'
EVENT_LIST = 'fedex:event:list'
EVENT_LIST_ALL = 'fedex:event:list:all_projects'
EVENT_CREATE = 'fedex:event:create'

rules = [
    policy.DocumentedRuleDefault(
        name=PLAN_CREATE, check_str='rule:fedex_admin or role:member',
        description='Compute a ship-or-WAN plan and store it in the '
                    "caller's project (nothing is started).",
        operations=[{'method': 'POST', 'path': '/v1/plans'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=PLAN_LIST, check_str=base.RULE_PROJECT_READER,
        description="List the plans of the caller's project.",
        operations=[{'method': 'GET', 'path': '/v1/plans'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=PLAN_LIST_ALL, check_str=base.RULE_ADMIN,
        description='List the plans of every project '
                    '(?all_projects=1 or ?project=).',
        operations=[{'method': 'GET', 'path': '/v1/plans'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=PLAN_SHOW, check_str=base.RULE_PROJECT_READER,
        description='Show a stored plan: its inputs and its result.',
        operations=[{'method': 'GET', 'path': '/v1/plans/{plan_id}'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=PLAN_DELETE, check_str=base.RULE_PROJECT_MEMBER,
        description="Delete a stored plan of the caller's project (a plan "
                    'started nothing: only the record goes).',
        operations=[{'method': 'DELETE', 'path': '/v1/plans/{plan_id}'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=EVENT_LIST, check_str=base.RULE_PROJECT_READER_OR_SERVICE,
        description="List the audit trail of the caller's project's "
                    'migrations.',
        operations=[{'method': 'GET', 'path': '/v1/events'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=EVENT_LIST_ALL, check_str=base.RULE_ADMIN_OR_SERVICE,
        description='List the whole audit trail, every project and the '
                    'logistics.',
        operations=[{'method': 'GET', 'path': '/v1/events'}],
        scope_types=['project']),
    policy.DocumentedRuleDefault(
        name=EVENT_CREATE, check_str=base.RULE_ADMIN_OR_SERVICE,
        description='Append an event (a Nova compute or a terminal reports '
                    'progress).',
        operations=[{'method': 'POST', 'path': '/v1/events'}],
        scope_types=['project']),
]


def list_rules():
    return rules
