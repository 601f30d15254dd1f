"""An emulated WAN: a rate-limited, delayed link with "faces" behind it.

::

    root namespace                          namespace fedex-wan<N>
    clients (QEMU, libvirtd,     10.77.N.1 ==veth, tbf both ends== 10.77.N.2
    lsrp agents, nova-compute)                                  + face addresses
       connect to a face  ------------------------------------->  relay
                                                                  (listens here,
       services on the root     <---- loopback, unshaped -------  connects from
       namespace's loopback                                       the root ns)

A *face* is an address on the namespace's side of the veth pair where the
relay (fedex_sandbox/relay.py) listens on some ports and forwards each
connection to the same port of the real service, on the root namespace's
loopback. A client in the root namespace that connects to a face crosses
the veth pair and its ``tbf`` rate limit, and the relay delays every chunk
by the one-way delay (``netem`` does not exist in this kernel); the answers
cross back the same way. The relay counts the bytes of each mapping. Links
of different numbers N are independent; only the addresses made here carry
traffic.

:class:`Wan` is one link; :class:`SandboxWan` is the sandbox's link 0, with
a face per compute host of the mini-cloud and two for the terminals
(catch-up, final delta): see doc/source/sandbox.rst, "The WAN between the
sites".
"""

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

from fedex_sandbox import processes
from fedex_sandbox import relay
from fedex_sandbox.services import compute_hosts
from fedex_sandbox.services import ports
from lsrp import exception

# The paths bytes are counted by (a mapping's "path").
PATHS = ('memory', 'control', 'final-delta', 'catch-up')


def _ip(*args, ns=None, check=True):
    cmd = (['ip', 'netns', 'exec', ns] if ns else []) + list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise exception.SandboxError(reason='"%s" failed: %s' % (
            ' '.join(cmd), proc.stderr.strip()))
    return proc


def tbf_burst(rate_mbit):
    """tbf's bucket in bytes: 10 ms at the rate, at least 64 KiB.

    A bucket smaller than what the rate brings in one kernel tick cannot
    reach the rate (1 Gbit/s is 500 KB per tick at HZ=250).
    """
    return max(64 << 10, int(rate_mbit * 1e6 / 8 / 100))


class Wan(object):

    def __init__(self, run_dir, number=0):
        if not 0 <= number <= 255:
            raise exception.SandboxError(reason='WAN number %d is not in '
                                         '0-255' % number)
        self.run_dir = run_dir
        self.number = number
        self.namespace = 'fedex-wan%d' % number
        self.netns_path = '/var/run/netns/' + self.namespace
        self.root_dev, self.ns_dev = 'fxwan%da' % number, 'fxwan%db' % number
        self.root_addr = '10.77.%d.1' % number
        self.ns_addr = '10.77.%d.2' % number
        self.config_file = os.path.join(run_dir, 'wan%d-relay.json' % number)
        self.stats_file = os.path.join(run_dir, 'wan%d-stats.json' % number)
        self.pid_file = os.path.join(run_dir, 'wan%d-relay.pid' % number)
        self.out_file = os.path.join(run_dir, 'wan-relay.out')

    def face(self, k):
        """Address number k (3..254) of the namespace's side."""
        if not 3 <= k <= 254:
            raise exception.SandboxError(reason='face %d is not in 3-254' % k)
        return '10.77.%d.%d' % (self.number, k)

    def exists(self):
        return self.namespace in _ip('ip', 'netns', 'list').stdout.split()

    def up(self, rate_mbit=100, delay_ms=0, port=None, mappings=()):
        """Make the namespace, the veth pair with tbf, and start the relay.

        ``port``: the old single mapping, 10.77.N.2:port to a terminal on
        10.77.N.1:port. ``mappings``: faces, as relay.py describes them.
        Returns (address, port) of the single mapping (or None, None).
        """
        self.down()
        mappings = list(mappings)
        if port:
            mappings.append({'name': 'relay', 'path': 'catch-up',
                             'listen': self.ns_addr,
                             'target': self.root_addr, 'ports': [port]})
        _ip('ip', 'netns', 'add', self.namespace)
        try:
            _ip('ip', 'link', 'add', self.root_dev, 'type', 'veth', 'peer',
                'name', self.ns_dev)
            _ip('ip', 'link', 'set', self.ns_dev, 'netns', self.namespace)
            _ip('ip', 'addr', 'add', self.root_addr + '/24', 'dev',
                self.root_dev)
            _ip('ip', 'link', 'set', self.root_dev, 'up')
            self.guard()
            _ip('ip', 'addr', 'add', self.ns_addr + '/24', 'dev', self.ns_dev,
                ns=self.namespace)
            self._add_faces(mappings)
            _ip('ip', 'link', 'set', self.ns_dev, 'up', ns=self.namespace)
            _ip('ip', 'link', 'set', 'lo', 'up', ns=self.namespace)
            self.set_rate(rate_mbit)
            self._start_relay(delay_ms, mappings)
        except Exception:
            self.down()
            raise
        return (self.ns_addr, port) if port else (None, None)

    def _add_faces(self, mappings):
        have = _ip('ip', '-o', 'addr', 'show', 'dev', self.ns_dev,
                   ns=self.namespace).stdout
        for addr in sorted({m['listen'] for m in mappings}):
            if ' %s/' % addr not in have:
                _ip('ip', 'addr', 'add', addr + '/24', 'dev', self.ns_dev,
                    ns=self.namespace)

    def _write_config(self, delay_ms, mappings):
        os.makedirs(self.run_dir, exist_ok=True)
        conf = {'netns': self.netns_path, 'delay_ms': delay_ms,
                'stats': self.stats_file, 'mappings': mappings}
        tmp = self.config_file + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(conf, f, indent=1)
        os.replace(tmp, self.config_file)

    def config(self):
        try:
            with open(self.config_file) as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def _start_relay(self, delay_ms, mappings, timeout=20):
        self._write_config(delay_ms, mappings)
        try:
            os.unlink(self.stats_file)
        except FileNotFoundError:
            pass
        out = open(self.out_file, 'ab')
        # In the root namespace: the relay enters the link's namespace only
        # to open its listening sockets.
        proc = subprocess.Popen(
            [sys.executable, '-m', 'fedex_sandbox.relay', '--config',
             self.config_file], stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True)
        with open(self.pid_file, 'w') as f:
            f.write('%d\n' % proc.pid)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise exception.SandboxError(
                    reason='the WAN relay exited (%s); see %s' % (
                        proc.returncode, self.out_file))
            stats = self.stats()
            if stats and stats.get('pid') == proc.pid:
                return
            time.sleep(0.05)
        raise exception.SandboxError(reason='the WAN relay did not start; '
                                     'see %s' % self.out_file)

    def relay_pid(self):
        """The pid of this link's running relay, or None."""
        for pid in self._relays():
            return pid
        return None

    def running(self):
        return self.exists() and self.relay_pid() is not None

    def set_rate(self, rate_mbit):
        """Set (or change) the tbf rate on both ends of the link."""
        burst = tbf_burst(rate_mbit)
        for ns, dev in ((None, self.root_dev),
                        (self.namespace, self.ns_dev)):
            # latency: how long a packet may queue before tbf drops it.
            _ip('tc', 'qdisc', 'replace', 'dev', dev, 'root', 'tbf',
                'rate', '%dmbit' % rate_mbit, 'burst', str(burst),
                'latency', '200ms', ns=ns)

    def set_delay(self, delay_ms):
        """Change the one-way delay of a running relay (SIGHUP)."""
        conf = self.config()
        if conf is None:
            raise exception.SandboxError(reason='WAN %s is not up'
                                         % self.namespace)
        self._write_config(delay_ms, conf['mappings'])
        self._reload()

    def set_mappings(self, mappings):
        """Change the faces of a running relay (SIGHUP)."""
        conf = self.config()
        self._add_faces(mappings)
        self._write_config(conf['delay_ms'] if conf else 0, mappings)
        self._reload()

    def _reload(self):
        pid = self.relay_pid()
        if pid is None:
            raise exception.SandboxError(reason='the relay of %s is not '
                                         'running' % self.namespace)
        os.kill(pid, signal.SIGHUP)

    @property
    def subnet(self):
        return '10.77.%d.0/24' % self.number

    def guard(self):
        """A blackhole route under the link's own, so nothing leaks.

        Without the link (down, or never up) an address of a face would
        follow the default route off the machine; the blackhole (a higher
        metric than the veth's route) drops it here instead.
        """
        _ip('ip', 'route', 'replace', 'blackhole', self.subnet, 'metric',
            '4000')

    def unguard(self):
        _ip('ip', 'route', 'del', 'blackhole', self.subnet, 'metric',
            '4000', check=False)

    def cut(self):
        """The link goes down: packets are lost, connections stall.

        The namespace's end goes down: the root end keeps its route (only
        its carrier is lost), so packets are dropped at the veth rather
        than refused or sent elsewhere. TCP sees an outage, not a reset: a
        connection lives on if the link comes back before its
        retransmissions give up.
        """
        _ip('ip', 'link', 'set', self.ns_dev, 'down', ns=self.namespace)

    def restore(self):
        _ip('ip', 'link', 'set', self.ns_dev, 'up', ns=self.namespace)

    def is_cut(self):
        out = _ip('ip', '-o', 'link', 'show', self.ns_dev, ns=self.namespace,
                  check=False).stdout
        return bool(out) and '<' in out and 'UP' not in out.split('<')[1] \
            .split('>')[0].split(',')

    def shape(self):
        """(rate in Mbit/s, delay in ms) of the running link, or None."""
        out = _ip('tc', 'qdisc', 'show', 'dev', self.root_dev,
                  check=False).stdout.split()
        conf = self.config()
        if 'rate' not in out or conf is None:
            return None
        rate = out[out.index('rate') + 1]
        mult = {'Gbit': 1000, 'Mbit': 1, 'Kbit': 0.001, 'bit': 1e-6}
        for unit, m in mult.items():
            if rate.endswith(unit):
                return float(rate[:-len(unit)]) * m, conf['delay_ms']
        return None

    def stats(self):
        try:
            with open(self.stats_file) as f:
                return json.load(f)
        except (FileNotFoundError, ValueError):
            return None

    def _relays(self):
        """Pids of the relays of this link (either form)."""
        marks = (self.config_file, '%s:' % self.ns_addr)
        pids = set()
        for name in os.listdir('/proc'):
            if not name.isdigit():
                continue
            cmd = processes.read_cmdline(int(name)) or []
            if 'fedex_sandbox.relay' in cmd and any(
                    a == marks[0] or a.startswith(marks[1]) for a in cmd):
                pids.add(int(name))
        return pids

    def down(self, keep_guard=False):
        """Remove the link, with whatever a killed run left of it.

        ``keep_guard``: leave the blackhole route (see guard()), for
        clients still configured with the faces' addresses.

        A run killed before its clean-up leaves its relay running, which
        (in the old form, inside the namespace) kept the namespace and the
        veth pair alive after ``ip netns del``: the next ``up`` of this
        number then failed with "File exists".
        """
        for pid in self._relays():
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        if self.exists():
            _ip('ip', 'netns', 'del', self.namespace)
        # Deleting one end of a veth pair deletes both.
        _ip('ip', 'link', 'del', self.root_dev, check=False)
        if keep_guard:
            self.guard()
        else:
            self.unguard()
        for path in (self.pid_file, self.config_file):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass


# --- what crosses the link, on the wire -------------------------------------

# TLS record content types (RFC 8446 5.1).
TLS_TYPES = {20: 'change_cipher_spec', 21: 'alert', 22: 'handshake',
             23: 'application_data'}
# The first bytes of QEMU's migration stream (QEMU_VM_FILE_MAGIC).
QEMU_MAGIC = b'QEVM'
ETH_P_ALL = 0x0003


def tls_records(data):
    """Walk TLS records from the start of ``data``.

    Returns ({content type name: count}, bytes covered by whole records).
    A stream that is TLS from its first byte is covered but for the tail
    of its last record; anything else stops the walk where it begins.
    """
    types, i = {}, 0
    while i + 5 <= len(data) and data[i] in TLS_TYPES and data[i + 1] == 3:
        length = int.from_bytes(data[i + 3:i + 5], 'big')
        if i + 5 + length > len(data):
            break
        name = TLS_TYPES[data[i]]
        types[name] = types.get(name, 0) + 1
        i += 5 + length
    return types, i


class TapStream(object):
    """One direction of a connection: its first bytes, in order."""

    def __init__(self, src, dst, limit):
        self.src, self.dst = src, dst
        self.limit = limit
        self.start = None           # sequence number of the first byte
        self.parts = {}             # offset -> bytes

    def add(self, seq, syn, payload):
        if syn:
            self.start = (seq + 1) & 0xffffffff
            return
        if self.start is None or not payload:
            return                  # joined mid-stream: not ours to judge
        offset = (seq - self.start) & 0xffffffff
        if offset < self.limit:
            self.parts[offset] = payload

    def data(self):
        """The bytes from the first on, up to the first one not seen."""
        out = bytearray()
        for offset in sorted(self.parts):
            if offset > len(out):
                break
            out += self.parts[offset][len(out) - offset:]
        return bytes(out[:self.limit])

    def describe(self):
        data = self.data()
        types, covered = tls_records(data)
        return {'src': self.src, 'dst': self.dst, 'bytes': len(data),
                'head': data[:8].hex(), 'tls_records': types,
                'tls_covered': covered, 'qemu_magic': QEMU_MAGIC in data}


class Tap(object):
    """The first bytes of each connection to some faces' ports, on the wire.

    Captures on the root namespace's end of the veth pair (AF_PACKET; root
    only), i.e. what crosses the link: each direction of each connection
    opened while the tap runs, from its first byte up to ``limit``
    bytes, reassembled by sequence number. To show what an eavesdropper on
    the link sees (``describe``): TLS records from the first byte, or
    QEMU's and libvirt's own protocols in the clear.
    """

    def __init__(self, device, servers, limit=64 << 10):
        """``servers``: {(face address, port): path} the connections go to."""
        self.device = device
        self.servers = dict(servers)
        self.limit = limit
        self.streams = {}           # (src, dst) -> TapStream
        self._sock = None
        self._thread = None
        self._stopping = False

    @classmethod
    def of_paths(cls, sandbox_wan, paths=('memory', 'control'), **kw):
        """A tap on the sandbox's link for the mappings of ``paths``."""
        servers = {(m['listen'], port): m['path']
                   for m in sandbox_wan.mappings() if m['path'] in paths
                   for port in relay.expand_ports(m['ports'])}
        return cls(sandbox_wan.link.root_dev, servers, **kw)

    def take(self, frame):
        """Account one Ethernet frame (IPv4/TCP to or from a server)."""
        if len(frame) < 34 or frame[12:14] != b'\x08\x00':
            return
        ip = frame[14:]
        ihl = (ip[0] & 15) * 4
        if ip[9] != 6 or len(ip) < ihl + 20:
            return
        tcp = ip[ihl:int.from_bytes(ip[2:4], 'big')]
        src = (socket.inet_ntoa(ip[12:16]), int.from_bytes(tcp[0:2], 'big'))
        dst = (socket.inet_ntoa(ip[16:20]), int.from_bytes(tcp[2:4], 'big'))
        if src not in self.servers and dst not in self.servers:
            return
        key = (src, dst)
        stream = self.streams.get(key)
        if stream is None:
            stream = self.streams[key] = TapStream(src, dst, self.limit)
        stream.add(int.from_bytes(tcp[4:8], 'big'), bool(tcp[13] & 0x02),
                   tcp[(tcp[12] >> 4) * 4:])

    def start(self):
        self._sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW,
                                   socket.htons(ETH_P_ALL))
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
        self._sock.bind((self.device, 0))
        self._sock.settimeout(0.2)
        self._thread = threading.Thread(target=self._run, name='wan-tap',
                                        daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stopping:
            try:
                # More than 64 KiB: a GSO frame of the veth is up to 64 KiB
                # of IP plus its Ethernet header.
                frame = self._sock.recv(1 << 17)
            except socket.timeout:
                continue
            except OSError:
                break
            self.take(frame)

    def stop(self):
        """Stop capturing; returns ``describe()``."""
        self._stopping = True
        if self._thread is not None:
            self._thread.join()
        if self._sock is not None:
            self._sock.close()
        return self.describe()

    def describe(self):
        """Per direction of each connection: what its first bytes were."""
        out = []
        for s in self.streams.values():
            if s.start is not None:
                d = s.describe()
                d['path'] = self.servers.get(s.dst) or self.servers.get(s.src)
                d['to_server'] = s.dst in self.servers
                out.append(d)
        return out


def by_path(stats):
    """{path: {'sent': n, 'received': n}} from a relay's stats."""
    out = {p: {'sent': 0, 'received': 0} for p in PATHS}
    for m in ((stats or {}).get('mappings') or {}).values():
        entry = out.setdefault(m.get('path') or '-',
                               {'sent': 0, 'received': 0})
        entry['sent'] += m['sent']
        entry['received'] += m['received']
    return out


def difference(before, after):
    """Bytes per path between two ``by_path`` results."""
    return {p: {k: after[p][k] - before.get(p, {}).get(k, 0)
                for k in ('sent', 'received')} for p in after}


# --- the sandbox's link ----------------------------------------------------

# Offsets of the terminals' ports the terminal faces forward: the sandbox's
# terminals (+300..+349) and the tests' and benchmarks' (+600..+999).
TERMINAL_PORT_RANGES = ((300, 349), (600, 999))
CATCHUP_FACE = 3
FINAL_DELTA_FACE = 4
HOST_FACE_FIRST = 10
# The mini-cloud's link until the operator says otherwise: fast, so that
# the tests run with it and stay quick.
DEFAULT_RATE_MBIT = 1000
DEFAULT_DELAY_MS = 1.0


class SandboxWan(object):
    """The sandbox's link 0 between the sites, and where its faces are.

    Faces: 10.77.N.3 for LSRP catch-up to any terminal, 10.77.N.4 for the
    final delta, 10.77.N.(10+i) for compute host i (its libvirtd's TLS
    port and its QEMU incoming ports; both carry TLS only). The operator's
    rate and delay are kept in ``<sandbox>/run/wan.json``: a later ``up``
    brings the link back as it was.
    """

    def __init__(self, sb):
        self.sb = sb
        self.link = Wan(sb.run_dir, sb.wan_number(0))
        self.settings_file = os.path.join(sb.run_dir, 'wan.json')

    # --- addresses ---------------------------------------------------------

    def catchup_face(self):
        return self.link.face(CATCHUP_FACE)

    def final_delta_face(self):
        return self.link.face(FINAL_DELTA_FACE)

    def host_face(self, index):
        return self.link.face(HOST_FACE_FIRST + index)

    def _hosts(self):
        base_port = self.sb.base_port
        return [(compute_hosts.name(site, number), index,
                 compute_hosts.address(base_port, index),
                 ports.migration_range(index))
                for site, number, index in compute_hosts.layout(
                    s.name for s in self.sb.sites)]

    def mappings(self):
        sb = self.sb
        out = []
        term = [[sb.port(lo), sb.port(hi)] for lo, hi in TERMINAL_PORT_RANGES]
        for name, face in (('catch-up', self.catchup_face()),
                           ('final-delta', self.final_delta_face())):
            out.append({'name': 'terminals/%s' % name, 'path': name,
                        'listen': face, 'target': '127.0.0.1',
                        'ports': term})
        for name, index, address, (lo, hi) in self._hosts():
            face = self.host_face(index)
            # libvirtd's TLS port only: its plain TCP port is for the
            # host's own nova-compute, never across the sites.
            out.append({'name': '%s/control' % name, 'path': 'control',
                        'listen': face, 'target': address,
                        'ports': [sb.port(ports.offset('libvirtd-tls'))]})
            out.append({'name': '%s/memory' % name, 'path': 'memory',
                        'listen': face, 'target': address,
                        'ports': [[sb.port(lo), sb.port(hi)]]})
        return out

    # --- state -------------------------------------------------------------

    def settings(self):
        try:
            with open(self.settings_file) as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def enabled(self):
        """The sandbox's traffic between sites goes through the link."""
        return self.settings() is not None

    def _save(self, rate_mbit, delay_ms, every_migration_to):
        os.makedirs(self.sb.run_dir, exist_ok=True)
        tmp = self.settings_file + '.tmp'
        with open(tmp, 'w') as f:
            json.dump({'rate_mbit': rate_mbit, 'delay_ms': delay_ms,
                       'every_migration_to': every_migration_to}, f)
        os.replace(tmp, self.settings_file)

    # --- commands ----------------------------------------------------------

    def up(self, rate_mbit=None, delay_ms=None, every_migration_to=None):
        """Bring the link up, or reshape it if it runs.

        Unset values: the last ones asked for (wan.json), else the
        defaults. A running link is reshaped in place (tbf replaced, the
        relay's delay changed by SIGHUP): migrations in flight go on.
        ``every_migration_to``: hosts whose every incoming live migration
        (not only a cutover's) crosses the link (the benchmarks' reference:
        a plain migration inside a site over the same link); their
        nova-compute takes it at the next ``up --openstack``.
        Returns (what was done, rate, delay).
        """
        saved = self.settings() or {}
        rate = rate_mbit or saved.get('rate_mbit') or DEFAULT_RATE_MBIT
        delay = delay_ms if delay_ms is not None else saved.get(
            'delay_ms', DEFAULT_DELAY_MS)
        if every_migration_to is None:
            every_migration_to = saved.get('every_migration_to') or []
        self._save(rate, delay, sorted(every_migration_to))
        link = self.link
        if link.running():
            link.set_rate(rate)
            conf = link.config() or {}
            if conf.get('mappings') != self.mappings():
                link.set_mappings(self.mappings())
            link.set_delay(delay)
            return 'reshaped', rate, delay
        link.up(rate, delay, mappings=self.mappings())
        return 'started', rate, delay

    def ensure(self):
        """``up`` of the mini-cloud: the link as last asked, or the default.

        Returns what was done: 'running', 'started' or 'updated'.
        """
        saved = self.settings()
        if saved is not None and self.link.running():
            conf = self.link.config() or {}
            if conf.get('mappings') != self.mappings():
                self.link.set_mappings(self.mappings())
                return 'updated'
            return 'running'
        saved = saved or {}
        self.up(saved.get('rate_mbit'), saved.get('delay_ms'),
                saved.get('every_migration_to'))
        return 'started'

    def down(self, keep_guard=None):
        """Remove the link; the sandbox's traffic goes back to loopback.

        Processes started with the faces in their configuration (the
        mini-cloud's computes) keep them until restarted: the blackhole
        route stays while the cloud exists, so that nothing leaks.
        """
        if keep_guard is None:
            keep_guard = self.sb.cloud().exists()
        self.link.down(keep_guard=keep_guard)
        try:
            os.unlink(self.settings_file)
        except FileNotFoundError:
            pass

    def stats(self):
        return self.link.stats()

    def describe(self):
        """Lines for ``wan-stats``: the link and the bytes per path."""
        shape = self.link.shape() if self.link.exists() else None
        lines = []
        if shape is None:
            lines.append('WAN: not up')
        else:
            lines.append('WAN %s: %g Mbit/s, %g ms one way%s' % (
                self.link.namespace, shape[0], shape[1],
                ' (CUT)' if self.link.is_cut() else ''))
        stats = self.stats()
        if stats:
            lines.append('bytes since the relay started (pid %d):'
                         % stats['pid'])
            for path, b in sorted(by_path(stats).items()):
                lines.append('  %-12s %14d sent %14d received' % (
                    path, b['sent'], b['received']))
        return lines


def sandbox_lsrp_address(sb, port):
    """HOST:PORT other terminals reach a terminal of ``sb`` on ``port`` at.

    Its catch-up face when the sandbox's WAN is on, else loopback.
    """
    w = SandboxWan(sb)
    host = w.catchup_face() if w.enabled() else '127.0.0.1'
    return '%s:%d' % (host, port)
