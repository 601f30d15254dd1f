"""Horizon with the FedEx panels in the sandbox's mini-cloud.

The ``fedex.sandbox.cloud_services`` entry point: ``fedex-sandbox up
--openstack`` starts it after the OpenStack APIs, under uwsgi on the
sandbox's port +281 (``ports.PORTS['horizon']``), from the cloud's
virtualenv (which has Horizon: ``tools/install.sh --openstack``), logging
in against the cloud's Keystone; ``down`` stops it and ``status`` lists it
with the other services. Its files (static links, secret key) live in
``<sandbox>/openstack/horizon``. The panels find fedex-api (port +280) in
the user's catalog (type ``vm-shipping``).
"""

import os

from fedex_sandbox.services import base
from lsrp import exception

PORT_NAME = 'horizon'
# Horizon's first page compiles its SCSS (about 10 s idle, minutes on a
# loaded machine).
START_TIMEOUT = 600


def cloud_services(cloud):
    """[ExtraService] of Horizon for the mini-cloud."""
    from fedex_sandbox.services import cloud as cloud_mod
    python = os.path.join(cloud.venv, 'bin', 'python')
    if not os.path.exists(os.path.join(cloud.venv, 'bin', 'django-admin')):
        raise exception.SandboxError(
            reason='Horizon is not installed in %s: run tools/install.sh '
                   '--openstack' % cloud.venv)
    run_dir = os.path.join(cloud.dir, 'horizon')
    port = cloud.port(PORT_NAME)
    url = cloud.url(PORT_NAME)
    service = base.Service(
        'horizon',
        [python, '-m', 'fedex_sandbox.horizon.horizon', 'serve',
         '--dir', run_dir, '--port', str(port),
         '--keystone', cloud.keystone_url],
        # NOTE: python links the static files, then becomes uwsgi: one
        # pid, two names.
        cloud.run_dir, cloud.log_dir, marker=run_dir,
        comm=('python', 'uwsgi'), port=port,
        ready=lambda: base.http_answers(url + '/auth/login/', timeout=60),
        start_timeout=START_TIMEOUT, kill_descendants=True)
    return [cloud_mod.ExtraService(service)]
