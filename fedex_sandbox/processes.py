"""Daemons started by the sandbox, tracked by pid files we own.

We stop only processes whose pid we recorded *and* whose command line is still
the one we started (binary and our conf path): never anything found by name.
"""

import errno
import os
import signal
import subprocess
import time

from oslo_log import log as logging

from lsrp import exception
from lsrp import fileutils

LOG = logging.getLogger(__name__)

# Popen objects of daemons started by this process, so that we can reap them
# when this process also stops them (tests do `up; down; up` in one process).
_CHILDREN = {}


def read_cmdline(pid):
    """Return the argv of a live, non-zombie process, or None."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            # The state follows the parenthesised command name.
            state = f.read().rsplit(')', 1)[1].split()[0]
        if state in ('Z', 'X'):
            return None
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            raw = f.read()
    except (OSError, IndexError):
        return None
    return [a.decode(errors='replace') for a in raw.split(b'\0') if a]


def read_comm(pid):
    """The kernel's name for a process (kept while it exits), or None."""
    try:
        with open('/proc/%d/comm' % pid) as f:
            return f.read().strip()
    except OSError:
        return None


def listening_pid(port):
    """Best effort: the pid of a process listening on a TCP port, or None."""
    inodes = set()
    for table in ('/proc/net/tcp', '/proc/net/tcp6'):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    local, state, inode = fields[1], fields[3], fields[9]
                    if state == '0A' and int(local.rsplit(':', 1)[1], 16) == port:
                        inodes.add('socket:[%s]' % inode)
        except OSError:
            continue
    if not inodes:
        return None
    for pid in filter(str.isdigit, os.listdir('/proc')):
        try:
            fds = os.listdir('/proc/%s/fd' % pid)
            for fd in fds:
                if os.readlink('/proc/%s/fd/%s' % (pid, fd)) in inodes:
                    return int(pid)
        except OSError:
            continue
    return None


def log_tail(paths, lines=12, window=16384):
    """The last non-empty lines of each existing file, for error messages.

    Only the last ``window`` bytes of each file are read.
    """
    out = []
    for path in paths:
        try:
            with open(path, 'rb') as f:
                f.seek(0, os.SEEK_END)
                f.seek(max(0, f.tell() - window))
                text = f.read().decode(errors='replace').splitlines()
        except OSError:
            continue
        interesting = [t for t in text if t.strip()][-lines:]
        if interesting:
            out.append('%s:\n    %s' % (path, '\n    '.join(interesting)))
    return ('\n  last lines of ' + '\n  '.join(out)) if out else ''


class Daemon(object):
    """One Ceph daemon of a sandbox site (mon.a, mgr.x, osd.0)."""

    def __init__(self, site, name, argv, conf, run_dir, log_file):
        self.site = site
        self.name = name
        self.argv = argv
        self.binary = os.path.basename(argv[0])
        self.conf = conf
        self.pidfile = os.path.join(run_dir, '%s.pid' % name)
        self.log_file = log_file
        # stdout/stderr of the daemon: what it says before its log is open.
        self.out_file = log_file[:-len('.log')] + '.out'

    def recorded_pid(self):
        try:
            with open(self.pidfile) as f:
                return int(f.read().strip())
        except FileNotFoundError:
            return None
        except ValueError:
            return None

    def _is_ours(self, pid, cmdline):
        # The kernel truncates comm to 15 characters.
        if read_comm(pid) != self.binary[:15]:
            return False
        # NOTE: a process that is exiting has already lost its command line;
        # its comm still says what it is.
        return not cmdline or (os.path.basename(cmdline[0]) == self.binary
                               and self.conf in cmdline)

    def pid(self):
        """The pid of our running daemon, or None if it is not running.

        Raises NotOurProcess when the pid file names a live process that is
        not the daemon we started.
        """
        pid = self.recorded_pid()
        if pid is None:
            return None
        child = _CHILDREN.get(pid)
        if child is not None and child.poll() is not None:
            del _CHILDREN[pid]
            return None
        cmdline = read_cmdline(pid)
        if cmdline is None:
            return None
        if not self._is_ours(pid, cmdline):
            raise exception.NotOurProcess(
                site=self.site, pidfile=self.pidfile, pid=pid,
                daemon=self.name, cmdline=' '.join(cmdline)[:200])
        return pid

    def log_tail(self, lines=8):
        """The last lines of the daemon's output and log, for error messages."""
        return log_tail((self.out_file, self.log_file), lines, window=8192)

    def start(self):
        """Start the daemon in the foreground mode, detached from our session."""
        with open(self.out_file, 'ab') as out:
            proc = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=out,
                stderr=subprocess.STDOUT, start_new_session=True,
                close_fds=True)
        _CHILDREN[proc.pid] = proc
        fileutils.write_atomic(self.pidfile, '%d\n' % proc.pid)
        LOG.debug('%s: started %s as pid %d', self.site, self.name, proc.pid)
        return proc.pid

    def check_alive(self):
        """Raise DaemonFailed if the daemon we started has exited."""
        if self.pid() is None:
            raise exception.DaemonFailed(
                site=self.site, daemon=self.name, reason='exited',
                log=self.log_file, tail=self.log_tail())

    def stop(self, timeout=30):
        """SIGTERM our daemon, SIGKILL it after ``timeout`` s; drop the pid file.

        Returns the pid that was stopped, or None if it was not running.
        """
        try:
            pid = self.pid()
        except exception.NotOurProcess:
            # NOTE: the pid was reused by a foreign process: our daemon is
            # gone. Forget the stale pid file but never signal that process.
            LOG.warning('%s: %s pid file %s names a process that is not ours; '
                        'removing the stale pid file only',
                        self.site, self.name, self.pidfile)
            self._remove_pidfile()
            raise
        if pid is None:
            self._remove_pidfile()
            return None
        self._signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while self.pid() is not None:
            if time.monotonic() > deadline:
                LOG.warning('%s: %s (pid %d) ignored SIGTERM for %d s; killing',
                            self.site, self.name, pid, timeout)
                self._signal(pid, signal.SIGKILL)
                deadline = time.monotonic() + timeout
            time.sleep(0.05)
        child = _CHILDREN.pop(pid, None)
        if child is not None:
            child.wait()
        self._remove_pidfile()
        return pid

    @staticmethod
    def _signal(pid, sig):
        try:
            os.kill(pid, sig)
        except OSError as e:
            if e.errno != errno.ESRCH:
                raise

    def _remove_pidfile(self):
        try:
            os.unlink(self.pidfile)
        except FileNotFoundError:
            pass
