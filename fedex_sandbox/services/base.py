"""A service process of the mini-cloud, tracked by a pid file we own.

Like the Ceph daemons (fedex_sandbox.processes), a service is stopped only
through the pid we recorded, and only while that process still looks like the
one we started: its kernel name (comm) and a marker (a path of our sandbox)
in its command line. Never anything found by name.
"""

from concurrent import futures
import errno
import os
import signal
import socket
import subprocess
import time

from oslo_log import log as logging

from fedex_sandbox import processes
from lsrp import exception

LOG = logging.getLogger(__name__)


def tcp_open(host, port, timeout=0.5):
    """True when something accepts a TCP connection at host:port."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def http_answers(url, timeout=5):
    """True when an HTTP server answers url with anything but a 5xx."""
    import urllib.error
    import urllib.request
    try:
        with urllib.request.urlopen(url, timeout=timeout):
            return True
    except urllib.error.HTTPError as e:
        return e.code < 500
    except (OSError, ValueError):
        return False


class Service(object):
    """One long-running process of the cloud.

    :param name: the name users see (``mariadb``, ``nova-api``).
    :param argv: the command; argv[0] an absolute path.
    :param comm: the kernel's name of the process once running (its comm,
        at most 15 characters), when it is not argv[0]'s base name; or a
        tuple of the names it goes through while it starts (a wrapper that
        execs the service).
    :param marker: a string that our process's command line contains.
    :param ready: a callable returning True once the service answers;
        default: ``port`` accepts connections on ``host``.
    :param env: extra environment variables.
    :param stop_timeout: seconds between SIGTERM and SIGKILL.
    :param stop_argv: a command that stops the service instead of SIGTERM.
    """

    def __init__(self, name, argv, run_dir, log_dir, marker, comm=None,
                 host='127.0.0.1', port=None, ready=None, env=None,
                 log_file=None, stop_timeout=15, stop_argv=None,
                 start_timeout=60, extra_pids=None, kill_descendants=False,
                 stop_group=None):
        self.name = name
        self.argv = argv
        comms = comm if isinstance(comm, tuple) else (
            comm or os.path.basename(argv[0]),)
        self.comms = tuple(c[:15] for c in comms)
        self.marker = marker
        self.host = host
        self.port = port
        self._ready = ready
        self.env = env or {}
        self.pidfile = os.path.join(run_dir, '%s.pid' % name)
        self.out_file = os.path.join(log_dir, '%s.out' % name)
        self.log_file = log_file or self.out_file
        self.stop_timeout = stop_timeout
        self.stop_argv = stop_argv
        self.start_timeout = start_timeout
        # Callables returning more pids of ours to stop after the main one
        # (RabbitMQ's epmd outlives its node).
        self.extra_pids = extra_pids or []
        # Children that may outlive the main process (uWSGI workers,
        # privsep daemons, cinder-volume's per-backend children).
        self.kill_descendants = kill_descendants
        # Services of one group (the computes of every host) are stopped
        # together: each may take its whole stop_timeout.
        self.stop_group = stop_group

    def __repr__(self):
        return '<Service %s>' % self.name

    # --- identity ----------------------------------------------------------

    def recorded_pid(self):
        try:
            with open(self.pidfile) as f:
                return int(f.read().strip())
        except (FileNotFoundError, ValueError):
            return None

    def is_ours(self, pid):
        cmdline = processes.read_cmdline(pid)
        if cmdline is None:
            return False
        # setproctitle (nova's services) turns "nova-conductor" into
        # "nova-conductor: master process [...]", comm included.
        if not (processes.read_comm(pid) or '\0').startswith(self.comms):
            return False
        if self.marker in ' '.join(cmdline):
            return True
        # A wrapper script whose command line names nothing of ours
        # (rabbitmq-server) is recognised by the environment we gave it.
        try:
            with open('/proc/%d/environ' % pid, 'rb') as f:
                return self.marker.encode() in f.read()
        except OSError:
            return False

    def pid(self):
        """The pid of our running process, or None."""
        pid = self.recorded_pid()
        if pid is None:
            return None
        child = processes._CHILDREN.get(pid)
        if child is not None and child.poll() is not None:
            del processes._CHILDREN[pid]
            return None
        return pid if self.is_ours(pid) else None

    # --- life cycle ----------------------------------------------------------

    def ready(self):
        if self._ready is not None:
            return self._ready()
        return self.port is None or tcp_open(self.host, self.port)

    def start(self):
        """Start the process detached from our session; record its pid."""
        os.makedirs(os.path.dirname(self.pidfile), exist_ok=True)
        os.makedirs(os.path.dirname(self.out_file), exist_ok=True)
        env = dict(os.environ)
        env.update(self.env)
        with open(self.out_file, 'ab') as out:
            out.write(('--- %s: %s\n' % (time.strftime('%F %T'),
                                         ' '.join(self.argv))).encode())
            out.flush()
            proc = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
                close_fds=True, env=env, cwd='/')
        processes._CHILDREN[proc.pid] = proc
        tmp = self.pidfile + '.tmp'
        with open(tmp, 'w') as f:
            f.write('%d\n' % proc.pid)
        os.replace(tmp, self.pidfile)
        self._wait_exec(proc)
        LOG.debug('%s: started as pid %d', self.name, proc.pid)
        return proc.pid

    def _wait_exec(self, proc, timeout=5):
        """Wait until the new process shows its own name and arguments.

        Popen returns once exec has closed our error pipe, which the kernel
        does before it sets the new name and lays out the new arguments:
        on a loaded machine /proc then shows an empty command line for a
        moment, and pid() took a process that had just started for gone
        (seen in CI). Returns early if the process exits.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            if processes.read_cmdline(proc.pid):
                return
            time.sleep(0.01)

    def tail(self):
        paths = [self.out_file]
        if self.log_file != self.out_file:
            paths.append(self.log_file)
        return processes.log_tail(paths)

    def failed(self, reason):
        return exception.ServiceFailed(service=self.name, reason=reason,
                                       log=self.log_file, tail=self.tail())

    def wait_ready(self, deadline=None):
        """Wait until the service answers; fail at once if it exits."""
        if deadline is None:
            deadline = time.monotonic() + self.start_timeout
        while True:
            if self.pid() is None and not self._still_there():
                raise self.failed('exited while starting')
            if self.ready():
                return
            if time.monotonic() > deadline:
                raise self.failed('did not answer within %d s%s' % (
                    self.start_timeout,
                    ' on %s:%d' % (self.host, self.port) if self.port else ''))
            time.sleep(0.2)

    def _still_there(self):
        """Our recorded process runs although pid() said no.

        Seen at a first ``up`` (MariaDB, Keystone's uWSGI, also on an
        idle machine): pid() answered None while the process ran and went
        on to serve, which stopped ``up``. Trust /proc over the Popen
        bookkeeping and the name checks then: only a process that is gone
        (or a zombie) for a whole second has exited.
        """
        pid = self.recorded_pid()
        if pid is None:
            return False
        for _ in range(5):
            if processes.read_cmdline(pid) is not None:
                if not getattr(self, '_warned_still_there', False):
                    LOG.warning('%s: pid %d runs although its start looked '
                                'failed; waiting for it', self.name, pid)
                    self._warned_still_there = True
                return True
            time.sleep(0.25)
        return False

    def ensure_port_free(self):
        """Raise ServiceFailed naming the holder when our port is taken."""
        if self.port is None or not tcp_open(self.host, self.port):
            return
        holder = processes.listening_pid(self.port)
        raise exception.ServiceFailed(
            service=self.name,
            reason='cannot start: %s:%d is taken by pid %s (%s)' % (
                self.host, self.port, holder,
                ' '.join(processes.read_cmdline(holder) or ['?'])[:120]
                if holder else '?'),
            log=self.log_file, tail='')

    def ensure(self):
        """Start unless running; wait until ready. True if it was started."""
        if self.pid() is not None:
            self.wait_ready()
            return False
        self.ensure_port_free()
        self.start()
        self.wait_ready()
        return True

    def stop(self):
        """Stop our process (and its extra pids). Returns the pid or None."""
        pid = self.pid()
        extra = [p for fn in self.extra_pids for p in fn() if p]
        kids = descendants(pid) if pid and self.kill_descendants else []
        if pid is not None:
            if self.stop_argv:
                subprocess.run(self.stop_argv, env=dict(os.environ, **self.env),
                               capture_output=True, timeout=60)
            else:
                self._signal(pid, signal.SIGTERM)
            self._wait_gone(pid)
        for other in extra:
            self._signal(other, signal.SIGTERM)
            self._wait_gone(other, check=lambda p: processes.read_cmdline(p))
        for kid in kids:
            if processes.read_cmdline(kid) is not None:
                self._signal(kid, signal.SIGKILL)
        try:
            os.unlink(self.pidfile)
        except FileNotFoundError:
            pass
        return pid

    def _wait_gone(self, pid, check=None):
        alive = check or self.is_ours
        deadline = time.monotonic() + self.stop_timeout
        while alive(pid):
            if time.monotonic() > deadline:
                LOG.warning('%s (pid %d) ignored SIGTERM for %d s; killing',
                            self.name, pid, self.stop_timeout)
                self._signal(pid, signal.SIGKILL)
                deadline = time.monotonic() + 30
            time.sleep(0.05)
        child = processes._CHILDREN.pop(pid, None)
        if child is not None:
            child.wait()

    @staticmethod
    def _signal(pid, sig):
        try:
            os.kill(pid, sig)
        except OSError as e:
            if e.errno != errno.ESRCH:
                raise

    def status(self):
        pid = self.pid()
        return {'name': self.name, 'pid': pid,
                'state': 'running' if pid else 'down',
                'port': self.port, 'log': self.log_file,
                'rss_mib': rss_mib(pid) if pid else None}


def rss_mib(pid):
    """Resident memory of a process and its descendants, MiB."""
    total = 0
    for p in [pid] + descendants(pid):
        try:
            with open('/proc/%d/status' % p) as f:
                for line in f:
                    if line.startswith('VmRSS:'):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total // 1024


def descendants(pid):
    """All descendant pids of pid (through /proc/*/task/*/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            for task in os.listdir('/proc/%d/task' % p):
                with open('/proc/%d/task/%s/children' % (p, task)) as f:
                    kids = [int(k) for k in f.read().split()]
                out.extend(kids)
                todo.extend(kids)
        except OSError:
            continue
    return out


class ServiceSet(object):
    """Services started in the order services() lists them, stopped in reverse."""

    def services(self):
        raise NotImplementedError

    def stop_services(self):
        """Stop in reverse order; returns [(name, pid)] of those stopped."""
        batches = []
        for svc in reversed(self.services()):
            if batches and svc.stop_group is not None and \
                    batches[-1][0].stop_group == svc.stop_group:
                batches[-1].append(svc)
            else:
                batches.append([svc])
        stopped = []
        for batch in batches:
            if len(batch) == 1:
                pids = [batch[0].stop()]
            else:
                with futures.ThreadPoolExecutor(len(batch)) as pool:
                    pids = list(pool.map(lambda svc: svc.stop(), batch))
            stopped += [(svc.name, pid) for svc, pid in zip(batch, pids)
                        if pid]
        return stopped

    def status(self):
        return [svc.status() for svc in self.services()]
