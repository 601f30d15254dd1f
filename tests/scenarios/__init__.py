"""Longer scenarios on the mini-cloud, run by hand (``tox -e scenarios``).

Guests dirtying memory faster than the link (test_convergence): 7-13
minutes on a 2-core machine, more than ``.ci/run`` can add and stay under
its hour; the cutover of a server alone with its pause timed from outside
(test_nova_cutover: the demo's test in tests/openstack makes its other
checks in CI). The three-server wave is in tests/openstack (CI runs it).
They use the OpenStack tests' fixtures (tests/openstack).
"""
