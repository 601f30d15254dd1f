"""The policy enforcer of fedex-api.

``get_enforcer`` is the ``oslo.policy.enforcer`` entry point the
oslopolicy-* tools use; ``authorize`` is what handlers call.
"""

from oslo_config import cfg
from oslo_policy import policy

from fedex_manager import policies
from lsrp import exception

_ENFORCER = None


PolicyNotAuthorized = exception.PolicyNotAuthorized


def init(conf=cfg.CONF, policy_file=None, rules=None):
    """Build the enforcer once; ``rules`` overrides for tests."""
    global _ENFORCER
    if _ENFORCER is None:
        _ENFORCER = policy.Enforcer(conf, policy_file=policy_file,
                                    rules=rules, use_conf=True)
        _ENFORCER.register_defaults(policies.list_rules())
        _ENFORCER.load_rules()
    return _ENFORCER


def reset():
    global _ENFORCER
    if _ENFORCER is not None:
        _ENFORCER.clear()
    _ENFORCER = None


def get_enforcer():
    """For oslopolicy-policy-generator and oslopolicy-checker."""
    conf = cfg.ConfigOpts()
    conf([], project='fedex')
    reset()
    return init(conf)


def authorize(context, action, target=None, fatal=True):
    """True when policy allows ``action`` on ``target`` for ``context``.

    ``target`` defaults to the caller's own project. Raises
    PolicyNotAuthorized when ``fatal``, else returns False.
    """
    if target is None:
        target = {'project_id': context.project_id,
                  'user_id': context.user_id}
    try:
        return init().authorize(action, target, context, do_raise=True)
    except policy.PolicyNotAuthorized:
        if not fatal:
            return False
        raise PolicyNotAuthorized(action=action,
                                  roles=','.join(context.roles) or 'none',
                                  project=context.project_id)
