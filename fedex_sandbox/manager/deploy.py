"""The manager's processes on one machine: conductors and terminal agents.

Used by ``fedex-sandbox`` (a conductor and one agent per terminal, one
terminal per site or ``--terminals-per-site N``) and by the functional
tests (two conductors, agents, ``kill -9``). It writes one
config file per process, makes the database schema (``fedex-manage db
sync``) and starts ``fedex-conductor`` and ``lsrp-agent`` as processes of
their own.

Isolation: each deployment has its own database, its own oslo.messaging
exchange (``control_exchange``) on the shared RabbitMQ and its own path on
the shared ZooKeeper, so several deployments (tests running in parallel,
the sandbox's own) never see each other's jobs or messages.
"""

import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pymysql

from lsrp import exception
from lsrp import tls

BIN = os.path.dirname(sys.executable)


def shared_endpoints(sandbox_root, start=True):
    """URLs of the sandbox's MariaDB, RabbitMQ and ZooKeeper.

    Started by the sandbox's own code (fedex_sandbox.services).
    """
    try:
        from fedex_sandbox.services import shared
    except ImportError:
        shared = None
    if shared is not None:
        services = shared.SharedServices.from_env(sandbox_root)
        if start:
            services.up()
        return services.endpoints()
    path = os.path.join(sandbox_root, 'services', 'endpoints.json')
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        raise exception.SandboxError(
            reason='no shared services (MariaDB, RabbitMQ, ZooKeeper) in %s:'
            ' run fedex-sandbox up' % sandbox_root)


def _ini(sections):
    out = []
    for section, values in sections.items():
        out.append('[%s]' % section)
        for k, v in values.items():
            if v is None:
                continue
            if isinstance(v, bool):
                v = 'true' if v else 'false'
            if isinstance(v, (list, tuple)):
                v = ','.join(str(x) for x in v)
            out.append('%s = %s' % (k, v))
        out.append('')
    return '\n'.join(out)


def terminal_suffix(site, n):
    """What the files of terminal ``n`` of ``site`` are named after."""
    return site if n == 1 else '%s-%d' % (site, n)


class Process(object):

    def __init__(self, name, argv, log):
        self.name, self.argv, self.log = name, argv, log
        self.proc = None

    def start(self):
        self.logf = open(self.log, 'ab')
        self.proc = subprocess.Popen(self.argv, stdout=self.logf,
                                     stderr=subprocess.STDOUT,
                                     start_new_session=True)
        return self

    @property
    def pid(self):
        return self.proc.pid if self.proc else None

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill9(self):
        """What a crash looks like: no cleanup, no goodbye.

        The whole process group, as a crashed host or systemd's kill of the
        unit: the daemons run under oslo.service, whose master process
        runs the service in a worker; a worker outliving its master would
        go on serving (and answering RPC) while it stops.
        """
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def stop(self, timeout=20):
        if not self.alive():
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill9()

    def tail(self, n=30):
        try:
            with open(self.log, errors='replace') as f:
                return ''.join(f.readlines()[-n:])
        except FileNotFoundError:
            return ''


class Deployment(object):
    """Config, database and processes of one manager on the sandbox."""

    def __init__(self, sandbox, endpoints, name, work_dir, lsrp_ports,
                 session_timeout=4, courier='simulated', timetable=None,
                 database='sqlite'):
        self.sb = sandbox
        self.endpoints = endpoints
        self.name = name
        self.work = os.path.abspath(work_dir)
        self.lsrp_ports = lsrp_ports        # {site: port}
        self.session_timeout = session_timeout
        self.courier = courier
        self.timetable = timetable or {'hand_over': 0, 'depart': 1,
                                       'deliver': 3}
        self.database = database
        # Who switches VMs over: 'none' (the final delta completes the
        # migration) or 'nova' with ``nova`` the [nova] auth section.
        self.compute_driver = 'none'
        self.nova = None
        # The [cinder] auth section when the migrations ship Cinder volumes.
        self.cinder = None
        # More [agent] and [conductor] options (e.g. device_capacity_mib).
        self.agent_options = {}
        self.conductor_options = {}
        # [conductor] return_devices: wiped devices sent home by the
        # courier. Off here unless asked (the sandbox and the round-trip
        # tests): the other tests look at devices where they were wiped.
        self.return_devices = False
        self.processes = {}
        # Small checkpoints: the tests kill terminals mid-export (the
        # benchmark sets the engine's default, as lsrp has).
        self.checkpoint_mib = 16
        os.makedirs(self.work, exist_ok=True)
        self.keys_dir = os.path.join(self.work, 'keys')
        # castellan's sections (a key manager such as the mini-cloud's
        # Barbican) per role: 'manager' and each site's terminal. None:
        # the file key store in keys_dir.
        self.key_manager = None

    # --- configuration -------------------------------------------------------

    @property
    def db_url(self):
        if self.database == 'mysql':
            return self.endpoints['database_url_template'].format(
                database=self.name.replace('-', '_'))
        # timeout: taskflow's engine on the same file waits for a writer.
        path = os.path.join(self.work, 'manager.sqlite')
        return 'sqlite:///%s?timeout=60' % path

    def _server_sql(self, statement):
        """Run one statement on the database server, outside any database."""
        url = self.endpoints['database_url_template']
        # mysql+pymysql://USER:PW@HOST:PORT/{database}
        creds, rest = url.split('//', 1)[1].split('@', 1)
        user, pw = creds.split(':', 1)
        host, port = rest.split('/', 1)[0].split(':')
        conn = pymysql.connect(host=host, port=int(port), user=user,
                               password=pw)
        try:
            with conn.cursor() as cur:
                cur.execute(statement)
        finally:
            conn.close()

    def create_database(self):
        if self.database == 'mysql':
            self._server_sql('CREATE DATABASE IF NOT EXISTS `%s` CHARACTER '
                             'SET utf8mb4' % self.name.replace('-', '_'))

    def drop_database(self):
        if self.database == 'mysql':
            self._server_sql('DROP DATABASE IF EXISTS `%s`'
                             % self.name.replace('-', '_'))

    def common(self, role='manager'):
        sections = {
            'DEFAULT': {'transport_url': self.endpoints['transport_url'],
                        'control_exchange': 'fedex-%s' % self.name,
                        'rpc_topic_prefix': 'fedex-%s' % self.name,
                        'debug': False},
            'shipment_keys': {'backend': 'file', 'key_dir': self.keys_dir},
        }
        if self.key_manager:
            sections['shipment_keys'] = {'backend': 'castellan'}
            sections.update(self.key_manager[role])
        return sections

    def manager_conf(self, conductor_name=None):
        sections = self.common()
        sections.update({
            'database': {'connection': self.db_url},
            'manager': {'state_path': os.path.join(self.work, 'manager')},
            'jobboard': {'hosts': self.endpoints['zookeeper_hosts'],
                         'path': '/fedex-%s/jobs' % self.name,
                         'session_timeout': self.session_timeout},
            'conductor': {'name': conductor_name, 'courier': self.courier,
                          'compute_driver': self.compute_driver,
                          'op_poll_interval': 1,
                          'sweep_interval': 2, 'op_timeout': 10,
                          # Nova's list of servers every 20 s, as before
                          # the look got its own option.
                          'server_check_interval': 20,
                          # A live migration Nova lost is said after 3
                          # minutes (10 by default): the sandbox's final
                          # deltas and checks of 1 GiB disks take seconds.
                          'nova_stall_seconds': 180,
                          'return_devices': self.return_devices,
                          **self.nova_notifications(),
                          **self.conductor_options},
            'simulated_courier': {
                'move_devices': True,
                'timetable': ','.join('%s:%s' % kv for kv in
                                      self.timetable.items()),
                'state_dir': os.path.join(self.work, 'courier')},
        })
        if self.nova:
            sections['nova'] = dict(self.nova)
        if self.cinder:
            sections['cinder'] = dict(self.cinder)
        return sections

    def nova_notifications(self):
        """[conductor] options of the listener of Nova's notifications.

        The mini-cloud's Nova sends versioned notifications on the shared
        RabbitMQ (services/confs.py), which is the manager's bus too: the
        conductor hears a server deleted during its migration at once.
        Each deployment listens in a pool of its own (its prefix's).
        """
        if self.compute_driver != 'nova':
            return {}
        return {'nova_notifications_topic': 'versioned_notifications',
                'nova_notifications_exchange': 'nova'}

    def write_conf(self, filename, sections):
        path = os.path.join(self.work, filename)
        with open(path, 'w') as f:
            f.write(_ini(sections))
        return path

    def terminal_name(self, site, n=1):
        """The name of terminal ``n`` (1, 2...) of ``site``.

        The sandbox's own for the first (``terminal-<site>``),
        ``terminal-<site>-<n>`` for the others.
        """
        return self.sb.terminal(site)[0] if n == 1 else \
            'terminal-%s-%d' % (site, n)

    def slots_dir(self, site, n=1):
        return os.path.join(self.work,
                            'slots-%s' % terminal_suffix(site, n))

    def extra_slots_dir(self, site, n):
        return self.slots_dir(site, n)

    def ensure_cert(self, site, n=1):
        """Terminal ``n``'s certificate, signed by the sandbox's CA.

        The first terminals' are made with the CA (``fedex-sandbox up``);
        the others' when first needed.
        """
        name = self.terminal_name(site, n)
        if not os.path.exists(os.path.join(self.sb.pki, name + '.pem')):
            tls.make_cert(self.sb.pki, name)

    def agent_conf(self, site, n=1, port=None):
        """lsrp-agent's config of terminal ``n`` of ``site``.

        Each terminal has its own name, certificate, LSRP ``port`` (the
        first's from ``lsrp_ports``), slots, state and key directories:
        two terminals never share a journal or a key store.
        """
        name = self.terminal_name(site, n)
        ca = os.path.join(self.sb.pki, 'ca.pem')
        cert = os.path.join(self.sb.pki, name + '.pem')
        key = os.path.join(self.sb.pki, name + '.key')
        s = self.sb.site(site)
        if port is None:
            port = self.lsrp_ports[site]
        tail = terminal_suffix(site, n)
        sections = self.common(site)
        sections.update({
            'agent': {'name': name, 'site': site,
                      'slots_dir': self.slots_dir(site, n),
                      'heartbeat_interval': 2,
                      'lsrp_address': self.lsrp_address(port),
                      **self.agent_options},
            'server': {'name': name, 'host': '127.0.0.1', 'port': port,
                       'tls_ca': ca, 'tls_cert': cert, 'tls_key': key,
                       'rbd_sink': True, 'resume_timeout': 30},
            'ceph': {'site_name': site, 'conf_file': s.conf,
                     'keyring': s.keyring},
            'shipment': {'state_dir': os.path.join(self.work,
                                                   'state-%s' % tail),
                         'key_dir': os.path.join(self.work,
                                                 'lsrp-keys-%s' % tail),
                         'checkpoint_mib': self.checkpoint_mib},
        })
        return sections

    def lsrp_address(self, port):
        """Where other terminals and the computes reach a terminal's port.

        With the sandbox's WAN on (the mini-cloud's, or ``fedex-sandbox
        wan-up``), its catch-up face: what crosses sites crosses the link.
        The terminal itself listens on loopback.
        """
        from fedex_sandbox import wan
        return wan.sandbox_lsrp_address(self.sb, port)

    # --- processes -------------------------------------------------------------

    def db_sync(self):
        self.create_database()
        conf = self.write_conf('manage.conf', self.manager_conf())
        out = subprocess.run([os.path.join(BIN, 'fedex-manage'),
                              '--config-file', conf, 'db', 'sync'],
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise exception.ManagerError(reason='fedex-manage db sync '
                                         'failed: %s' % out.stderr[-800:])
        return conf

    def make_slots(self, site, count, n=1):
        """Blank devices (directories) in a terminal's slots, up to count.

        Each has a serial of its own (its directory's name); the terminal's
        agent registers it at its next heartbeat, which makes this terminal
        (number ``n`` of ``site``) its home. Empty directories count:
        wiped devices back home are.
        """
        slots = self.slots_dir(site, n)
        os.makedirs(slots, exist_ok=True)
        serials = sorted(d for d in os.listdir(slots)
                         if not os.listdir(os.path.join(slots, d)))
        while len(serials) < count:
            serial = 'usb-%s-%s' % (terminal_suffix(site, n),
                                    uuid.uuid4().hex[:8])
            os.makedirs(os.path.join(slots, serial))
            serials.append(serial)
        return serials

    def start_conductor(self, name):
        conf = self.write_conf('%s.conf' % name, self.manager_conf(name))
        proc = Process(name, [os.path.join(BIN, 'fedex-conductor'),
                              '--config-file', conf],
                       os.path.join(self.work, '%s.log' % name)).start()
        self.processes[name] = proc
        return proc

    def start_agent(self, site, n=1, port=None):
        """lsrp-agent (and its lsrp-server) of terminal ``n`` of ``site``."""
        name = self.terminal_name(site, n)
        tail = terminal_suffix(site, n)
        os.makedirs(self.slots_dir(site, n), exist_ok=True)
        # The first terminal's as agent_conf(site): the soak runner wraps
        # that call to put site B's terminal behind its link.
        sections = self.agent_conf(site) if (n, port) == (1, None) else \
            self.agent_conf(site, n, port)
        conf = self.write_conf('agent-%s.conf' % tail, sections)
        proc = Process(name, [os.path.join(BIN, 'lsrp-agent'),
                              '--config-file', conf],
                       os.path.join(self.work, 'agent-%s.log' % tail)
                       ).start()
        self.processes[name] = proc
        return proc

    def start_extra_agent(self, site, n, port):
        """Terminal number ``n`` (2, 3...) of ``site``, on LSRP ``port``.

        Its own name (``terminal-<site>-<n>``), certificate, slots, state
        and key directories.
        """
        self.ensure_cert(site, n)
        return self.start_agent(site, n, port)

    def stop(self):
        for proc in self.processes.values():
            proc.stop()

    def wait(self, predicate, timeout, what, interval=0.5):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            for proc in self.processes.values():
                if proc.proc is not None and proc.proc.returncode not in (
                        None, -9) and not proc.alive():
                    raise exception.ManagerError(
                        reason='%s exited: %s' % (proc.name, proc.tail()))
            time.sleep(interval)
        raise exception.ManagerError(reason='timed out after %d s waiting '
                                     'for %s' % (timeout, what))
