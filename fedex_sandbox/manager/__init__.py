"""The manager in ``fedex-sandbox``: a conductor and one agent per site.

This package is what the manager adds to the sandbox, found through the
``fedex.sandbox.*`` entry points (the sandbox itself knows nothing of the
manager): this layer, and the demos ``fedex-sandbox demo`` runs
(``cloud_demo``: a real Nova server and its volume through the
mini-cloud; ``ceph_demo``: ``--ceph-only``, a VM's images without Nova).

``fedex-sandbox up`` starts them after the Ceph sites and the shared
services (MariaDB: the manager's database ``sandbox``; RabbitMQ;
ZooKeeper), ``down`` stops them, ``status`` lists them. (SQLite, the
embedded default, said 'database is locked' to the demo on a loaded
machine: the demo, the conductor and taskflow write at once.) Their files
live in ``<sandbox>/manager``: configs, logs, pid files, the key
directory, the device slots of each terminal
(``slots-site-a/<serial>``: directories standing in for USB disks).

With the mini-cloud (``fedex-sandbox up --openstack``) the conductor
drives Nova at the cutover (``[conductor] compute_driver = nova``) and
marks and moves Cinder volumes, as the cloud's own ``fedex`` service user
(``[nova]``, ``[cinder]``); the cloud's fedex-api gets the same. Without
it, the final delta completes a migration (the Ceph-only demo).

``fedex-sandbox up --terminals-per-site N`` runs N terminals at each site
(``terminal-site-a``, ``terminal-site-a-2``...; remembered in
``<sandbox>/manager/settings.json`` for the later commands): each its own
lsrp-server port (``services.ports.extra_terminal``), certificate, state,
key and slot directories, and its agent; site A's each with their blank
devices. The manager spreads the migrations over them (the least busy
terminal of a site, ``fedex_manager.actions.migrations.choose_terminals``).
"""

import json
import os

from oslo_config import cfg

from fedex_manager.conductor import jobboard
from fedex_manager.db import api as db
from fedex_manager import opts
from fedex_sandbox.manager import deploy
from fedex_sandbox.services import base as services_base
from fedex_sandbox.services import ports
from lsrp import exception
from lsrp import fileutils

SITES = ('site-a', 'site-b')
TERMINAL_OFFSETS = {'site-a': 300, 'site-b': 301}
DEVICES_PER_SITE = 3
# As many as the terminals' ports the WAN forwards hold.
MAX_TERMINALS_PER_SITE = ports.MAX_TERMINALS_PER_SITE
SETTINGS = 'settings.json'


def cloud_auth(sb):
    """keystoneauth options of the cloud's ``fedex`` user, or None.

    None when the sandbox has no mini-cloud (its clouds.yaml is written
    when ``up --openstack`` configures it).
    """
    cloud = sb.cloud()
    if not os.path.exists(cloud.clouds_yaml):
        return None
    return dict(cloud.credentials()['fedex-service'], auth_type='password',
                region_name='RegionOne')


class SandboxManager(services_base.ServiceSet):

    def __init__(self, sb):
        self.sb = sb
        self.root = os.path.join(sb.root, 'manager')
        self.run_dir = os.path.join(self.root, 'run')
        self.log_dir = os.path.join(self.root, 'log')
        self._dep = None

    @property
    def dep(self):
        if self._dep is None:
            self._dep = deploy.Deployment(
                self.sb, self.sb.shared.endpoints(), 'sandbox', self.root,
                {s: self.sb.port(o) for s, o in TERMINAL_OFFSETS.items()},
                session_timeout=10, database='mysql',
                timetable={'hand_over': 0, 'depart': 2, 'scan': 4,
                           'deliver': 6})
            # Devices wiped at site B go home to site A by the courier: a
            # demo run again finds them there.
            self._dep.return_devices = True
            auth = cloud_auth(self.sb)
            if auth:
                self._dep.compute_driver = 'nova'
                self._dep.nova = auth
                self._dep.cinder = auth
        return self._dep

    def connect(self, project):
        """Configure this process as a client of the sandbox's manager.

        What a demo needs to create migrations and read their events: the
        manager's database and its jobboard (to post the first phase).

        :returns: ``(backend, board)`` of ``jobboard.install_poster``.
        """
        conf = cfg.ConfigOpts()
        opts.register_opts(conf)
        conf(['--config-file', os.path.join(self.dep.work, 'manage.conf')],
             project=project)
        db.configure(conf.database.connection)
        return jobboard.install_poster(conf)

    def drives_nova(self):
        """True when the conductor asks Nova for the cutover."""
        return self.dep.compute_driver == 'nova'

    def _service(self, name, conf, program):
        argv = [os.path.join(deploy.BIN, program), '--config-file', conf]
        return services_base.Service(
            name, argv, self.run_dir, self.log_dir, marker=conf,
            ready=lambda: True, stop_timeout=20)

    # --- terminals -------------------------------------------------------------

    @property
    def settings_file(self):
        return os.path.join(self.root, SETTINGS)

    def settings(self):
        """What ``fedex-sandbox up`` was last asked for (its flags)."""
        try:
            with open(self.settings_file) as f:
                return json.load(f)
        except (FileNotFoundError, ValueError):
            return {}

    @property
    def terminals_per_site(self):
        """Terminals each site runs: as last asked, else 1."""
        return self.settings().get('terminals_per_site', 1)

    def set_terminals_per_site(self, count):
        """Remember ``count`` for this and the later commands."""
        if not 1 <= count <= MAX_TERMINALS_PER_SITE:
            raise exception.SandboxError(
                reason='%d terminals per site: the sandbox runs 1 to %d '
                '(the ports of its terminals, +%d..+%d)' % (
                    count, MAX_TERMINALS_PER_SITE, TERMINAL_OFFSETS['site-a'],
                    ports.EXTRA_TERMINAL_LAST))
        os.makedirs(self.root, exist_ok=True)
        fileutils.write_atomic(self.settings_file, json.dumps(
            dict(self.settings(), terminals_per_site=count)))

    def terminal_port(self, site, n=1):
        if n == 1:
            return self.sb.port(TERMINAL_OFFSETS[site])
        return self.sb.port(ports.extra_terminal(SITES.index(site), n))

    def terminals(self, count=None):
        """``[(site, n, name)]``: terminal ``n`` of each site, n <= count.

        ``count``: the terminals per site (default: as remembered).
        """
        count = self.terminals_per_site if count is None else count
        return [(site, n, self.dep.terminal_name(site, n))
                for n in range(1, count + 1) for site in SITES]

    def terminal_names(self):
        """The names the sandbox's terminals register with the manager."""
        return [name for _, _, name in self.terminals()]

    def _agent(self, site, n):
        tail = deploy.terminal_suffix(site, n)
        return self._service('lsrp-agent-%s' % tail,
                             os.path.join(self.dep.work,
                                          'agent-%s.conf' % tail),
                             'lsrp-agent')

    def _prepare_terminals(self):
        """Certificates and slots of the terminals beyond the first.

        Site A's get their blank devices (the seeds' carriers) when their
        slots are made; site B's, like its first terminal, receive the
        devices the courier brings.
        """
        d = self.dep
        for site, n, _ in self.terminals():
            if n == 1:
                continue
            d.ensure_cert(site, n)
            if not os.path.isdir(d.slots_dir(site, n)):
                d.make_slots(site, DEVICES_PER_SITE if site == 'site-a'
                             else 0, n)

    def _retire(self):
        """Stop the agents of terminals beyond the count asked for.

        Their last heartbeat is forgotten at once (health UNKNOWN, not UP
        until the heartbeat timeout), so that no new migration is given
        to them while a site has a terminal UP.
        """
        stopped = {}
        for n in range(self.terminals_per_site + 1,
                       MAX_TERMINALS_PER_SITE + 1):
            for site in SITES:
                svc = self._agent(site, n)
                if svc.pid() is not None:
                    svc.stop()
                    stopped[svc.name] = self.dep.terminal_name(site, n)
        if stopped:
            from fedex_manager import context
            db.configure(self.dep.db_url)
            ctx = context.admin('fedex-sandbox')
            for name in stopped.values():
                try:
                    term = db.get(ctx, 'terminal', name)
                except exception.NotFound:
                    continue
                db.update(ctx, 'terminal', term['id'],
                          {'last_heartbeat': None})
                db.add_event(ctx, 'terminal', term['id'], 'health',
                             'terminal %s stopped: fedex-sandbox runs %d '
                             'terminal(s) per site' % (
                                 name, self.terminals_per_site))
        return {name: 'stopped (fewer terminals per site)'
                for name in stopped}

    # --- services --------------------------------------------------------------

    def services(self):
        d = self.dep
        out = [self._service('fedex-conductor',
                             os.path.join(d.work, 'conductor-1.conf'),
                             'fedex-conductor')]
        for site, n, _ in self.terminals():
            out.append(self._agent(site, n))
        return out

    def configure(self):
        # Heavy imports (SQLAlchemy, oslo.messaging) only when needed: a
        # second 'fedex-sandbox up' stays quick.
        from fedex_manager.actions import sites as site_actions
        from fedex_manager import context
        from fedex_manager.db import api as db
        d = self.dep
        d.db_sync()
        self._prepare_terminals()
        self.write_confs()
        db.configure(d.db_url)
        ctx = context.admin('fedex-sandbox')
        for site in SITES:
            # The mini-cloud's availability zone and host aggregate of a
            # site bear its name: where a cutover that names no host goes.
            try:
                found = db.get(ctx, 'site', site)
                if not found.get('aggregate'):
                    db.update(ctx, 'site', found['id'], {
                        'aggregate': site, 'availability_zone': site})
            except exception.NotFound:
                s = self.sb.site(site)
                site_actions.site_register(ctx, site, ceph_conf=s.conf,
                                           ceph_keyring=s.keyring,
                                           availability_zone=site, aggregate=site)
        d.make_slots('site-a', DEVICES_PER_SITE)
        os.makedirs(d.slots_dir('site-b'), exist_ok=True)

    def write_confs(self):
        """The processes' config files; the names of those that changed."""
        d = self.dep
        wanted = {'conductor-1.conf': d.manager_conf('conductor-1')}
        for site, n, _ in self.terminals():
            tail = deploy.terminal_suffix(site, n)
            wanted['agent-%s.conf' % tail] = d.agent_conf(
                site, n, self.terminal_port(site, n))
        changed = []
        for filename, sections in wanted.items():
            path = os.path.join(d.work, filename)
            try:
                with open(path) as f:
                    old = f.read()
            except FileNotFoundError:
                old = None
            if old != deploy._ini(sections):
                d.write_conf(filename, sections)
                changed.append(path)
        return changed

    @property
    def marker(self):
        return os.path.join(self.root, 'configured')

    def configured(self):
        return os.path.exists(self.marker)

    def up(self, terminals_per_site=None):
        """Start what is not running; ``{service: action}``.

        ``terminals_per_site``: run that many terminals at each site from
        now on (remembered); None: as before.
        """
        if terminals_per_site is not None:
            self.set_terminals_per_site(terminals_per_site)
        # Configured once (schema, sites, slots): a second up is a no-op.
        if not self.configured():
            self.configure()
            with open(self.marker, 'w') as f:
                f.write('yes\n')
            changed = []
        else:
            # The mini-cloud came (or went): the conductor's [nova] and
            # [cinder] follow, and a running process takes its new config.
            # More terminals per site than before: theirs are new.
            self._prepare_terminals()
            changed = self.write_confs()
        result = self._retire()
        for svc in self.services():
            if svc.pid() is not None and svc.marker in changed:
                svc.stop()
                svc.start()
                result[svc.name] = 'restarted (new config)'
            elif svc.pid() is None:
                svc.start()
                result[svc.name] = 'started'
            else:
                result[svc.name] = 'running'
        return result

    def down(self):
        if not os.path.isdir(self.run_dir):
            return []           # never started here
        return self.stop_services()
