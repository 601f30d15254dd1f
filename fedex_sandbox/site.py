"""One sandbox site: a real single-node Ceph cluster (mon + mgr + one OSD).

Everything a site owns lives under ``<sandbox_dir>/<site>/``::

    ceph.conf  client.admin.keyring  site.json
    mon/  mgr/  osd/ (bluestore on a sparse file)  run/ (pids, sockets)  log/

The conf names its own keyrings, run dir, logs and admin sockets, so nothing
under /etc/ceph or /var/lib/ceph is used and two sites run side by side.
"""

import json
import os
import shlex
import shutil
import socket
import subprocess
import time
import uuid

from oslo_log import log as logging

from fedex_sandbox import processes
from lsrp import exception
from lsrp import fileutils

LOG = logging.getLogger(__name__)

SITES = ('site-a', 'site-b')
POOLS = ('vms', 'volumes', 'images')
PG_NUM = 8
MON_ID = 'a'
MGR_ID = 'x'
OSD_ID = 0

# Programs we need and the Debian package that holds each.
PROGRAMS = {
    'ceph-mon': 'ceph-mon', 'ceph-mgr': 'ceph-mgr', 'ceph-osd': 'ceph-osd',
    'ceph': 'ceph-common', 'ceph-authtool': 'ceph-common',
    'monmaptool': 'ceph-base', 'rbd': 'ceph-common',
}

CONF_TEMPLATE = """\
# Written by fedex-sandbox for {name}. Regenerated on every 'up'.
[global]
fsid = {fsid}
mon_host = [v2:127.0.0.1:{mon_v2},v1:127.0.0.1:{mon_v1}]
public_addr = 127.0.0.1
ms_bind_port_min = {bind_min}
ms_bind_port_max = {bind_max}
auth_cluster_required = cephx
auth_service_required = cephx
auth_client_required = cephx
auth_allow_insecure_global_id_reclaim = false
run_dir = {dir}/run
crash_dir = {dir}/crash
# Each process its own admin socket: parallel clients would clash otherwise.
admin_socket = {dir}/run/$name.$pid.asok
mon_cluster_log_file = {dir}/log/cluster.log
osd_pool_default_size = 1
osd_pool_default_min_size = 1
osd_pool_default_pg_num = {pg_num}
osd_pool_default_pgp_num = {pg_num}
osd_pool_default_pg_autoscale_mode = off
osd_crush_chooseleaf_type = 0
mon_allow_pool_size_one = true
mon_allow_pool_delete = true
mon_warn_on_pool_no_redundancy = false
# The shared disk of a test machine is often more than 70% full.
mon_data_avail_warn = 2
mon_data_avail_crit = 1
# Faster monitor commits: a site starts in about half the time.
paxos_propose_interval = 0.2
mon_osd_report_timeout = 20

[client.admin]
keyring = {dir}/client.admin.keyring

[mon]
mon_data = {dir}/mon
keyring = {dir}/mon/keyring
log_file = {dir}/log/$name.log
admin_socket = {dir}/run/$name.asok

[mgr]
mgr_data = {dir}/mgr
keyring = {dir}/mgr/keyring
log_file = {dir}/log/$name.log
admin_socket = {dir}/run/$name.asok

[osd]
osd_data = {dir}/osd
keyring = {dir}/osd/keyring
log_file = {dir}/log/$name.log
admin_socket = {dir}/run/$name.asok
osd_objectstore = bluestore
# Bluestore on a sparse file in osd_data (do not set bluestore_block_path to
# the same place: mkfs then fails with "Too many levels of symbolic links").
bluestore_block_create = true
bluestore_block_size = {osd_size}
osd_memory_target = 939524096
# The disk looks rotational: without these, snapshot trimming sleeps 5 s/step.
osd_snap_trim_sleep_hdd = 0
osd_recovery_sleep_hdd = 0
"""


def check_programs():
    for program, package in sorted(PROGRAMS.items()):
        if shutil.which(program) is None:
            raise exception.PackageMissing(program=program, package=package)


def _port_free(port, address='127.0.0.1'):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((address, port))
        except OSError:
            return False
    return True


class SandboxSite(object):
    """A single-node Ceph cluster of the sandbox, named like ``site-a``."""

    def __init__(self, root, name, index, base_port, osd_size_gib=64):
        self.root = root
        self.name = name
        self.index = index
        self.dir = os.path.join(root, name)
        self.conf = os.path.join(self.dir, 'ceph.conf')
        self.keyring = os.path.join(self.dir, 'client.admin.keyring')
        self.state_file = os.path.join(self.dir, 'site.json')
        self.run_dir = os.path.join(self.dir, 'run')
        self.log_dir = os.path.join(self.dir, 'log')
        first = base_port + 100 * index
        self.mon_v2, self.mon_v1 = first, first + 1
        self.bind_min, self.bind_max = first + 10, first + 99
        self.osd_size = osd_size_gib << 30

    # --- layout and state ------------------------------------------------

    def load_state(self):
        try:
            with open(self.state_file) as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def _save_state(self, state):
        fileutils.write_atomic(self.state_file, json.dumps(state, indent=2))

    @property
    def bootstrapped(self):
        state = self.load_state()
        return bool(state and state.get('bootstrapped'))

    def fsid(self):
        state = self.load_state()
        return state and state['fsid']

    def _log(self, daemon):
        return os.path.join(self.log_dir, '%s.log' % daemon)

    def daemons(self):
        """Our three daemons, in start order."""
        conf = ['-c', self.conf]
        specs = [('mon.' + MON_ID, ['ceph-mon', '-f', '-i', MON_ID]),
                 ('mgr.' + MGR_ID, ['ceph-mgr', '-f', '-i', MGR_ID]),
                 ('osd.%d' % OSD_ID, ['ceph-osd', '-f', '-i', str(OSD_ID)])]
        return [processes.Daemon(self.name, name,
                                 [shutil.which(argv[0]) or argv[0]] + argv[1:]
                                 + conf,
                                 self.conf, self.run_dir, self._log(name))
                for name, argv in specs]

    def daemon(self, name):
        return next(d for d in self.daemons() if d.name == name)

    def write_conf(self, fsid):
        text = CONF_TEMPLATE.format(
            name=self.name, fsid=fsid, dir=self.dir, mon_v2=self.mon_v2,
            mon_v1=self.mon_v1, bind_min=self.bind_min,
            bind_max=self.bind_max, pg_num=PG_NUM, osd_size=self.osd_size)
        fileutils.write_atomic(self.conf, text)

    # --- commands --------------------------------------------------------

    def _run(self, argv, daemon='setup', timeout=60, input=None):
        try:
            proc = subprocess.run(argv, input=input, capture_output=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            raise exception.DaemonFailed(
                site=self.name, daemon=daemon,
                reason='did not answer "%s" within %d s' % (
                    ' '.join(argv[:6]), timeout),
                log=self._log('mon.' + MON_ID), tail='')
        if proc.returncode != 0:
            raise exception.DaemonFailed(
                site=self.name, daemon=daemon,
                reason='"%s" failed (exit %d): %s' % (
                    ' '.join(argv[:6]), proc.returncode,
                    proc.stderr.decode(errors='replace').strip()[-500:]),
                log=self._log(daemon), tail='')
        return proc.stdout.decode()

    def ceph(self, *args, timeout=30):
        """Run the ``ceph`` CLI against this site; returns parsed JSON."""
        out = self._run(['ceph', '-c', self.conf, '--connect-timeout',
                         str(timeout), '--format', 'json'] + list(args),
                        daemon='mon.' + MON_ID, timeout=timeout + 5)
        return json.loads(out) if out.strip() else None

    # --- checks before starting -------------------------------------------

    def check_ports(self, daemons):
        """Raise PortInUse naming the port and, if we can, its holder."""
        needed = []
        if 'mon.' + MON_ID in daemons:
            needed += [self.mon_v2, self.mon_v1]
        for port in needed:
            if not _port_free(port):
                pid = processes.listening_pid(port)
                holder = ''
                if pid is not None:
                    cmd = processes.read_cmdline(pid) or ['?']
                    holder = ' by pid %d (%s)' % (pid, ' '.join(cmd)[:120])
                raise exception.PortInUse(
                    site=self.name, daemon=next(iter(daemons)), port=port,
                    address='127.0.0.1', holder=holder)
        free = sum(1 for p in range(self.bind_min, self.bind_max + 1)
                   if _port_free(p))
        # An OSD binds up to 8 ports (public/cluster/heartbeats, v1 and v2).
        if free < 12:
            raise exception.SandboxError(
                reason='%s: only %d free ports in %d-%d for the manager and '
                       'OSD; pick another --base-port' % (
                           self.name, free, self.bind_min, self.bind_max))

    # --- bootstrap ------------------------------------------------------------

    def _authtool(self, *args):
        return self._run(['ceph-authtool'] + list(args)).strip()

    def bootstrap(self):
        """Create a new cluster from nothing and start its daemons."""
        try:
            self._bootstrap()
        except Exception:
            # Leave nothing running from a half-made site.
            self.stop()
            raise

    def _bootstrap(self):
        if os.path.exists(self.dir):
            # A bootstrap that did not finish never held user data.
            LOG.info('%s: removing an unfinished bootstrap in %s',
                     self.name, self.dir)
            shutil.rmtree(self.dir)
        for sub in ('bootstrap', 'mon', 'mgr', 'osd', 'run', 'log', 'crash'):
            os.makedirs(os.path.join(self.dir, sub))
        fsid = str(uuid.uuid4())
        osd_uuid = str(uuid.uuid4())
        self._save_state({'fsid': fsid, 'osd_uuid': osd_uuid,
                          'bootstrapped': False,
                          'mon_v2': self.mon_v2, 'mon_v1': self.mon_v1})
        self.write_conf(fsid)

        # All keys are made here and imported by the monitor's mkfs, so the
        # manager and OSD need no auth round trips to a fresh monitor.
        mon_keyring = os.path.join(self.dir, 'bootstrap', 'mon.keyring')
        self._authtool('--create-keyring', mon_keyring, '--gen-key',
                       '-n', 'mon.', '--cap', 'mon', 'allow *')
        self._authtool('--create-keyring', self.keyring, '--gen-key',
                       '-n', 'client.admin', '--cap', 'mon', 'allow *',
                       '--cap', 'osd', 'allow *', '--cap', 'mgr', 'allow *',
                       '--cap', 'mds', 'allow *')
        mgr_keyring = os.path.join(self.dir, 'mgr', 'keyring')
        self._authtool('--create-keyring', mgr_keyring, '--gen-key',
                       '-n', 'mgr.' + MGR_ID, '--cap', 'mon', 'allow profile mgr',
                       '--cap', 'osd', 'allow *', '--cap', 'mds', 'allow *')
        osd_keyring = os.path.join(self.dir, 'osd', 'keyring')
        self._authtool('--create-keyring', osd_keyring, '--gen-key',
                       '-n', 'osd.%d' % OSD_ID,
                       '--cap', 'mon', 'allow profile osd',
                       '--cap', 'mgr', 'allow profile osd',
                       '--cap', 'osd', 'allow *')
        for other in (self.keyring, mgr_keyring, osd_keyring):
            self._authtool(mon_keyring, '--import-keyring', other)

        monmap = os.path.join(self.dir, 'bootstrap', 'monmap')
        self._run(['monmaptool', '--create', '--fsid', fsid, '--addv', MON_ID,
                   '[v2:127.0.0.1:%d,v1:127.0.0.1:%d]' % (self.mon_v2,
                                                          self.mon_v1),
                   monmap])
        self._run(['ceph-mon', '-c', self.conf, '--mkfs', '-i', MON_ID,
                   '--monmap', monmap, '--keyring', mon_keyring],
                  daemon='mon.' + MON_ID)
        mon, mgr, osd = self.daemons()
        mon.start()
        mgr.start()
        # The OSD's mkfs needs no monitor: run it while the monitor starts.
        self._run(['ceph-osd', '-c', self.conf, '--mkfs', '-i', str(OSD_ID),
                   '--osd-uuid', osd_uuid, '--no-mon-config'],
                  daemon=osd.name, timeout=120)
        mon.check_alive()
        self.ceph('osd', 'new', osd_uuid, str(OSD_ID))
        osd.start()
        for pool in POOLS:
            self.ceph('osd', 'pool', 'create', pool, str(PG_NUM))
            self.ceph('osd', 'pool', 'application', 'enable', pool, 'rbd')
        state = self.load_state()
        state['pools_pending'] = list(POOLS)
        self._save_state(state)

    def finish_bootstrap(self):
        """Initialise the pools for RBD once the OSD is up; mark the site done."""
        state = self.load_state()
        for pool in state.get('pools_pending', []):
            # 'rbd pool init' writes an object: it needs an active OSD.
            self._run(['rbd', '-c', self.conf, 'pool', 'init', pool],
                      daemon='osd.%d' % OSD_ID, timeout=60)
        state['pools_pending'] = []
        state['bootstrapped'] = True
        self._save_state(state)

    # --- life cycle -----------------------------------------------------

    def start(self):
        """Start whichever of our daemons are not running.

        Returns the names of the daemons started.
        """
        fsid = self.fsid()
        self.write_conf(fsid)
        stopped = self.stopped_daemons()
        for daemon in stopped.values():
            daemon.start()
        return list(stopped)

    def stopped_daemons(self):
        return {d.name: d for d in self.daemons() if d.pid() is None}

    def preflight(self):
        """Before starting anything: the ports this site needs are free."""
        if self.is_healthy():
            return
        stopped = (self.stopped_daemons() if self.bootstrapped
                   else {d.name: d for d in self.daemons()})
        if stopped:
            self.check_ports(stopped)

    def stop(self):
        """Stop our daemons (OSD first); returns [(name, pid)] of those stopped.

        A pid file naming a foreign process does not stop the others from
        being stopped; its NotOurProcess error is raised at the end.
        """
        stopped, foreign = [], []
        for daemon in reversed(self.daemons()):
            try:
                pid = daemon.stop()
            except exception.NotOurProcess as e:
                foreign.append(e)
                continue
            if pid is not None:
                stopped.append((daemon.name, pid))
        if foreign:
            raise foreign[0]
        return stopped

    def _cli(self, prefix, timeout=5):
        return self.ceph(*prefix.split(), timeout=timeout)

    def mon(self, prefix, timeout=5):
        """``ceph <prefix> --format json``, asked through librados.

        For the looks repeated once a second while the daemons start
        (wait_healthy): the ``ceph`` CLI is a Python client of about 0.6 s
        of CPU a call, taken from the OSD it waits for (one CI run made 640
        calls, 318 s of CPU). The CLI where the bindings are not
        installed; the CLI too for the looks of processes with threads of
        their own (the soak's), which librados in threads once crashed
        (services/guest_reader.py).
        """
        try:
            import rados
        except ImportError:
            return self._cli(prefix, timeout=timeout)
        # connect() ignores its timeout argument: librados's options bound
        # the wait for a monitor that does not answer (300 s by default).
        cluster = rados.Rados(conffile=self.conf, conf={
            'client_mount_timeout': str(timeout),
            'rados_mon_op_timeout': str(timeout)})
        try:
            cluster.connect()
            ret, out, err = cluster.mon_command(
                json.dumps({'prefix': prefix, 'format': 'json'}), b'',
                timeout=timeout)
        except rados.Error as e:
            ret, out, err = -1, b'', str(e)
        finally:
            cluster.shutdown()
        if ret != 0:
            raise exception.DaemonFailed(
                site=self.name, daemon='mon.' + MON_ID,
                reason='"ceph %s" failed (%d): %s' % (prefix, ret, err),
                log=self._log('mon.' + MON_ID), tail='')
        return json.loads(out) if out.strip() else None

    def health(self, timeout=5, ask=None):
        """Return ``(status, {check: summary})`` as the monitor reports it.

        Asked with the ``ceph`` CLI, or ``ask`` (``mon``).
        """
        report = (ask or self._cli)('health', timeout=timeout)
        checks = {name: c.get('summary', {}).get('message', '')
                  for name, c in (report.get('checks') or {}).items()}
        return report['status'], checks

    def check_daemons(self):
        for daemon in self.daemons():
            daemon.check_alive()

    def is_healthy(self):
        try:
            if any(d.pid() is None for d in self.daemons()):
                return False
            return self.bootstrapped and self.health()[0] == 'HEALTH_OK'
        except exception.FedexException:
            return False

    def wait_healthy(self, deadline):
        """Wait for HEALTH_OK, failing early and clearly if a daemon dies."""
        last = None
        while True:
            self.check_daemons()
            if not self.bootstrapped and self._osd_up(ask=self.mon):
                self.finish_bootstrap()
            if self.bootstrapped:
                try:
                    last = self.health(ask=self.mon)
                    if last[0] == 'HEALTH_OK':
                        return
                except exception.DaemonFailed as e:
                    last = ('unreachable', {'mon': str(e)})
            if time.monotonic() > deadline:
                raise exception.SandboxNotReady(
                    site=self.name,
                    reason='not healthy in time (%s: %s)' % (
                        last[0] if last else 'bootstrap unfinished',
                        '; '.join('%s %s' % kv for kv in
                                  (last[1].items() if last else []))),
                    log=self.log_dir)
            time.sleep(1)

    def _osd_up(self, ask=None):
        try:
            stat = (ask or self._cli)('osd stat', timeout=5)
        except exception.DaemonFailed:
            return False
        return stat.get('num_up_osds', 0) >= 1

    def destroy(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def export_sha256(self, spec):
        """``rbd export <spec> - | sha256sum`` of this site.

        The check made with clients we did not write, for the tests, the
        benchmarks and the demo.
        """
        cmd = 'rbd -c %s --keyring %s export --no-progress %s - | sha256sum' \
            % (shlex.quote(self.conf), shlex.quote(self.keyring),
               shlex.quote(spec))
        return subprocess.run(['bash', '-o', 'pipefail', '-c', cmd],
                              capture_output=True, text=True,
                              check=True).stdout.split()[0]

    # --- reporting -----------------------------------------------------

    def env(self):
        """Shell variable names and values that point clients at this site."""
        key = 'FEDEX_%s' % self.name.upper().replace('-', '_')
        return [('%s_CONF' % key, self.conf),
                ('%s_KEYRING' % key, self.keyring),
                ('%s_FSID' % key, self.fsid() or '')]
