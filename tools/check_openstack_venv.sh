#!/bin/bash
# The tox envs that run in the mini-cloud's virtualenv (drivers, horizon)
# need it made, with the test libraries: say how when it is not.
cd "$(dirname "$0")/.."
if ! .venv-openstack/bin/python -c 'import nova, cinder, horizon, stestr, hypothesis, oslotest, ddt, wsgi_intercept' 2>/dev/null; then
    echo "$(pwd)/.venv-openstack is missing or incomplete (nova, cinder," \
        "horizon, test-requirements.txt and tools/openstack-test-requirements.txt):" \
        "run ./tools/install.sh --openstack" >&2
    exit 1
fi
