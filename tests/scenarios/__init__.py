"""Longer scenarios on the mini-cloud, run by hand (``tox -e scenarios``).

A wave of three servers (test_wave) and guests dirtying memory faster than
the link (test_convergence): each takes 7-13 minutes on a 2-core machine,
which ``.ci/run`` cannot add and stay under its hour. They use the
OpenStack tests' fixtures (tests/openstack).
"""
