"""The two sites together: up, status, down, destroy."""

import concurrent.futures
import contextlib
import fcntl
import json
import os
import shutil
import time

from oslo_log import log as logging

from fedex_sandbox import opts as opts_mod
from fedex_sandbox.services import shared as shared_mod
from fedex_sandbox import site as site_mod
from lsrp import exception
from lsrp import fileutils
from lsrp import tls

LOG = logging.getLogger(__name__)
# Port offsets of each site's terminal (lsrp-server) in the sandbox's range.
TERMINAL_PORTS = {'site-a': 300, 'site-b': 301}
DEMO_PORT = 302


def ephemeral_ports(path='/proc/sys/net/ipv4/ip_local_port_range'):
    """The kernel's range of ports for outgoing connections: (low, high)."""
    try:
        with open(path) as f:
            low, high = f.read().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


class Sandbox(object):
    """Both sites of the local sandbox, all state under one directory."""

    def __init__(self, root, base_port=None, osd_size_gib=64,
                 min_free_mib=2048, start_timeout=180):
        self.root = os.path.abspath(root)
        if base_port is None:
            base_port = self.remembered_base_port(self.root)
        self.base_port = base_port
        self.min_free_mib = min_free_mib
        self.start_timeout = start_timeout
        self.sites = [site_mod.SandboxSite(self.root, name, i, base_port,
                                           osd_size_gib)
                      for i, name in enumerate(site_mod.SITES)]
        self.pki = os.path.join(self.root, 'pki')
        self.run_dir = os.path.join(self.root, 'run')
        self.shared = shared_mod.SharedServices(self.root, base_port,
                                                start_timeout)

    def cloud(self):
        """The OpenStack mini-cloud of this sandbox."""
        from fedex_sandbox.services import cloud as cloud_mod
        return cloud_mod.Cloud(self)

    def terminal(self, site):
        """Name and TLS files of a site's terminal: (name, ca, cert, key)."""
        name = 'terminal-%s' % site
        return (name, os.path.join(self.pki, 'ca.pem'),
                os.path.join(self.pki, name + '.pem'),
                os.path.join(self.pki, name + '.key'))

    def terminal_dir(self, site):
        """Everything of a site's terminal: lsrp.conf, state/, keys/."""
        return os.path.join(self.root, 'terminals', site)

    def terminal_conf(self, site):
        """The lsrp.conf of a site's terminal, for lsrp and lsrp-server."""
        return os.path.join(self.terminal_dir(site), 'lsrp.conf')

    def terminal_port(self, site):
        return self.port(TERMINAL_PORTS[site])

    def _write_terminal_confs(self):
        """Each terminal's own state and key directories, and its conf.

        Two terminals on one machine must never share a state directory
        (sessions, journals, group commits) or a key store: with the
        package defaults both would use /var/lib/lsrp.
        """
        for s in self.sites:
            top = self.terminal_dir(s.name)
            for sub in ('state', 'keys'):
                os.makedirs(os.path.join(top, sub), mode=0o700,
                            exist_ok=True)
            name, ca, cert, key = self.terminal(s.name)
            text = ('[ceph]\nsite_name = %s\nconf_file = %s\nkeyring = %s\n'
                    '\n[shipment]\nstate_dir = %s\nkey_dir = %s\n\n'
                    '[server]\nname = %s\nhost = 127.0.0.1\nport = %d\n'
                    'tls_ca = %s\ntls_cert = %s\ntls_key = %s\n' % (
                        s.name, s.conf, s.keyring, os.path.join(top, 'state'),
                        os.path.join(top, 'keys'), name,
                        self.terminal_port(s.name), ca, cert, key))
            fileutils.write_atomic(self.terminal_conf(s.name), text)

    def _make_pki(self):
        """A CA and a certificate for each site's terminal, once."""
        if os.path.exists(os.path.join(self.pki, 'ca.pem')):
            return
        tls.make_ca(self.pki)
        for s in self.sites:
            tls.make_cert(self.pki, self.terminal(s.name)[0])

    remembered_base_port = staticmethod(opts_mod.remembered_base_port)

    def _remember(self):
        """Record the base port for later commands on this directory."""
        fileutils.write_atomic(os.path.join(self.root, opts_mod.REMEMBERED),
                               json.dumps({'base_port': self.base_port}))

    def port(self, offset):
        """A port of this sandbox's own range (offset < PORT_SPAN)."""
        if not 0 <= offset < opts_mod.PORT_SPAN:
            raise exception.SandboxError(reason='port offset %d is outside '
                                         'the sandbox range' % offset)
        return self.base_port + offset

    @property
    def wan_slot(self):
        """The WAN links of this sandbox are numbered wan_slot*16 + k.

        k < 16: sandboxes with different base ports never share a network
        namespace, a veth name or an address.
        """
        return (self.base_port // opts_mod.PORT_SPAN) % 16

    def wan_number(self, k):
        if not 0 <= k < 16:
            raise exception.SandboxError(reason='WAN link %d is not in 0-15'
                                         % k)
        return self.wan_slot * 16 + k

    @classmethod
    def from_conf(cls, conf):
        s = conf.sandbox
        return cls(s.dir, s.base_port, s.osd_size_gib,
                   s.min_free_mib, s.start_timeout)

    def site(self, name):
        for s in self.sites:
            if s.name == name:
                return s
        raise exception.SandboxError(reason='no site named %r (have: %s)' % (
            name, ', '.join(s.name for s in self.sites)))

    @contextlib.contextmanager
    def _lock(self):
        """One command at a time changes the sandbox."""
        os.makedirs(self.root, exist_ok=True)
        with open(os.path.join(self.root, '.lock'), 'w') as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            yield

    def _check_disk(self):
        free_mib = shutil.disk_usage(self.root).free >> 20
        if free_mib < self.min_free_mib:
            raise exception.DiskFull(free_mib=free_mib, path=self.root,
                                     need_mib=self.min_free_mib)

    def _check_ports(self):
        """Refuse a port span that overlaps the kernel's ephemeral ports.

        Seen in CI: a functional sandbox at 32000 found its +900 taken by
        some outgoing connection (ephemeral ports start at 32768 here).
        """
        low, high = ephemeral_ports()
        first = self.base_port
        last = first + opts_mod.PORT_SPAN - 1
        if first <= high and last >= low:
            raise exception.PortsEphemeral(
                first=first, last=last, low=low, high=high,
                most=low - opts_mod.PORT_SPAN)

    def _each_site(self, fn):
        """Run fn(site) for both sites at once; re-raise the first error."""
        with concurrent.futures.ThreadPoolExecutor(len(self.sites)) as pool:
            futures = [pool.submit(fn, s) for s in self.sites]
            return [f.result() for f in futures]

    def up(self, openstack=False):
        """Start (or create) both sites and the shared services.

        Waits until both sites are HEALTH_OK and MariaDB, RabbitMQ and
        ZooKeeper answer; with ``openstack``, then brings the mini-cloud up
        (fedex_sandbox.services.cloud).
        Returns {site or service: 'healthy' | 'started' | 'created' |
        'running'}. What is healthy is left untouched.
        """
        site_mod.check_programs()
        shared_mod.check_programs()
        with self._lock():
            self._check_disk()
            self._check_ports()
            # Fail before starting anything, so that a taken port on one
            # site does not leave the other half started.
            for s in self.sites:
                s.preflight()
            self._make_pki()
            self._remember()
            self._write_terminal_confs()
            begin = time.monotonic()
            deadline = begin + self.start_timeout

            def bring_up(site):
                if site.is_healthy():
                    return 'healthy'
                if site.bootstrapped:
                    action = 'started' if site.start() else 'waited'
                else:
                    site.bootstrap()
                    action = 'created'
                site.wait_healthy(deadline)
                return action

            # The shared services start while the sites do.
            with concurrent.futures.ThreadPoolExecutor(3) as pool:
                futures = [pool.submit(bring_up, s) for s in self.sites]
                shared = pool.submit(self.shared.up)
                actions = [f.result() for f in futures]
                result = dict(zip((s.name for s in self.sites), actions))
                result.update(shared.result())
            LOG.info('sandbox up in %.1f s: %s', time.monotonic() - begin,
                     result)
            if openstack:
                result.update(self.cloud().up())
            return result

    def down(self):
        """Stop the daemons we started; keep all data."""
        with self._lock():
            result = {}
            cloud = self.cloud()
            if cloud.exists():
                result['openstack'] = cloud.down()
            result['services'] = self.shared.down()
            result.update({s.name: s.stop() for s in self.sites})
            return result

    def destroy(self):
        """Stop everything and remove all sandbox state."""
        with self._lock():
            cloud = self.cloud()
            if cloud.exists():
                cloud.destroy()
            self.shared.destroy()
            for s in self.sites:
                s.destroy()
        shutil.rmtree(self.root, ignore_errors=True)

    def status(self):
        """Per site: health and every daemon with its pid or 'down'."""
        report = []
        for s in self.sites:
            entry = {'site': s.name, 'dir': s.dir, 'conf': s.conf,
                     'fsid': s.fsid(), 'created': s.bootstrapped,
                     'daemons': [], 'health': None, 'checks': {}}
            for d in s.daemons():
                try:
                    pid, state = d.pid(), None
                    state = 'running' if pid else 'down'
                except exception.NotOurProcess as e:
                    pid, state = None, 'foreign pid file: %s' % e
                entry['daemons'].append({'name': d.name, 'pid': pid,
                                         'state': state, 'log': d.log_file})
            mon_running = entry['daemons'][0]['state'] == 'running'
            if not s.bootstrapped:
                entry['health'] = 'NOT CREATED'
            elif not mon_running:
                entry['health'] = 'DOWN'
            else:
                try:
                    entry['health'], entry['checks'] = s.health()
                except exception.FedexException as e:
                    entry['health'], entry['checks'] = 'UNREACHABLE', {
                        'mon': str(e)}
            down = ['%s (log: %s)' % (d['name'], d['log'])
                    for d in entry['daemons'] if d['state'] != 'running']
            if down and s.bootstrapped:
                # NOTE: the monitor notices a killed OSD only after its
                # heartbeat grace; our pid view knows at once.
                entry['checks']['SANDBOX_DAEMON_DOWN'] = (
                    'not running: %s' % ', '.join(down))
            free_mib = shutil.disk_usage(self.root).free >> 20 \
                if os.path.isdir(self.root) else None
            low = free_mib is not None and free_mib < self.min_free_mib
            if low:
                # NOTE: a full disk kills the OSD (ENOSPC) and guests' I/O
                # and migrations then hang silently: say it before.
                entry['checks']['SANDBOX_DISK_LOW'] = (
                    'only %d MiB free in %s (need %d); a full disk stops the '
                    'OSD and hangs guests and migrations' % (
                        free_mib, self.root, self.min_free_mib))
            entry['healthy'] = (entry['health'] == 'HEALTH_OK' and not down
                                and not low)
            report.append(entry)
        return report
