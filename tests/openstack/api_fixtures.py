"""fedex-api under a real uwsgi, in front of the sandbox's real Keystone.

``Identity`` makes (idempotently) the projects, users and roles the tests
log in as: the one home of these personas (the API tests and the browser
tests, tests/browser, log in as them). ``FedexAPIServer`` runs the project's own ``fedex-api``
command (uwsgi) with keystonemiddleware's auth_token, on a port of the
tests' range of the sandbox (+600..+999), with its own SQLite database,
and stops it by its pid.
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

from fedex_sandbox import sandbox as sandbox_mod
from fedexclient import client as fedex_client

SERVICE_TYPE = fedex_client.SERVICE_TYPE
PASSWORD = 'fedex-test-secret'
PROJECTS = ('fedex-p1', 'fedex-p2', 'service')
# user -> (project, roles)
USERS = {
    'fedex-api': ('service', ('service', 'admin')),   # auth_token's user
    'fedex-admin': ('fedex-p1', ('admin',)),
    'fedex-member1': ('fedex-p1', ('member',)),
    'fedex-reader1': ('fedex-p1', ('reader',)),
    'fedex-member2': ('fedex-p2', ('member',)),
    'fedex-svc': ('service', ('service',)),            # computes, terminals
}
API_PORT_OFFSETS = range(600, 640)


def venv_bin(name):
    return os.path.join(os.path.dirname(sys.executable), name)


def session(auth_url, user, password=PASSWORD, project=None):
    auth = v3.Password(auth_url=auth_url, username=user, password=password,
                       project_name=project or USERS[user][0],
                       user_domain_id='default', project_domain_id='default')
    return ks_session.Session(auth=auth)


class Identity(object):
    """Projects, users and roles, made once."""

    def __init__(self, admin_session, auth_url):
        self.auth_url = auth_url
        self.ks = ks_client.Client(session=admin_session)

    def _ensure(self, manager, name, **kw):
        found = manager.list(name=name)
        if found:
            return found[0]
        try:
            return manager.create(name=name, **kw)
        except ks_exc.Conflict:    # another test process made it first
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


def _free(port):
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(('127.0.0.1', port))
        except OSError:
            return False
    return True


class FedexAPIServer(object):
    """One fedex-api (uwsgi) with its own config and SQLite database."""

    def __init__(self, sandbox, auth_url, name='fedex-api-test',
                 extra=None):
        self.sandbox = sandbox
        self.auth_url = auth_url
        self.extra = extra or {}
        self.port = next((sandbox.port(o) for o in API_PORT_OFFSETS
                          if _free(sandbox.port(o))), None)
        if self.port is None:
            raise RuntimeError('no free port in the tests\' range of the '
                               'sandbox for fedex-api')
        self.dir = os.path.join(sandbox.root, '%s-%d' % (name, self.port))
        self.conf = os.path.join(self.dir, 'fedex-api.conf')
        self.pidfile = os.path.join(self.dir, 'uwsgi.pid')
        self.log = os.path.join(self.dir, 'uwsgi.log')
        self.url = 'http://127.0.0.1:%d' % self.port

    def sections(self):
        """The configuration, as {section: {key: value}}."""
        return {
            'DEFAULT': {'log_file': os.path.join(self.dir, 'api.log')},
            'manager': {'state_path': self.dir},
            'api': {'auth_strategy': 'keystone', 'post_jobs': False},
            'keystone_authtoken': {
                'www_authenticate_uri': self.auth_url,
                'auth_url': self.auth_url, 'auth_type': 'password',
                'username': 'fedex-api', 'password': PASSWORD,
                'project_name': 'service', 'user_domain_id': 'default',
                'project_domain_id': 'default'},
        }

    def write_conf(self):
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        sections = self.sections()
        for name, values in self.extra.items():
            sections.setdefault(name, {}).update(values)
        with open(self.conf, 'w') as f:
            for name, values in sections.items():
                f.write('[%s]\n' % name)
                for k, v in values.items():
                    if v is not None:
                        f.write('%s = %s\n' % (k, v))

    def start(self, timeout=60):
        self.write_conf()
        subprocess.run([venv_bin('fedex-manage'), '--config-file', self.conf,
                        'db', 'sync'], check=True, capture_output=True)
        self.proc = subprocess.Popen(
            [venv_bin('fedex-api'), '--config-file', self.conf,
             '--bind', '127.0.0.1:%d' % self.port, '--processes', '1',
             '--threads', '4', '--pidfile', self.pidfile,
             '--logfile', self.log],
            start_new_session=True, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(('127.0.0.1', self.port),
                                              timeout=1):
                    return self
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError('fedex-api did not listen on %d within %ds; log '
                           '%s' % (self.port, timeout, self.log))

    def stop(self):
        # fedex-api exec'd uwsgi: the process we started is its master.
        proc = getattr(self, 'proc', None)
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def sandbox():
    from tests.functional import base
    return sandbox_mod.Sandbox(base.SANDBOX_DIR)
