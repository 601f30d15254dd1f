"""oslo.policy rules of the os-fedex-* volume actions (admin only)."""

from oslo_policy import policy

PREFIX = 'volume_extension:fedex:%s'
ACTIONS = {
    'mark': 'Mark a volume as shipped by a FedEx migration.',
    'unmark': 'Clear the FedEx migration mark of a volume.',
    'cutover': 'Move a shipped volume to the peer site\'s backend.',
    'revert': 'Move a shipped volume back to its previous backend.',
}

rules = [
    policy.DocumentedRuleDefault(
        name=PREFIX % action, check_str='rule:admin_api',
        description=description,
        operations=[{'method': 'POST',
                     'path': '/volumes/{volume_id}/action (os-fedex-%s)'
                     % action}])
    for action, description in ACTIONS.items()]


def list_rules():
    return rules


def authorize(context, action, volume):
    from cinder import policy as cinder_policy

    cinder_policy.init()
    enforcer = cinder_policy._ENFORCER
    if PREFIX % action not in enforcer.registered_rules:
        enforcer.register_defaults(rules)
    context.authorize(PREFIX % action, target_obj=volume)
