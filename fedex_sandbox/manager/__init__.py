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
"""

import os

from oslo_config import cfg

from fedex_manager.conductor import jobboard
from fedex_manager.db import api as db
from fedex_manager import opts
from fedex_sandbox.manager import deploy
from fedex_sandbox.services import base as services_base
from lsrp import exception

SITES = ('site-a', 'site-b')
TERMINAL_OFFSETS = {'site-a': 300, 'site-b': 301}
DEVICES_PER_SITE = 3


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

    def services(self):
        d = self.dep
        out = [self._service('fedex-conductor',
                             os.path.join(d.work, 'conductor-1.conf'),
                             'fedex-conductor')]
        for site in SITES:
            out.append(self._service(
                'lsrp-agent-%s' % site,
                os.path.join(d.work, 'agent-%s.conf' % site), 'lsrp-agent'))
        return out

    def configure(self):
        # Heavy imports (SQLAlchemy, oslo.messaging) only when needed: a
        # second 'fedex-sandbox up' stays quick.
        from fedex_manager.actions import sites as site_actions
        from fedex_manager import context
        from fedex_manager.db import api as db
        d = self.dep
        d.db_sync()
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
        for site in SITES:
            wanted['agent-%s.conf' % site] = d.agent_conf(site)
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

    def up(self):
        # Configured once (schema, sites, slots): a second up is a no-op.
        if not self.configured():
            self.configure()
            with open(self.marker, 'w') as f:
                f.write('yes\n')
            changed = []
        else:
            # The mini-cloud came (or went): the conductor's [nova] and
            # [cinder] follow, and a running process takes its new config.
            changed = self.write_confs()
        result = {}
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
