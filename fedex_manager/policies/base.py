"""Personas every fedex rule is built from (placement/nova SRBAC style).

Keystone's default roles imply each other (admin > member > reader), so a
member's token carries ``reader`` too: project rules therefore always bind
the role to the project the target belongs to.
"""

from oslo_policy import policy

ADMIN = 'role:admin'
SERVICE = 'role:service'
PROJECT_MEMBER = 'role:member and project_id:%(project_id)s'
PROJECT_READER = 'role:reader and project_id:%(project_id)s'

RULE_ADMIN = 'rule:fedex_admin'
RULE_SERVICE = 'rule:fedex_service'
RULE_ADMIN_OR_SERVICE = 'rule:fedex_admin or rule:fedex_service'
RULE_PROJECT_MEMBER = 'rule:fedex_admin or rule:fedex_project_member'
RULE_PROJECT_READER = 'rule:fedex_admin or rule:fedex_project_reader'
RULE_PROJECT_READER_OR_SERVICE = (
    'rule:fedex_admin or rule:fedex_service or rule:fedex_project_reader')
RULE_ANY_READER = 'rule:fedex_admin or role:reader or rule:fedex_service'

rules = [
    policy.RuleDefault('fedex_admin', ADMIN,
                       description='An administrator: may do everything.'),
    policy.RuleDefault('fedex_service', SERVICE,
                       description='A service user: the Nova computes and '
                                   'the terminals calling in.'),
    policy.RuleDefault('fedex_project_member', PROJECT_MEMBER,
                       description='A member of the project that owns the '
                                   'target.'),
    policy.RuleDefault('fedex_project_reader', PROJECT_READER,
                       description='A reader of the project that owns the '
                                   'target.'),
]


def list_rules():
    return rules
