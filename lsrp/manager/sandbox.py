"""The manager in ``fedex-sandbox``: a conductor and one agent per site.

``fedex-sandbox up`` starts them after the Ceph sites and the shared
services (MariaDB: the manager's database ``sandbox``; RabbitMQ;
ZooKeeper), ``down`` stops them, ``status`` lists them. (SQLite, the
embedded default, said 'database is locked' to the demo on a loaded
machine: the demo, the conductor and taskflow write at once.) Their files
live in ``<sandbox>/manager``: configs, logs, pid files, the key
directory, the device slots of each terminal
(``slots-site-a/<serial>``: directories standing in for USB disks).
"""

import os

from lsrp import exception
from lsrp.manager import deploy
from lsrp.sandbox.services import base as services_base

SITES = ('site-a', 'site-b')
TERMINAL_OFFSETS = {'site-a': 300, 'site-b': 301}
DEVICES_PER_SITE = 3


class SandboxManager(object):

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
        return self._dep

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
        from lsrp.manager import actions
        from lsrp.manager import context
        from lsrp.manager.db import api as db
        d = self.dep
        d.db_sync()
        d.write_conf('conductor-1.conf', d.manager_conf('conductor-1'))
        for site in SITES:
            d.write_conf('agent-%s.conf' % site, d.agent_conf(site))
        db.configure(d.db_url)
        ctx = context.admin('fedex-sandbox')
        for site in SITES:
            try:
                db.get(ctx, 'site', site)
            except exception.NotFound:
                s = self.sb.site(site)
                actions.site_register(ctx, site, ceph_conf=s.conf,
                                      ceph_keyring=s.keyring)
        d.make_slots('site-a', DEVICES_PER_SITE)
        os.makedirs(d.slots_dir('site-b'), exist_ok=True)

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
        result = {}
        for svc in self.services():
            if svc.pid() is None:
                svc.start()
                result[svc.name] = 'started'
            else:
                result[svc.name] = 'running'
        return result

    def down(self):
        if not os.path.isdir(self.run_dir):
            return []           # never started here
        stopped = []
        for svc in reversed(self.services()):
            pid = svc.stop()
            if pid:
                stopped.append((svc.name, pid))
        return stopped

    def status(self):
        return [svc.status() for svc in self.services()]
