"""The mini-cloud: a real two-site OpenStack on the sandbox's Ceph clusters.

``fedex-sandbox up --openstack`` runs, on top of the two sites and the shared
services: Keystone, Placement, Nova API, Glance and Cinder API under uWSGI;
nova-conductor, nova-scheduler, cinder-scheduler and cinder-volume (one
backend per site); a Neutron stand-in; and two compute hosts per site, each a
libvirtd in its own mount+UTS+PID namespaces with its nova-compute inside
them, using its site's cluster for ``images_type = rbd``. Each site is an
availability zone and a host aggregate. All state is under
``<sandbox>/openstack/``; see doc/source/sandbox.rst for the layout.

The services run from their own virtualenv (``tools/install.sh
--openstack`` makes ``.venv-openstack``; ``FEDEX_OPENSTACK_VENV`` names
another), into which this project is installed too, so that nova-compute and
cinder-volume can load the project's drivers.
"""

import base64
import concurrent.futures
import hashlib
import importlib.metadata
import json
import os
import shutil
import signal
import subprocess
import time
import uuid

from oslo_log import log as logging

from fedex_sandbox import processes
from fedex_sandbox.services import base
from fedex_sandbox.services import compute_hosts
from fedex_sandbox.services import confs
from fedex_sandbox.services import host_tls
from fedex_sandbox.services import ports
from fedex_sandbox import wan as wan_mod
from lsrp import exception

LOG = logging.getLogger(__name__)

VENV_ENV = 'FEDEX_OPENSTACK_VENV'
DATABASES = ('keystone', 'placement', 'nova_api', 'nova', 'nova_cell0',
             'cinder', 'glance', 'barbican')
# fedex-site-a/-b: the sandbox's terminals, each its own identity at the
# key manager (Barbican's log then says which terminal read a key when);
# fedex-site-c: a third terminal's, that a shipment key's ACL refuses.
TERMINAL_USERS = ('fedex-site-a', 'fedex-site-b', 'fedex-site-c')
SERVICE_USERS = ('nova', 'placement', 'glance', 'cinder', 'fedex',
                 'barbican') + TERMINAL_USERS
# Entry points of this group add WSGI services to the cloud (Horizon, the
# project's API): each is a callable(cloud) returning a list of
# ExtraService. They start after the OpenStack APIs, and their catalog
# entries are registered with the others.
EXTRA_SERVICES_GROUP = 'fedex.sandbox.cloud_services'
# A host's TLS files (host_tls), as its libvirtd and nova-compute see them:
# <host>/etc-libvirt is bound at /etc/libvirt in its namespaces, so the one
# path names each host's own files, as on real hosts.
HOST_PKI_PATH = '/etc/libvirt/pki'


class ExtraService(object):
    """A service another part of the project adds to the mini-cloud."""

    def __init__(self, service, catalog=None):
        self.service = service
        # {'type': ..., 'name': ..., 'url': ...} or None
        self.catalog = catalog


def default_venv():
    env = os.environ.get(VENV_ENV)
    if env:
        return env
    repo = os.path.dirname(os.path.dirname(os.path.abspath(
        exception.__file__)))
    return os.path.join(repo, '.venv-openstack')


class Host(object):
    """One compute host: a libvirtd in its own namespaces + nova-compute."""

    def __init__(self, cloud, site, number, index):
        self.cloud = cloud
        self.site = site
        self.index = index
        self.name = compute_hosts.name(site, number)
        self.dir = os.path.join(cloud.dir, 'hosts', self.name)
        self.address = compute_hosts.address(cloud.sandbox.base_port, index)
        self.conf = os.path.join(self.dir, 'nova-compute.conf')
        self.init = os.path.join(self.dir, 'init.sh')
        # HOST_PKI_PATH, seen from the root namespace.
        self.pki_dir = os.path.join(self.dir, 'etc-libvirt', 'pki')
        self.uri = 'qemu+tcp://%s:%d/system' % (self.address,
                                                cloud.port('libvirtd'))

    def libvirtd(self):
        return HostService(
            'libvirtd-' + self.name,
            ['/usr/bin/unshare', '--mount', '--uts', '--pid', '--fork',
             '--kill-child', '--mount-proc', '/bin/bash', self.init],
            self.cloud.run_dir, self.cloud.log_dir, marker=self.init,
            host=self.address, port=self.cloud.port('libvirtd'),
            log_file=os.path.join(self.dir, 'log', 'libvirtd.log'))

    def init_pid(self):
        pid = self.libvirtd().pid()
        kids = base.descendants(pid)[:1] if pid else []
        return kids[0] if kids else None

    def libvirtd_pid(self):
        """The running libvirtd of the host (a child of its init), or None.

        Not its pid file: libvirtd writes its pid in the host's PID
        namespace there.
        """
        init = self.init_pid()
        for pid in base.descendants(init) if init else []:
            if processes.read_comm(pid) == 'libvirtd':
                return pid
        return None

    def restart_libvirtd(self, timeout=60):
        """A new libvirtd with the host's current libvirtd.conf/qemu.conf.

        Only libvirtd: the host's init starts it again (confs.HOST_INIT)
        and its guests (QEMU, children of the init) keep running; the new
        libvirtd reconnects to them. A restart of the host would kill them.
        """
        old = self.libvirtd_pid()
        if old is None:
            return False
        LOG.info('libvirtd-%s: new configuration or certificates, '
                 'restarting libvirtd (pid %d)', self.name, old)
        os.kill(old, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid = self.libvirtd_pid()
            # The plain port only: a probe of the TLS port (no handshake)
            # is an error in libvirtd's log. Both open together.
            if pid not in (None, old) and base.tcp_open(
                    self.address, self.cloud.port('libvirtd')):
                return True
            time.sleep(0.5)
        raise exception.ServiceFailed(
            service='libvirtd-' + self.name,
            reason='not restarted by its init within %d s' % timeout,
            log=os.path.join(self.dir, 'log', 'libvirtd.log'), tail='')

    def nova_compute(self, init_pid=None):
        venv = self.cloud.venv
        return base.Service(
            'nova-compute-' + self.name,
            ['/usr/bin/nsenter', '-t', str(init_pid or 0), '-m', '-u',
             # nova-compute that can load nova_fedex's driver.
             os.path.join(venv, 'bin', 'nova-compute-fedex'),
             '--config-file', self.cloud.conf('nova'),
             '--config-file', self.conf],
            self.cloud.run_dir, self.cloud.log_dir, comm='nova-compute',
            marker=self.conf, stop_timeout=10, kill_descendants=True,
            stop_group='nova-compute', log_file=os.path.join(
                self.cloud.log_dir, 'nova-compute-%s.log' % self.name))

    def virsh(self, *args, check=True):
        proc = subprocess.run(['virsh', '-c', self.uri] + list(args),
                              capture_output=True, text=True, timeout=60)
        if check and proc.returncode != 0:
            raise exception.ServiceFailed(
                service='libvirtd-' + self.name,
                reason='"virsh %s" failed: %s' % (
                    ' '.join(args[:2]), proc.stderr.strip()),
                log=os.path.join(self.dir, 'log', 'libvirtd.log'), tail='')
        return proc.stdout

    def configure(self, values):
        dirs = {'etc-libvirt': '/etc/libvirt', 'run': '/run/libvirt',
                'lib': '/var/lib/libvirt', 'log': '/var/log/libvirt',
                'cache': '/var/cache/libvirt',
                'instances': self.cloud.instances_path}
        etc = os.path.join(self.dir, 'etc-libvirt')
        if not os.path.isdir(etc):
            shutil.copytree('/etc/libvirt', etc, symlinks=True)
            # No default network: guests have none.
            shutil.rmtree(os.path.join(etc, 'qemu', 'networks'),
                          ignore_errors=True)
        for sub in dirs:
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        os.makedirs(os.path.join(self.dir, 'state'), exist_ok=True)
        state = self.cloud.load_state()
        host_uuid = state.setdefault('host_uuids', {}).setdefault(
            self.name, str(uuid.uuid4()))
        self.cloud.save_state(state)
        lo, hi = ports.migration_range(self.index)
        v = dict(values, host=self.name, address=self.address,
                 host_uuid=host_uuid, site=self.site,
                 migration_min=self.cloud.sandbox.port(lo),
                 migration_max=self.cloud.sandbox.port(hi),
                 host_dir=self.dir, host_conf=self.conf,
                 ceph_conf=self.cloud.sandbox.site(self.site).conf,
                 secret_uuid=state['secrets'][self.site])
        (v['terminal_name'], v['tls_ca'], v['tls_cert'],
         v['tls_key']) = self.cloud.sandbox.terminal(self.site)
        v.update(self.wan_values())
        # Its server certificate names every address it is reached at:
        # its own (in-site migrations) and its WAN face (cutovers).
        certs_changed = host_tls.ensure_host(
            self.cloud.pki_dir, self.pki_dir, self.name,
            [self.address, v['wan_address']])
        v['pki'] = HOST_PKI_PATH
        v['privsep'] = '%s/bin/privsep-helper --config-file %s ' \
            '--config-file %s' % (self.cloud.venv, self.cloud.conf('nova'),
                                  self.conf)
        libvirtd_changed = write(os.path.join(etc, 'libvirtd.conf'),
                                 confs.LIBVIRTD.format(**v))
        qemu_changed = write(os.path.join(etc, 'qemu.conf'),
                             confs.QEMU.format(**v))
        # What a running host must take (Cloud.up): a new libvirtd, a new
        # nova-compute.
        self.libvirt_changed = libvirtd_changed or qemu_changed or \
            certs_changed
        self.conf_changed = write(self.conf, confs.NOVA_COMPUTE.format(**v))
        hosts = os.path.join(self.dir, 'etc-hosts')
        write(hosts, '127.0.0.1 localhost\n%s %s\n' % (
            self.address, self.name))
        binds = ['mkdir -p %s' % ' '.join(sorted(set(dirs.values())))]
        binds += ['mount --bind %s %s' % (os.path.join(self.dir, src), dst)
                  for src, dst in dirs.items()]
        binds.append('mount --bind %s /etc/hosts' % hosts)
        write(self.init, confs.HOST_INIT.format(host=self.name,
                                                binds='\n'.join(binds)))

    def wan_values(self):
        """[fedex] options of this host for the sandbox's WAN."""
        link = wan_mod.SandboxWan(self.cloud.sandbox)
        every = (link.settings() or {}).get('every_migration_to') or []
        return {'wan_address': link.host_face(self.index),
                'wan_for_every_migration': self.name in every,
                'terminal_hosts': '%s:%s' % (link.catchup_face(),
                                             link.final_delta_face())}

    def define_secrets(self):
        """Both sites' cephx keys, so guests of either cluster can run here."""
        state = self.cloud.load_state()
        have = self.virsh('secret-list')
        for site in self.cloud.sandbox.sites:
            secret = state['secrets'][site.name]
            if secret not in have:
                path = os.path.join(self.dir, 'secret-%s.xml' % site.name)
                write(path, confs.SECRET.format(uuid=secret, site=site.name))
                self.virsh('secret-define', path)
            key = subprocess.run(
                ['ceph-authtool', '-p', '-n', 'client.admin', site.keyring],
                capture_output=True, text=True, check=True).stdout.strip()
            self.virsh('secret-set-value', secret, '--base64', key)

    def stop_guests(self):
        if self.libvirtd().pid() is None:
            return
        for name in self.virsh('list', '--name', check=False).split():
            self.virsh('destroy', name, check=False)


class HostService(base.Service):
    """``unshare`` ignores SIGTERM while it waits: signal its child, the init."""

    def stop(self):
        pid = self.pid()
        if pid is not None:
            for kid in base.descendants(pid)[:1]:
                self._signal(kid, signal.SIGTERM)
        return super().stop()


def write(path, text):
    """Write ``text`` to ``path``; returns whether the file changed."""
    try:
        with open(path) as f:
            if f.read() == text:
                return False
    except FileNotFoundError:
        pass
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + '.tmp', 'w') as f:
        f.write(text)
    os.replace(path + '.tmp', path)
    return True


class Cloud(base.ServiceSet):
    """The OpenStack services of one sandbox."""

    def __init__(self, sandbox, venv=None):
        self.sandbox = sandbox
        self.shared = sandbox.shared
        self.dir = os.path.join(sandbox.root, 'openstack')
        self.run_dir = os.path.join(self.dir, 'run')
        self.log_dir = os.path.join(self.dir, 'log')
        self.state_file = os.path.join(self.dir, 'state.json')
        self.instances_path = os.path.join(self.dir, 'instances')
        # The CA of the compute hosts' TLS (host_tls).
        self.pki_dir = os.path.join(self.dir, 'pki')
        self.venv = venv or default_venv()
        self.hosts = [Host(self, *place) for place in compute_hosts.layout(
            s.name for s in sandbox.sites)]

    def exists(self):
        return os.path.isdir(self.dir)

    def port(self, name):
        return self.sandbox.port(ports.offset(name))

    def url(self, name, path=''):
        return 'http://127.0.0.1:%d%s' % (self.port(name), path)

    def conf(self, service):
        if service == 'barbican':
            return os.path.join(self.barbican_home, '.barbican',
                                'barbican.conf')
        # glance's WSGI app looks for glance-api.conf in its config dir.
        name = 'glance-api' if service == 'glance' else service
        return os.path.join(self.dir, service, name + '.conf')

    @property
    def keystone_url(self):
        return self.url('keystone', '/v3')

    @property
    def barbican_home(self):
        # HOME of barbican-api: oslo.config finds ~/.barbican/barbican.conf.
        return os.path.join(self.dir, 'barbican')

    # --- state -------------------------------------------------------------

    def load_state(self):
        try:
            with open(self.state_file) as f:
                return json.load(f)
        except FileNotFoundError:
            return {'done': []}

    def save_state(self, state):
        write(self.state_file, json.dumps(state, indent=2))

    def _done(self, step):
        return step in self.load_state()['done']

    def _mark(self, step):
        state = self.load_state()
        if step not in state['done']:
            state['done'].append(step)
        self.save_state(state)

    # --- configuration ----------------------------------------------------

    def values(self):
        secrets = self.shared.secrets()
        state = self.load_state()
        v = {'dir': self.dir, 'log_dir': self.log_dir, 'venv': self.venv,
             'keystone_url': self.keystone_url,
             'glance_url': self.url('glance-api'),
             'transport_url': self.shared.transport_url(),
             'service_password': secrets['service'],
             'libvirt_port': self.port('libvirtd'),
             'libvirt_tls_port': self.port('libvirtd-tls'),
             'ceph_conf_a': self.sandbox.site('site-a').conf,
             'ceph_conf_b': self.sandbox.site('site-b').conf,
             'secret_a': state['secrets']['site-a'],
             'secret_b': state['secrets']['site-b'],
             'instances_path': self.instances_path,
             'barbican_url': self.url('barbican'),
             'barbican_kek': state['barbican_kek'],
             'live_migrations_per_host': confs.LIVE_MIGRATIONS_PER_HOST}
        for db in DATABASES:
            v['db_' + db] = self.shared.database_url(db)
        for user in SERVICE_USERS:
            v['auth_' + user] = confs.auth(v, user)
        return v

    def configure(self):
        state = self.load_state()
        # One libvirt secret per site, the same on every host.
        state.setdefault('secrets', {s.name: str(uuid.uuid4())
                                     for s in self.sandbox.sites})
        # Barbican's simple crypto plugin: the key that encrypts the keys.
        state.setdefault('barbican_kek', base64.urlsafe_b64encode(
            os.urandom(32)).decode())
        self.save_state(state)
        for sub in ('run', 'log', 'instances', 'glance/staging',
                    'glance/tasks', 'nova/state', 'nova/locks',
                    'cinder/state', 'cinder/locks', 'glance/locks',
                    'keystone'):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        host_tls.ensure_ca(self.pki_dir)
        v = self.values()
        write(self.conf('keystone'), confs.KEYSTONE.format(**v))
        write(self.conf('placement'), confs.PLACEMENT.format(**v))
        write(self.conf('nova'), confs.NOVA.format(**v))
        write(self.conf('glance'), confs.GLANCE.format(**v))
        write(self.conf('cinder'), confs.CINDER.format(**v))
        write(self.conf('barbican'), confs.BARBICAN.format(**v))
        etc = os.path.join(self.venv, 'etc')
        for src, dst in (('nova/api-paste.ini', 'nova'),
                         ('glance/glance-api-paste.ini', 'glance'),
                         ('cinder/api-paste.ini', 'cinder'),
                         ('cinder/resource_filters.json', 'cinder'),
                         ('barbican/barbican-api-paste.ini', 'barbican')):
            shutil.copy(os.path.join(etc, src), os.path.join(self.dir, dst))
        # nova's WSGI app reads api-paste.ini and nova.conf from one dir.
        for h in self.hosts:
            h.configure(v)
        self.write_clouds_yaml()

    # --- processes ----------------------------------------------------------

    def _bin(self, name):
        return os.path.join(self.venv, 'bin', name)

    def _uwsgi(self, name, module, env=(), pyargv=None):
        argv = [self._bin('uwsgi'), '--http-socket',
                '127.0.0.1:%d' % self.port(name), '--module', module,
                '--virtualenv', self.venv, '--master', '--processes', '1',
                '--threads', '4', '--enable-threads', '--die-on-term',
                '--need-app', '--buffer-size', '65535',
                '--add-header', 'Connection: close']
        for k, val in env:
            argv += ['--env', '%s=%s' % (k, val)]
        if pyargv:
            argv += ['--pyargv', pyargv]
        # uWSGI binds its socket before it loads the app: ready means an
        # HTTP answer.
        return base.Service(name, argv, self.run_dir, self.log_dir,
                            marker=self.dir, port=self.port(name),
                            ready=lambda: base.http_answers(self.url(name)),
                            log_file=os.path.join(self.log_dir, name + '.log'),
                            kill_descendants=True, start_timeout=120)

    def _console(self, name, script, conf):
        log = os.path.join(self.log_dir, name + '.log')
        return base.Service(name, [self._bin(script), '--config-file', conf,
                                   '--log-file', log],
                            self.run_dir, self.log_dir, marker=conf,
                            log_file=log, stop_timeout=10,
                            kill_descendants=True)

    def api_services(self):
        d = self.dir
        return [
            self._uwsgi('placement', 'placement.wsgi.api:application',
                        [('OS_PLACEMENT_CONFIG_DIR', os.path.join(d,
                                                                  'placement'))]),
            self._uwsgi('nova-api', 'nova.wsgi.osapi_compute:application',
                        [('OS_NOVA_CONFIG_DIR', os.path.join(d, 'nova'))]),
            self._uwsgi('glance-api', 'glance.wsgi.api:application',
                        [('OS_GLANCE_CONFIG_DIR', os.path.join(d, 'glance'))]),
            self._uwsgi('cinder-api', 'cinder.wsgi.api:application',
                        pyargv='--config-file %s --log-file %s' % (
                            self.conf('cinder'),
                            os.path.join(self.log_dir, 'cinder-api.log'))),
            base.Service('neutron', [self._bin('python'), '-m',
                                     'fedex_sandbox.services.neutron_stub',
                                     '--port', str(self.port('neutron')),
                                     '--marker', self.dir],
                         self.run_dir, self.log_dir, marker=self.dir,
                         port=self.port('neutron')),
            self.barbican(),
        ]

    def barbican(self):
        """barbican-api: the key manager of castellan (type key-manager)."""
        return self._uwsgi(
            'barbican', 'fedex_sandbox.services.barbican_wsgi:application',
            [('HOME', self.barbican_home),
             ('FEDEX_BARBICAN_PASTE', os.path.join(
                 self.dir, 'barbican', 'barbican-api-paste.ini'))])

    def key_manager_conf(self, user='fedex', project='service'):
        """castellan's sections to use this cloud's Barbican as ``user``.

        Barbican is found in the Keystone catalog (type ``key-manager``).
        """
        return {
            'key_manager': {
                'backend': 'barbican', 'auth_type': 'keystone_password',
                'auth_url': self.keystone_url, 'username': user,
                'password': self.shared.secrets()['service'],
                'project_name': project, 'user_domain_name': 'Default',
                'project_domain_name': 'Default'},
            'barbican': {'auth_endpoint': self.keystone_url,
                         'number_of_retries': 10}}

    def keystone(self):
        return self._uwsgi('keystone', 'keystone.wsgi.api:application',
                           [('OS_KEYSTONE_CONFIG_FILES',
                             self.conf('keystone'))])

    def daemons(self):
        return [self._console('nova-conductor', 'nova-conductor',
                              self.conf('nova')),
                self._console('nova-scheduler', 'nova-scheduler',
                              self.conf('nova')),
                self._console('cinder-scheduler', 'cinder-scheduler',
                              self.conf('cinder')),
                self._console('cinder-volume', 'cinder-volume',
                              self.conf('cinder'))]

    def extra_services(self):
        extras = []
        for ep in importlib.metadata.entry_points(group=EXTRA_SERVICES_GROUP):
            extras.extend(ep.load()(self))
        return extras

    def services(self):
        """Every process of the cloud, in start order."""
        out = [self.keystone()] + self.api_services() + self.daemons()
        for h in self.hosts:
            out.append(h.libvirtd())
        for h in self.hosts:
            out.append(h.nova_compute(h.init_pid()))
        out += [e.service for e in self.extra_services()]
        return out

    # --- set-up steps -------------------------------------------------------

    def _run(self, service, argv, timeout=600, input=None):
        log = os.path.join(self.log_dir, 'setup.log')
        begin = time.monotonic()
        proc = subprocess.run(argv, capture_output=True, text=True,
                              timeout=timeout, input=input, cwd='/')
        with open(log, 'a') as f:
            f.write('--- %s (%.1f s, exit %d): %s\n%s%s' % (
                service, time.monotonic() - begin, proc.returncode,
                ' '.join(argv), proc.stdout[-4000:], proc.stderr[-4000:]))
        if proc.returncode != 0:
            raise exception.ServiceFailed(
                service=service, reason='set-up "%s" failed (exit %d)' % (
                    ' '.join(os.path.basename(a) for a in argv[:4]),
                    proc.returncode),
                log=log, tail=processes.log_tail([log]))
        return proc.stdout

    def _step(self, name, fn):
        if self._done(name):
            return
        begin = time.monotonic()
        fn()
        self._mark(name)
        LOG.info('openstack: %s in %.1f s', name, time.monotonic() - begin)

    def _keystone_db(self):
        km = [self._bin('keystone-manage'), '--config-file',
              self.conf('keystone')]
        self._run('keystone', km + ['db_sync'])
        self._run('keystone', km + ['fernet_setup', '--keystone-user',
                                    'root', '--keystone-group', 'root'])
        self._run('keystone', km + ['credential_setup', '--keystone-user',
                                    'root', '--keystone-group', 'root'])
        url = self.keystone_url
        self._run('keystone', km + [
            'bootstrap', '--bootstrap-password',
            self.shared.secrets()['admin'],
            '--bootstrap-admin-url', url, '--bootstrap-public-url', url,
            '--bootstrap-internal-url', url,
            '--bootstrap-region-id', 'RegionOne'])

    def _nova_db(self):
        nm = [self._bin('nova-manage'), '--config-file', self.conf('nova')]
        self._run('nova', nm + ['api_db', 'sync'])
        self._run('nova', nm + ['cell_v2', 'map_cell0', '--database_connection',
                                self.shared.database_url('nova_cell0')])
        if 'cell1' not in self._run('nova', nm + ['cell_v2', 'list_cells']):
            self._run('nova', nm + ['cell_v2', 'create_cell', '--name',
                                    'cell1'])
        self._run('nova', nm + ['db', 'sync'])

    def _setup(self, action, spec):
        spec = dict(spec, admin={'auth_url': self.keystone_url,
                                 'password': self.shared.secrets()['admin']})
        out = self._run('keystone', [self._bin('python'), '-m',
                                     'fedex_sandbox.services.cloud_setup',
                                     action], input=json.dumps(spec))
        return json.loads(out)['result']

    def identity_spec(self):
        secrets = self.shared.secrets()
        users = [{'name': u, 'password': secrets['service'],
                  'project': 'service', 'roles': ['admin', 'service']}
                 for u in SERVICE_USERS if u not in TERMINAL_USERS]
        # Terminals are not admins: Barbican lets a project admin read any
        # secret of the project, and a shipment key's ACL names the one
        # terminal that may read it (fedex_manager/keys.py).
        users += [{'name': u, 'password': secrets['service'],
                   'project': 'service', 'roles': ['member', 'reader']}
                  for u in TERMINAL_USERS]
        users += [{'name': 'demo', 'password': secrets['demo'],
                   'project': 'demo', 'roles': ['member', 'reader']},
                  {'name': 'demo-reader', 'password': secrets['demo'],
                   'project': 'demo', 'roles': ['reader']}]
        services = [
            {'type': 'placement', 'name': 'placement',
             'url': self.url('placement')},
            {'type': 'compute', 'name': 'nova',
             'url': self.url('nova-api', '/v2.1')},
            {'type': 'image', 'name': 'glance', 'url': self.url('glance-api')},
            {'type': 'block-storage', 'name': 'cinder',
             'url': self.url('cinder-api', '/v3/%(project_id)s')},
            {'type': 'volumev3', 'name': 'cinderv3',
             'url': self.url('cinder-api', '/v3/%(project_id)s')},
            {'type': 'network', 'name': 'neutron',
             'url': self.url('neutron')},
            {'type': 'key-manager', 'name': 'barbican',
             'url': self.url('barbican')},
        ]
        services += [e.catalog for e in self.extra_services() if e.catalog]
        return {'users': users, 'services': services}

    def resources_spec(self):
        from fedex_sandbox.services import guest as guest_mod
        files = guest_mod.build(os.path.join(self.dir, 'guest'))
        return {
            'aggregates': [{'name': s.name, 'zone': s.name,
                            'hosts': [h.name for h in self.hosts
                                      if h.site == s.name]}
                           for s in self.sandbox.sites],
            'flavors': [{'name': 'm1.mini', 'ram': 256, 'vcpus': 1,
                         'disk': 1}],
            # One type for both sites (see confs.CINDER).
            'volume_types': [{'name': 'ceph', 'backend': 'ceph'}],
            'images': [
                {'name': 'guest-kernel', 'file': files['kernel'],
                 'disk_format': 'aki', 'container_format': 'aki'},
                {'name': 'guest-ramdisk', 'file': files['initrd'],
                 'disk_format': 'ari', 'container_format': 'ari'},
                {'name': 'guest', 'file': files['disk'],
                 'disk_format': 'raw', 'container_format': 'bare',
                 'refer': {'kernel_id': 'guest-kernel',
                           'ramdisk_id': 'guest-ramdisk'}},
            ]}

    def _wait_computes(self, timeout=300):
        """Wait until every host has a compute node; map them to the cell."""
        names = {h.name for h in self.hosts}
        deadline = time.monotonic() + timeout
        while True:
            out = self.shared.sql('SELECT hypervisor_hostname FROM '
                                  'nova.compute_nodes WHERE deleted = 0;')
            have = set(out.split()[1:])
            if names <= have:
                break
            for h in self.hosts:
                svc = h.nova_compute(h.init_pid())
                if svc.pid() is None:
                    raise svc.failed('exited while starting')
            if time.monotonic() > deadline:
                raise exception.ServiceFailed(
                    service='nova-compute',
                    reason='hosts %s did not report within %d s' % (
                        ', '.join(sorted(names - have)), timeout),
                    log=self.log_dir, tail='')
            time.sleep(1)
        self._run('nova', [self._bin('nova-manage'), '--config-file',
                           self.conf('nova'), 'cell_v2', 'discover_hosts'])

    def _check_venv(self):
        if not os.path.exists(self._bin('nova-compute')):
            raise exception.SandboxError(
                reason='no OpenStack virtualenv at %s; run tools/install.sh '
                       '--openstack (or set %s)' % (self.venv, VENV_ENV))

    def _applied(self, name, spec, fn):
        """Run fn unless spec was applied already (same digest in state).

        A second ``up`` on a running cloud re-applies users, catalog,
        images and flavors only when what it asks for changed.
        """
        digest = hashlib.sha256(json.dumps(
            spec, sort_keys=True).encode()).hexdigest()
        if self.load_state().get('applied', {}).get(name) == digest:
            return False
        begin = time.monotonic()
        fn(spec)
        state = self.load_state()
        state.setdefault('applied', {})[name] = digest
        self.save_state(state)
        LOG.info('openstack: %s in %.1f s', name, time.monotonic() - begin)
        return True

    def _heal(self, svc, grace=60):
        """A process of ours that is up but does not answer is restarted."""
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            if svc.pid() is None or svc.ready():
                return False
            time.sleep(0.5)
        LOG.warning('%s: running but not answering for %d s; restarting',
                    svc.name, grace)
        svc.stop()
        return True

    def up(self):
        """Bring the cloud up (idempotent); returns {name: action}.

        On a running, healthy cloud this only checks: every process is
        ours and answers, every set-up step is recorded as done, and the
        users, catalog and resources asked for are those last applied.
        """
        self._check_venv()
        begin = time.monotonic()
        # Every path between the sites crosses the emulated WAN: up first,
        # as the operator last shaped it (wan.json) or fast by default.
        wan_state = wan_mod.SandboxWan(self.sandbox).ensure()
        self.configure()
        self.shared.sql(''.join(
            'CREATE DATABASE IF NOT EXISTS `%s` CHARACTER SET utf8mb4;' % db
            for db in DATABASES))
        result = {}

        def ensure(svc):
            if svc.pid() is not None and not self._heal(svc):
                result[svc.name] = 'running'
                return
            svc.ensure_port_free()
            svc.start()
            result[svc.name] = 'started'

        self._step('keystone-db', self._keystone_db)
        keystone = self.keystone()
        ensure(keystone)
        with concurrent.futures.ThreadPoolExecutor(5) as pool:
            futures = [
                pool.submit(self._step, 'placement-db', lambda: self._run(
                    'placement', [self._bin('placement-manage'),
                                  '--config-file', self.conf('placement'),
                                  'db', 'sync'])),
                pool.submit(self._step, 'nova-db', self._nova_db),
                pool.submit(self._step, 'glance-db', lambda: self._run(
                    'glance', [self._bin('glance-manage'), '--config-file',
                               self.conf('glance'), 'db_sync'])),
                pool.submit(self._step, 'cinder-db', lambda: self._run(
                    'cinder', [self._bin('cinder-manage'), '--config-file',
                               self.conf('cinder'), 'db', 'sync'])),
            ]
            keystone.wait_ready()
            self._applied('identity', self.identity_spec(),
                          lambda spec: self._setup('identity', spec))
            for f in futures:
                f.result()
        started = []
        for svc in self.api_services() + self.daemons():
            ensure(svc)
            started.append(svc)
        for h in self.hosts:
            svc = h.libvirtd()
            ensure(svc)
            started.append(svc)
        for svc in started:
            svc.wait_ready()
        for h in self.hosts:
            restarted = False
            if result[h.libvirtd().name] == 'running' and getattr(
                    h, 'libvirt_changed', False):
                restarted = h.restart_libvirtd()
                if restarted:
                    result[h.libvirtd().name] = 'restarted libvirtd'
            # libvirt keeps secrets in the host's own /etc/libvirt: set them
            # again only on a host that was (re)started.
            if result[h.libvirtd().name] == 'started' or restarted or \
                    not self._done('secrets-' + h.name):
                h.define_secrets()
                self._mark('secrets-' + h.name)
            svc = h.nova_compute(h.init_pid())
            if getattr(h, 'conf_changed', False) and svc.pid() is not None:
                # Its configuration changed (wan-up --every-migration-to,
                # the live-migration URI and TLS options).
                LOG.info('%s: new configuration, restarting', svc.name)
                svc.stop()
            ensure(svc)
        for e in self.extra_services():
            ensure(e.service)
            e.service.wait_ready()
        self._step('discover-hosts', self._wait_computes)
        self._applied('resources', self.resources_spec(),
                      lambda spec: self._setup('resources', spec))
        result['wan'] = wan_state
        LOG.info('openstack up in %.1f s', time.monotonic() - begin)
        return result

    def down(self):
        """Stop guests, computes, hosts, daemons, APIs; returns [(name, pid)]."""
        for h in self.hosts:
            try:
                h.stop_guests()
            except exception.FedexException as e:
                LOG.warning('%s: %s', h.name, e)
        stopped = self.stop_services()
        # A uWSGI worker can outlive its master: whatever of ours still
        # listens on an API port goes too.
        for svc in [self.keystone()] + self.api_services():
            pid = processes.listening_pid(svc.port)
            if pid and self.dir in ' '.join(processes.read_cmdline(pid) or []):
                os.kill(pid, signal.SIGKILL)
        return stopped

    def destroy(self):
        self.down()
        # The link up brought (its relay names our directory).
        wan_mod.SandboxWan(self.sandbox).down(keep_guard=False)
        for db in DATABASES:
            try:
                self.shared.sql('DROP DATABASE IF EXISTS `%s`;' % db)
            except exception.FedexException:
                pass  # MariaDB may be gone already: its data goes too.
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- clients ------------------------------------------------------------

    def credentials(self):
        """{cloud name: auth dict} of the users the cloud was made with."""
        secrets = self.shared.secrets()

        def auth(user, password, project):
            return {'auth_url': self.keystone_url, 'username': user,
                    'password': password, 'project_name': project,
                    'user_domain_name': 'Default',
                    'project_domain_name': 'Default'}
        return {'fedex-admin': auth('admin', secrets['admin'], 'admin'),
                'fedex-demo': auth('demo', secrets['demo'], 'demo'),
                'fedex-reader': auth('demo-reader', secrets['demo'], 'demo'),
                'fedex-service': auth('fedex', secrets['service'],
                                      'service')}

    @property
    def clouds_yaml(self):
        return os.path.join(self.dir, 'clouds.yaml')

    def write_clouds_yaml(self):
        # JSON is YAML: no yaml library needed here.
        clouds = {name: {'auth': a, 'region_name': 'RegionOne',
                         'identity_api_version': 3,
                         'interface': 'public'}
                  for name, a in self.credentials().items()}
        write(self.clouds_yaml, json.dumps({'clouds': clouds}, indent=2))
        os.chmod(self.clouds_yaml, 0o600)

    def client_env(self, cloud='fedex-admin'):
        """Environment for the ``openstack`` client as a user of the cloud."""
        return {'OS_CLIENT_CONFIG_FILE': self.clouds_yaml, 'OS_CLOUD': cloud,
                'PATH': os.path.join(self.venv, 'bin') + ':'
                + os.environ.get('PATH', '')}

    def openstack(self, *args, cloud='fedex-admin', timeout=300):
        """Run the real ``openstack`` CLI; returns its parsed JSON output."""
        out = self.openstack_plain(*(list(args) + ['-f', 'json']),
                                   cloud=cloud, timeout=timeout)
        return json.loads(out) if out.strip() else None

    def openstack_plain(self, *args, cloud='fedex-admin', timeout=900,
                        check=True):
        """Run the real ``openstack`` CLI; returns its output."""
        argv = [self._bin('openstack')] + list(args)
        proc = subprocess.run(argv, capture_output=True, text=True,
                              timeout=timeout,
                              env=dict(os.environ, **self.client_env(cloud)))
        if check and proc.returncode != 0:
            raise exception.SandboxError(reason='"openstack %s" failed: %s' % (
                ' '.join(args), proc.stderr.strip()[-800:]))
        return proc.stdout
