"""Rules of /v1/migrations."""

from oslo_policy import policy

from fedex_manager.policies import base

PREFIX = 'fedex:migration:%s'
LIST = PREFIX % 'list'
LIST_ALL = PREFIX % 'list:all_projects'
SHOW = PREFIX % 'show'
CREATE = PREFIX % 'create'
UPDATE = PREFIX % 'update'
DELETE = PREFIX % 'delete'
ABORT = PREFIX % 'abort'
RETRY = PREFIX % 'retry'
CUTOVER = PREFIX % 'cutover'
CUTOVER_PLAN = PREFIX % 'cutover:plan'
CUTOVER_EVENT = PREFIX % 'cutover:event'

COLLECTION = '/v1/migrations'
ITEM = '/v1/migrations/{migration_id}'
ACTION = ITEM + '/action'


def _rule(name, check, description, method, path):
    return policy.DocumentedRuleDefault(
        name=name, check_str=check, description=description,
        operations=[{'method': method, 'path': path}],
        scope_types=['project'])


rules = [
    _rule(LIST, base.RULE_PROJECT_READER_OR_SERVICE,
          "List the migrations of the caller's project.", 'GET', COLLECTION),
    _rule(LIST_ALL, base.RULE_ADMIN_OR_SERVICE,
          'List the migrations of every project (?all_projects=true).',
          'GET', COLLECTION),
    _rule(SHOW, base.RULE_PROJECT_READER_OR_SERVICE,
          'Show a migration: state, phase progress, rounds, events. A '
          "caller of another project whom it does not allow gets 404 for "
          'the migration, its events and its actions, as for an unknown '
          'id.', 'GET', ITEM),
    _rule(CREATE, base.RULE_PROJECT_MEMBER,
          'Create a migration of servers of the caller\'s project (runs the '
          'preflight first).', 'POST', COLLECTION),
    _rule(UPDATE, base.RULE_PROJECT_MEMBER,
          "Change a running migration's rate cap, rate schedule, downtime "
          'budget or cutover window.', 'PATCH', ITEM),
    _rule(DELETE, base.RULE_PROJECT_MEMBER,
          'Delete a finished migration.', 'DELETE', ITEM),
    _rule(ABORT, base.RULE_PROJECT_MEMBER,
          'Abort a migration before its cutover.', 'POST', ACTION),
    _rule(RETRY, base.RULE_PROJECT_MEMBER,
          'Retry the failed phase of a migration.', 'POST', ACTION),
    _rule(CUTOVER, base.RULE_PROJECT_MEMBER,
          'Approve the cutover of a migration that is ready for it.',
          'POST', ACTION),
    _rule(CUTOVER_PLAN, base.RULE_ADMIN_OR_SERVICE,
          "Nova's compute driver reads a server's cutover plan.", 'GET',
          '/v1/servers/{server_id}/cutover'),
    _rule(CUTOVER_EVENT, base.RULE_ADMIN_OR_SERVICE,
          "Nova's compute driver reports what the cutover did.", 'POST',
          ITEM + '/cutover-events'),
]


def list_rules():
    return rules
