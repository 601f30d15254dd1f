"""The shared services: MariaDB, RabbitMQ, ZooKeeper.

Started by every ``fedex-sandbox up`` (the manager needs a database, a message
bus and a jobboard even without OpenStack), each as root on its own ports of
the sandbox and with all of its state under ``<sandbox>/services/``::

    services/secrets.json   passwords made at creation
    services/endpoints.json what clients need (also: SharedServices below)
    services/mariadb/  rabbitmq/  zookeeper/   data and configuration
    services/run/ (pid files)   services/log/

Other code gets its URLs from :class:`SharedServices`::

    shared = SharedServices.from_env()
    shared.transport_url()         # rabbit://os:...@127.0.0.1:<+201>/
    shared.database_url('fedex')   # mysql+pymysql://os:...@127.0.0.1:<+200>/fedex
    shared.zookeeper_hosts()       # 127.0.0.1:<+204>
"""

import json
import os
import secrets
import shutil
import socket
import subprocess

from oslo_log import log as logging

from fedex_sandbox import opts as opts_mod
from fedex_sandbox.services import base
from fedex_sandbox.services import ports
from lsrp import exception

LOG = logging.getLogger(__name__)

DB_USER = 'os'
MQ_USER = 'os'

# Programs the shared services need and the Debian package of each.
PROGRAMS = {
    '/usr/sbin/mariadbd': 'mariadb-server',
    '/usr/bin/mariadb-install-db': 'mariadb-server',
    '/usr/lib/rabbitmq/bin/rabbitmq-server': 'rabbitmq-server',
    '/usr/share/java/zookeeper.jar': 'zookeeper',
    '/usr/bin/java': 'default-jre-headless',
}

MY_CNF = """\
# Written by fedex-sandbox. The sandbox's own MariaDB: no systemd, root user.
[client]
socket = {dir}/mysqld.sock
port = {port}

[mysqld]
datadir = {dir}/data
socket = {dir}/mysqld.sock
pid-file = {dir}/mysqld.pid
port = {port}
bind-address = 127.0.0.1
skip-name-resolve
user = root
log-error = {log}
skip-log-bin
innodb_buffer_pool_size = 64M
max_connections = 500
performance_schema = OFF
# A sandbox database: the schema syncs of the mini-cloud create ~1000 tables,
# each a file and fsyncs otherwise (nova's sync took 8 minutes under load).
# Safe against a crash of mariadbd, not of the machine.
innodb_file_per_table = OFF
innodb_flush_log_at_trx_commit = 2
innodb_doublewrite = 0
sync_binlog = 0
"""

RABBITMQ_CONF = """\
# Written by fedex-sandbox. A bare port would bind every address.
listeners.tcp.default = 127.0.0.1:{port}
loopback_users = none
# Made on the node's first boot: no rabbitmqctl round trips (seconds each).
default_user = {user}
default_pass = {password}
default_vhost = /
default_permissions.configure = .*
default_permissions.read = .*
default_permissions.write = .*
"""

ZOO_CFG = """\
# Written by fedex-sandbox: a standalone ZooKeeper on loopback.
tickTime=2000
dataDir={dir}/data
clientPort={port}
clientPortAddress=127.0.0.1
maxClientCnxns=200
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,mntr
"""

LOG4J = """\
log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1}: %m%n
"""


def check_programs():
    for path, package in sorted(PROGRAMS.items()):
        if not os.path.exists(path):
            raise exception.PackageMissing(program=path, package=package)


def _zk_ruok(port):
    try:
        with socket.create_connection(('127.0.0.1', port), timeout=1) as s:
            s.sendall(b'ruok')
            return s.recv(16) == b'imok'
    except OSError:
        return False


class SharedServices(base.ServiceSet):
    """MariaDB, RabbitMQ and ZooKeeper of one sandbox."""

    def __init__(self, root, base_port, start_timeout=180):
        self.root = os.path.abspath(root)
        self.base_port = base_port
        # A busy machine's RabbitMQ (Erlang's boot) can take more than a
        # minute; a daemon that exits is reported at once whatever this is.
        self.start_timeout = start_timeout
        self.dir = os.path.join(self.root, 'services')
        self.run_dir = os.path.join(self.dir, 'run')
        self.log_dir = os.path.join(self.dir, 'log')
        self.secrets_file = os.path.join(self.dir, 'secrets.json')
        self.endpoints_file = os.path.join(self.dir, 'endpoints.json')

    @classmethod
    def from_env(cls, root=None, base_port=None):
        """The shared services of the sandbox the environment names.

        ``FEDEX_SANDBOX_DIR`` and ``FEDEX_SANDBOX_BASE_PORT`` (else the port
        the directory was created with), as ``fedex-sandbox`` itself does.
        """
        root = root or os.environ.get(opts_mod.DIR_ENV,
                                      opts_mod.DEFAULT_DIR)
        if base_port is None:
            base_port = opts_mod.remembered_base_port(root)
        return cls(root, base_port)

    def port(self, name):
        return self.base_port + ports.offset(name)

    # --- secrets and URLs ------------------------------------------------

    def secrets(self):
        """Passwords of this sandbox, made once and kept in secrets.json."""
        try:
            with open(self.secrets_file) as f:
                return json.load(f)
        except FileNotFoundError:
            pass
        os.makedirs(self.dir, exist_ok=True)
        values = {k: secrets.token_hex(12) for k in
                  ('database', 'rabbitmq', 'admin', 'service', 'demo')}
        tmp = self.secrets_file + '.tmp'
        with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                          0o600), 'w') as f:
            json.dump(values, f, indent=2)
        os.replace(tmp, self.secrets_file)
        return values

    def transport_url(self, vhost=''):
        """oslo.messaging URL of the sandbox's RabbitMQ."""
        return 'rabbit://%s:%s@127.0.0.1:%d/%s' % (
            MQ_USER, self.secrets()['rabbitmq'], self.port('rabbitmq'),
            vhost)

    def database_url(self, database):
        """SQLAlchemy URL of a database (see create_database)."""
        return 'mysql+pymysql://%s:%s@127.0.0.1:%d/%s' % (
            DB_USER, self.secrets()['database'], self.port('mariadb'),
            database)

    def zookeeper_hosts(self):
        """ZooKeeper's ``host:port`` list (kazoo, tooz, taskflow)."""
        return '127.0.0.1:%d' % self.port('zookeeper')

    def endpoints(self):
        return {'transport_url': self.transport_url(),
                'database_url_template': self.database_url('{database}'),
                'zookeeper_hosts': self.zookeeper_hosts(),
                'mariadb_port': self.port('mariadb'),
                'rabbitmq_port': self.port('rabbitmq'),
                'zookeeper_port': self.port('zookeeper')}

    # --- the processes ---------------------------------------------------

    def _dir(self, name):
        return os.path.join(self.dir, name)

    def _log(self, name):
        return os.path.join(self.log_dir, name + '.log')

    def mariadb(self):
        cnf = os.path.join(self._dir('mariadb'), 'my.cnf')
        return base.Service(
            'mariadb', ['/usr/sbin/mariadbd', '--defaults-file=' + cnf],
            self.run_dir, self.log_dir, marker=cnf,
            port=self.port('mariadb'), log_file=self._log('mariadb'),
            stop_timeout=30, start_timeout=self.start_timeout)

    def _rabbit_env(self):
        d = self._dir('rabbitmq')
        return {
            'HOME': d,
            'RABBITMQ_NODENAME': 'fedex%d@localhost' % self.base_port,
            'RABBITMQ_NODE_IP_ADDRESS': '127.0.0.1',
            'RABBITMQ_NODE_PORT': str(self.port('rabbitmq')),
            'RABBITMQ_DIST_PORT': str(self.port('rabbitmq-dist')),
            'ERL_EPMD_PORT': str(self.port('epmd')),
            'ERL_EPMD_ADDRESS': '127.0.0.1',
            'RABBITMQ_MNESIA_BASE': os.path.join(d, 'mnesia'),
            'RABBITMQ_LOG_BASE': self.log_dir,
            'RABBITMQ_PID_FILE': os.path.join(d, 'rabbitmq.pid'),
            'RABBITMQ_ENABLED_PLUGINS_FILE': os.path.join(d, 'enabled_plugins'),
            'RABBITMQ_CONFIG_FILE': os.path.join(d, 'rabbitmq'),
            'RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS':
                '-kernel inet_dist_use_interface {127,0,0,1}',
        }

    def _epmd_pids(self):
        pid = base.processes.listening_pid(self.port('epmd'))
        if pid and 'epmd' in ' '.join(base.processes.read_cmdline(pid) or []):
            return [pid]
        return []

    def rabbitmq(self):
        d = self._dir('rabbitmq')
        env = self._rabbit_env()
        return base.Service(
            'rabbitmq', ['/usr/lib/rabbitmq/bin/rabbitmq-server'],
            self.run_dir, self.log_dir, comm='rabbitmq-server', marker=d,
            port=self.port('rabbitmq'), env=env,
            log_file=os.path.join(self.log_dir, env['RABBITMQ_NODENAME']
                                  + '.log'),
            stop_timeout=30, start_timeout=self.start_timeout,
            extra_pids=[self._epmd_pids])

    def zookeeper(self):
        d = self._dir('zookeeper')
        # zookeeper.jar's manifest names the jars it needs; our directory
        # holds log4j.properties (log to stdout, i.e. zookeeper.out).
        jars = [d, '/usr/share/java/zookeeper.jar']
        cfg = os.path.join(d, 'zoo.cfg')
        return base.Service(
            'zookeeper',
            ['/usr/bin/java', '-Xmx128m', '-XX:+UseSerialGC',
             '-cp', ':'.join(jars),
             'org.apache.zookeeper.server.quorum.QuorumPeerMain', cfg],
            self.run_dir, self.log_dir, marker=cfg,
            port=self.port('zookeeper'), start_timeout=self.start_timeout,
            ready=lambda: _zk_ruok(self.port('zookeeper')))

    def services(self):
        return [self.mariadb(), self.rabbitmq(), self.zookeeper()]

    # --- set-up ----------------------------------------------------------

    def _write(self, path, text):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path + '.tmp', 'w') as f:
            f.write(text)
        os.replace(path + '.tmp', path)

    def _configure(self):
        for sub in ('run', 'log', 'mariadb', 'rabbitmq', 'zookeeper/data'):
            os.makedirs(os.path.join(self.dir, sub), exist_ok=True)
        self._write(os.path.join(self._dir('mariadb'), 'my.cnf'),
                    MY_CNF.format(dir=self._dir('mariadb'),
                                  port=self.port('mariadb'),
                                  log=self._log('mariadb')))
        d = self._dir('rabbitmq')
        self._write(os.path.join(d, 'rabbitmq.conf'),
                    RABBITMQ_CONF.format(port=self.port('rabbitmq'),
                                         user=MQ_USER,
                                         password=self.secrets()['rabbitmq']))
        self._write(os.path.join(d, 'enabled_plugins'), '[].\n')
        self._write(os.path.join(self._dir('zookeeper'), 'log4j.properties'),
                    LOG4J)
        self._write(os.path.join(self._dir('zookeeper'), 'zoo.cfg'),
                    ZOO_CFG.format(dir=self._dir('zookeeper'),
                                   port=self.port('zookeeper')))

    def _run(self, service, argv, env=None, input=None, timeout=120):
        proc = subprocess.run(argv, input=input, capture_output=True,
                              text=True, timeout=timeout,
                              env=dict(os.environ, **(env or {})))
        if proc.returncode != 0:
            raise exception.ServiceFailed(
                service=service, reason='"%s" failed (exit %d): %s' % (
                    ' '.join(argv[:4]), proc.returncode,
                    (proc.stderr or proc.stdout).strip()[-600:]),
                log=self._log(service), tail='')
        return proc.stdout

    def _mariadb_install(self):
        d = self._dir('mariadb')
        if os.path.exists(os.path.join(d, 'data', 'mysql')):
            return
        shutil.rmtree(os.path.join(d, 'data'), ignore_errors=True)
        self._run('mariadb', [
            '/usr/bin/mariadb-install-db',
            '--defaults-file=' + os.path.join(d, 'my.cnf'),
            '--auth-root-authentication-method=normal',
            '--skip-test-db'])

    def sql(self, statements):
        """Run SQL as MariaDB's root through the sandbox's socket."""
        cnf = os.path.join(self._dir('mariadb'), 'my.cnf')
        return self._run('mariadb', ['mariadb', '--defaults-file=' + cnf,
                                     '-uroot', '--batch'], input=statements)

    def create_database(self, name):
        """Create a database (if missing) that database_url(name) opens."""
        self.sql('CREATE DATABASE IF NOT EXISTS `%s` CHARACTER SET utf8mb4;'
                 % name.replace('`', ''))

    def _mariadb_user(self):
        pw = self.secrets()['database']
        self.sql("CREATE USER IF NOT EXISTS '{u}'@'127.0.0.1' IDENTIFIED BY "
                 "'{p}'; ALTER USER '{u}'@'127.0.0.1' IDENTIFIED BY '{p}'; "
                 "GRANT ALL PRIVILEGES ON *.* TO '{u}'@'127.0.0.1' WITH "
                 "GRANT OPTION; FLUSH PRIVILEGES;".format(u=DB_USER, p=pw))

    def rabbitmqctl(self, *args, timeout=60):
        return self._run('rabbitmq', ['/usr/lib/rabbitmq/bin/rabbitmqctl']
                         + list(args), env=self._rabbit_env(),
                         timeout=timeout)

    def up(self):
        """Start what is not running; returns {service: 'started'|'running'}."""
        check_programs()
        self.secrets()
        self._configure()
        self._mariadb_install()
        result = {}
        mariadb, rabbitmq, zookeeper = self.services()
        # RabbitMQ takes ~7 s to boot: start all three, then wait.
        started = []
        for svc in (mariadb, rabbitmq, zookeeper):
            if svc.pid() is None:
                svc.ensure_port_free()
                svc.start()
                started.append(svc.name)
        for svc in (mariadb, rabbitmq, zookeeper):
            svc.wait_ready()
            result[svc.name] = 'started' if svc.name in started else 'running'
        self._mariadb_user()
        self._write(self.endpoints_file,
                    json.dumps(self.endpoints(), indent=2) + '\n')
        return result

    def down(self):
        """Stop in reverse order; returns [(name, pid)] of those stopped."""
        return self.stop_services()

    def destroy(self):
        self.down()
        shutil.rmtree(self.dir, ignore_errors=True)
