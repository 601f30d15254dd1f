"""oslo.policy rules of fedex-api, in code (``DocumentedRuleDefault``).

``oslopolicy-sample-generator --namespace fedex`` writes the sample file.
"""

import itertools

from fedex_manager.policies import base
from fedex_manager.policies import logistics
from fedex_manager.policies import migration
from fedex_manager.policies import planning


def list_rules():
    return list(itertools.chain(base.list_rules(), migration.list_rules(),
                                logistics.list_rules(),
                                planning.list_rules()))
