"""The sandbox's mini-cloud, as the browser tests use it.

Nothing is started here: ``tox -e browser`` runs ``fedex-sandbox up
--openstack`` first (a no-op when the cloud is up), which serves

* Keystone (the cloud's), with the tests' personas made by
  :mod:`tests.openstack.api_fixtures` (their one home);
* fedex-api on the sandbox's port +280, on the sandbox manager's database
  and jobboard: what is created through it is driven by the sandbox's
  fedex-conductor and terminal agents (fedex_sandbox.manager);
* Horizon with the plugin under uwsgi on port +281
  (fedex_sandbox.services.horizon).

Here: the check that all of it runs, the personas, and the Ceph clusters
of both sites (the tests' "servers" are RBD images at site-a).
"""

import os

from fedex_sandbox import manager as manager_sandbox
from fedex_sandbox import opts as sandbox_opts
from fedex_sandbox import sandbox as sandbox_mod
from lsrp.rbd import Cluster
from tests.openstack import api_fixtures as fx
from tests.openstack import keystone_access

PASSWORD = fx.PASSWORD


class Stack(object):
    """The running cloud and manager, checked once per test run."""

    def __init__(self):
        self.sandbox = sandbox_mod.Sandbox(os.environ.get(
            sandbox_opts.DIR_ENV, sandbox_opts.DEFAULT_DIR))
        self.cloud = self.sandbox.cloud()
        self.manager = manager_sandbox.SandboxManager(self.sandbox)
        down = [s['name'] for s in self.cloud.status() + (
            self.manager.status() if self.manager.configured() else [])
            if s['state'] != 'running']
        if not self.cloud.exists() or not self.manager.configured() or down:
            raise AssertionError(
                'the mini-cloud of %s is not fully up (down: %s): run '
                'fedex-sandbox up --openstack (tox -e browser does)'
                % (self.sandbox.root, ', '.join(down) or 'everything'))
        self.auth_url, admin = keystone_access.admin_session()
        self.identity = fx.Identity(admin, self.auth_url).ensure()
        self.api_url = self.cloud.url('fedex-api')
        self.horizon_url = self.cloud.url('horizon')
        self.clusters = {}
        self._sessions = {}
        for s in self.sandbox.sites:
            cluster = Cluster(s.conf, s.keyring, site=s.name)
            cluster.connect()
            self.clusters[s.name] = cluster

    def api_session(self, user):
        """A keystoneauth session of ``user`` and fedex-api's URL.

        One per user, so its token is reused: each new token is a password
        check in Keystone (bcrypt), seconds of CPU on a loaded machine.
        """
        if user not in self._sessions:
            self._sessions[user] = fx.session(self.auth_url, user)
        return self._sessions[user], self.api_url

    def stop(self):
        for cluster in self.clusters.values():
            cluster.close()
