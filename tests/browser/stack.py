"""The real services the browser tests drive, started once per run.

* Keystone: the sandbox mini-cloud's, started by the cloud's own code;
* fedex-api: the project's ``fedex-api`` (uwsgi) with keystonemiddleware,
  registered in the catalog as ``vm-shipping``;
* Horizon with the plugin: :mod:`nova_fedex.dashboard.server.horizon`
  (uwsgi) on the sandbox's port +281;
* projects and users: an admin, a member and a reader of ``fedex-p1``, a
  member of ``fedex-p2``.

Every port is the sandbox's (``FEDEX_SANDBOX_BASE_PORT``); every process
is stopped by its pid at the end of the run.
"""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time

from keystoneauth1 import exceptions as ks_exc
from keystoneauth1.identity import v3
from keystoneauth1 import session as ks_session
from keystoneclient.v3 import client as ks_client

from lsrp.sandbox import sandbox as sandbox_mod
from nova_fedex.dashboard.server import horizon as horizon_mod

SERVICE_TYPE = 'vm-shipping'
PASSWORD = 'fedex-browser-secret'
PROJECTS = ('fedex-p1', 'fedex-p2', 'service')
# user -> (project, roles)
USERS = {
    'fedex-api-browser': ('service', ('service', 'admin')),
    'fedex-admin': ('fedex-p1', ('admin', 'member', 'reader')),
    'fedex-member1': ('fedex-p1', ('member', 'reader')),
    'fedex-reader1': ('fedex-p1', ('reader',)),
    'fedex-member2': ('fedex-p2', ('member', 'reader')),
}
# Inside the tests' range of the sandbox (+600..+999).
API_OFFSET = 690


def bin_path(name):
    return os.path.join(os.path.dirname(sys.executable), name)


def wait_port(port, timeout, what, log):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(('127.0.0.1', port), timeout=1):
                return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError('%s did not listen on %d within %d s; see %s'
                       % (what, port, timeout, log))


def keystone(sandbox):
    """(auth_url, admin session) of the sandbox's Keystone, started.

    The mini-cloud's Keystone, brought up by the cloud's own code (only
    MariaDB and Keystone; see tests/openstack/keystone_access.py).
    ``FEDEX_TEST_KEYSTONE_URL`` and ``FEDEX_TEST_KEYSTONE_PASSWORD`` (of
    user admin, project admin) name another Keystone instead.
    """
    url = os.environ.get('FEDEX_TEST_KEYSTONE_URL')
    if not url:
        from tests.openstack import keystone_access
        return keystone_access.admin_session()
    admin = dict(auth_url=url, username='admin',
                 password=os.environ['FEDEX_TEST_KEYSTONE_PASSWORD'],
                 project_name='admin', user_domain_id='default',
                 project_domain_id='default')
    return url, ks_session.Session(auth=v3.Password(**admin))


class Identity(object):
    """Projects, users, roles and the catalog entry, made idempotently."""

    def __init__(self, admin_session):
        self.ks = ks_client.Client(session=admin_session)

    def _ensure(self, manager, name, **kw):
        found = manager.list(name=name)
        if found:
            return found[0]
        try:
            return manager.create(name=name, **kw)
        except ks_exc.Conflict:
            return manager.list(name=name)[0]

    def ensure(self):
        roles = {r: self._ensure(self.ks.roles, r)
                 for r in ('admin', 'member', 'reader', 'service')}
        projects = {p: self._ensure(self.ks.projects, p, domain='default')
                    for p in PROJECTS}
        for user, (project, user_roles) in USERS.items():
            u = self._ensure(self.ks.users, user, domain='default',
                             password=PASSWORD,
                             default_project=projects[project])
            for r in user_roles:
                self.ks.roles.grant(roles[r], user=u,
                                    project=projects[project])
        self.project_ids = {p: projects[p].id for p in PROJECTS}
        return self

    def register(self, url):
        svc = self.ks.services.list(type=SERVICE_TYPE)
        svc = svc[0] if svc else self.ks.services.create(
            name='fedex', type=SERVICE_TYPE,
            description='Migration over FedEx')
        for ep in self.ks.endpoints.list(service=svc):
            if ep.url != url:
                self.ks.endpoints.delete(ep)
        have = {ep.interface for ep in self.ks.endpoints.list(service=svc)}
        for interface in ('public', 'internal', 'admin'):
            if interface not in have:
                self.ks.endpoints.create(svc, url, interface=interface,
                                         region='RegionOne')


def user_session(auth_url, user):
    auth = v3.Password(auth_url=auth_url, username=user, password=PASSWORD,
                       project_name=USERS[user][0], user_domain_id='default',
                       project_domain_id='default')
    return ks_session.Session(auth=auth)


class FedexAPI(object):
    """fedex-api (uwsgi) with its own configuration, in front of Keystone."""

    def __init__(self, sandbox, auth_url, extra_conf=''):
        self.port = sandbox.port(API_OFFSET)
        self.dir = os.path.join(sandbox.root, 'browser', 'fedex-api')
        self.conf = os.path.join(self.dir, 'fedex-api.conf')
        self.pidfile = os.path.join(self.dir, 'uwsgi.pid')
        self.log = os.path.join(self.dir, 'uwsgi.log')
        self.url = 'http://127.0.0.1:%d' % self.port
        self.auth_url = auth_url
        self.extra_conf = extra_conf
        self.proc = None

    def start(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        with open(self.conf, 'w') as f:
            f.write('[DEFAULT]\nlog_file = %(dir)s/api.log\n'
                    '[manager]\nstate_path = %(dir)s\n'
                    '[api]\nauth_strategy = keystone\n'
                    # No conductor in these tests: nothing to post jobs to.
                    'post_jobs = false\n'
                    '[keystone_authtoken]\n'
                    'www_authenticate_uri = %(auth)s\n'
                    'auth_url = %(auth)s\nauth_type = password\n'
                    'username = fedex-api-browser\npassword = %(pw)s\n'
                    'project_name = service\nuser_domain_id = default\n'
                    'project_domain_id = default\n%(extra)s'
                    % {'dir': self.dir, 'auth': self.auth_url,
                       'pw': PASSWORD, 'extra': self.extra_conf})
        subprocess.run([bin_path('fedex-manage'), '--config-file', self.conf,
                        'db', 'sync'], check=True, capture_output=True)
        self.proc = subprocess.Popen(
            [bin_path('fedex-api'), '--config-file', self.conf,
             '--bind', '127.0.0.1:%d' % self.port, '--processes', '1',
             '--threads', '4', '--pidfile', self.pidfile,
             '--logfile', self.log],
            start_new_session=True, stdin=subprocess.DEVNULL)
        wait_port(self.port, 60, 'fedex-api', self.log)
        return self

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Stack(object):
    """Everything, up once per test run (see tests/browser/base.py)."""

    def __init__(self):
        self.sandbox = sandbox_mod.Sandbox(os.environ['FEDEX_SANDBOX_DIR'])
        self.auth_url, self.admin = keystone(self.sandbox)
        self.identity = Identity(self.admin).ensure()
        self.api = FedexAPI(self.sandbox, self.auth_url).start()
        self.identity.register(self.api.url)
        self.horizon = horizon_mod.Horizon(
            os.path.join(self.sandbox.root, 'browser', 'horizon'),
            self.sandbox.port(horizon_mod.PORT_OFFSET), self.auth_url)
        self.horizon.up()

    def api_session(self, user):
        """A keystoneauth session of ``user`` and fedex-api's URL."""
        return user_session(self.auth_url, user), self.api.url

    def stop(self):
        self.horizon.down()
        self.api.stop()
