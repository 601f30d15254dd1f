"""The fault catalogue: one small class per kind, ``inject`` and ``recover``.

``recover`` is what an operator's supervisor does: systemd restarts a
killed daemon after its RestartSec, a stopped OSD is started again, the
WAN comes back. A user's act (the server deleted, stopped, its volume
detached, the migration aborted) has nothing to recover.

Every process is found through the pid files the sandbox and the
deployment keep (never by name across the machine; a host's libvirtd is
the one among its init's descendants), and killed with SIGKILL: a crash,
no goodbye.
"""

import os
import signal
import subprocess
import time

from fedex_sandbox.services import base as services_base
from lsrp import exception


def _kill9(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class Fault(object):
    """One fault, aimed at ``target`` (the soak's record of a migration)."""

    kind = None

    def __init__(self, env, target):
        self.env = env
        self.target = target

    def inject(self):
        """Break something; returns a note for the report."""
        raise NotImplementedError

    def recover(self):
        """What the supervisor does afterwards."""

    def healthy(self):
        """True once what broke works again (recovery is timed to it)."""
        return True


# --- the manager's own processes -------------------------------------------

class KillConductor(Fault):
    kind = 'kill-conductor'

    def inject(self):
        proc = self.env.dep.processes[self.env.conductor_name]
        pid = proc.pid
        proc.kill9()
        return 'conductor pid %d' % pid

    def recover(self):
        self.env.dep.start_conductor(self.env.conductor_name)

    def healthy(self):
        return self.env.dep.processes[self.env.conductor_name].alive()


class KillTerminal(Fault):
    site = None

    def inject(self):
        name = self.env.sandbox.terminal(self.site)[0]
        proc = self.env.dep.processes[name]
        pid = proc.pid
        self.env.terminal_killed(self.site)
        proc.kill9()
        return '%s pid %d' % (name, pid)

    def recover(self):
        self.env.start_agent(self.site)

    def healthy(self):
        return self.env.terminals_up()


class KillTerminalA(KillTerminal):
    kind = 'kill-terminal-site-a'
    site = 'site-a'


class KillTerminalB(KillTerminal):
    kind = 'kill-terminal-site-b'
    site = 'site-b'


# --- the compute hosts -------------------------------------------------------

class _HostFault(Fault):
    end = None      # 'source' or 'dest'

    @property
    def host(self):
        name = self.target.source_host if self.end == 'source' \
            else self.target.dest_host
        return [h for h in self.env.cloud.hosts if h.name == name][0]


class KillNovaCompute(_HostFault):

    def _service(self):
        h = self.host
        return h.nova_compute(h.init_pid())

    def inject(self):
        svc = self._service()
        pid = svc.pid()
        if pid is None:
            raise exception.SandboxError(reason='nova-compute of %s is not '
                                         'running' % self.host.name)
        _kill9(pid)
        deadline = time.monotonic() + 10
        while svc.pid() is not None and time.monotonic() < deadline:
            time.sleep(0.1)
        return 'nova-compute of %s pid %d' % (self.host.name, pid)

    def recover(self):
        svc = self._service()
        if svc.pid() is None:
            svc.start()

    def healthy(self):
        # Up for Nova again: its service record reports (a compute that
        # restarted reports within its report_interval).
        return self._service().pid() is not None and \
            self.env.compute_up(self.host.name)


class KillNovaComputeSource(KillNovaCompute):
    kind = 'kill-nova-compute-source'
    end = 'source'


class KillNovaComputeDest(KillNovaCompute):
    kind = 'kill-nova-compute-dest'
    end = 'dest'


class KillLibvirtd(_HostFault):
    """libvirtd dies; the host's init starts it again (its supervisor).

    The guests (QEMU) keep running: libvirtd reconnects to them, as on a
    host whose systemd restarts libvirtd.service.
    """

    def inject(self):
        # Not the host's pid file: libvirtd writes there its pid as the
        # host's PID namespace numbers it, another process from here.
        pid = self.host.libvirtd_pid()
        if pid is None:
            raise exception.SandboxError(reason='libvirtd of %s is not '
                                         'running' % self.host.name)
        self.killed = pid
        _kill9(pid)
        return 'libvirtd of %s pid %d' % (self.host.name, pid)

    def recover(self):
        # The host's init restarts it (services/confs.py HOST_INIT).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            pid = self.host.libvirtd_pid()
            if pid and pid != self.killed and services_base.tcp_open(
                    self.host.address, self.env.cloud.port('libvirtd')):
                break
            time.sleep(0.5)
        else:
            raise exception.SandboxError(
                reason='libvirtd of %s not restarted by its init within '
                       '60 s' % self.host.name)
        self.host.define_secrets()

    def healthy(self):
        return self.host.libvirtd_pid() not in (None, self.killed) and \
            self.env.compute_up(self.host.name)


class KillLibvirtdSource(KillLibvirtd):
    kind = 'kill-libvirtd-source'
    end = 'source'


class KillLibvirtdDest(KillLibvirtd):
    kind = 'kill-libvirtd-dest'
    end = 'dest'


# --- the shared services -------------------------------------------------------

class RestartShared(Fault):
    """A shared service restarted (stopped, started after ``hold``)."""

    service = None

    def _svc(self):
        return getattr(self.env.sandbox.shared, self.service)()

    def inject(self):
        svc = self._svc()
        pid = svc.stop()
        return '%s stopped (pid %s)' % (self.service, pid)

    def recover(self):
        svc = self._svc()
        if svc.pid() is None:
            svc.start()
        svc.wait_ready()

    def healthy(self):
        return self._svc().ready() and self.env.terminals_up()


class RestartRabbitMQ(RestartShared):
    kind = 'restart-rabbitmq'
    service = 'rabbitmq'


class RestartMariaDB(RestartShared):
    kind = 'restart-mariadb'
    service = 'mariadb'


class RestartZooKeeper(RestartShared):
    kind = 'restart-zookeeper'
    service = 'zookeeper'


class StopOSD(Fault):
    """The OSD of a cluster stopped, started again after ``hold``.

    Each sandbox cluster has one OSD: its I/O stops (the guest's writes
    wait) until the OSD is back.
    """

    site = None

    def _osd(self):
        return self.env.sandbox.site(self.site).daemon('osd.0')

    def inject(self):
        pid = self._osd().stop()
        return 'osd.0 of %s stopped (pid %s)' % (self.site, pid)

    def recover(self):
        osd = self._osd()
        if osd.pid() is None:
            osd.start()

    def healthy(self):
        s = self.env.sandbox.site(self.site)
        try:
            return s._osd_up() and s.health()[0] in ('HEALTH_OK',
                                                     'HEALTH_WARN')
        except exception.FedexException:
            return False


class StopOSDA(StopOSD):
    kind = 'stop-osd-site-a'
    site = 'site-a'


class StopOSDB(StopOSD):
    kind = 'stop-osd-site-b'
    site = 'site-b'


class CutWan(Fault):
    """The WAN link down (packets dropped, no reset) for ``hold`` s."""

    kind = 'cut-wan'

    def _link(self, state):
        wan = self.env.wan
        subprocess.run(['ip', 'link', 'set', wan.root_dev, state],
                       check=True, capture_output=True)

    def inject(self):
        if self.env.wan is None:
            raise exception.SandboxError(reason='the soak runs without its '
                                         'WAN: nothing to cut')
        self._link('down')
        return 'link %s down' % self.env.wan.root_dev

    def recover(self):
        self._link('up')

    def healthy(self):
        return self.env.terminals_up()


# --- the user -------------------------------------------------------------------

class UserFault(Fault):
    """What a user does; the CLI's answer is kept for the report."""

    def cli(self, *args):
        proc = self.env.openstack_proc(*args)
        self.target.user_acts.append((self.kind, proc.returncode,
                                      (proc.stdout + proc.stderr).strip()))
        return 'openstack %s: exit %d %s' % (
            ' '.join(args[:3]), proc.returncode,
            (proc.stderr or proc.stdout).strip()[-300:])


class UserDeleteServer(UserFault):
    kind = 'user-delete-server'

    def inject(self):
        self.target.server_gone = True
        note = self.cli('server', 'delete', self.target.server_id)
        if self.target.user_acts[-1][1] == 0:
            self.env.watch_abort(self.target)
        return note


class UserStopServer(UserFault):
    kind = 'user-stop-server'

    def inject(self):
        self.target.server_stopped = True
        return self.cli('server', 'stop', self.target.server_id)


class UserDetachVolume(UserFault):
    kind = 'user-detach-volume'

    def inject(self):
        if not self.target.volume_id:
            return 'no volume to detach'
        self.target.volume_detached = True
        return self.cli('server', 'remove', 'volume', self.target.server_id,
                        self.target.volume_id)


class UserAbort(UserFault):
    kind = 'user-abort'

    def inject(self):
        self.target.abort_asked = True
        return self.cli('fedex', 'migration', 'abort', '--reason',
                        'soak: the user changed their mind',
                        self.target.migration_id)


CATALOGUE = {cls.kind: cls for cls in (
    KillConductor, KillTerminalA, KillTerminalB, KillNovaComputeSource,
    KillNovaComputeDest, KillLibvirtdSource, KillLibvirtdDest,
    RestartRabbitMQ, RestartMariaDB, RestartZooKeeper, StopOSDA, StopOSDB,
    CutWan, UserDeleteServer, UserStopServer, UserDetachVolume, UserAbort)}
