"""An emulated WAN between the sandbox's two terminals.

::

    root namespace                       namespace fedex-wan<N>
    lsrp-server (site-b)  10.77.N.1 ===veth, tbf=== 10.77.N.2  relay
    source terminal  ------------------------------------->  relay:port
                                                   -> 10.77.0.1:port

A source connects to the relay at 10.77.N.2; the relay forwards to the
destination terminal listening on 10.77.N.1. Both directions cross the veth
pair, whose two ends carry a ``tbf`` rate limit. Only these two addresses,
made here, carry traffic. Links of different numbers N are independent.
"""

import os
import signal
import subprocess
import sys
import time

from fedex_sandbox import processes
from lsrp import exception


def _ip(*args, ns=None, check=True):
    cmd = (['ip', 'netns', 'exec', ns] if ns else []) + list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise exception.SandboxError(reason='"%s" failed: %s' % (
            ' '.join(cmd), proc.stderr.strip()))
    return proc


class Wan(object):

    def __init__(self, run_dir, number=0):
        if not 0 <= number <= 255:
            raise exception.SandboxError(reason='WAN number %d is not in '
                                         '0-255' % number)
        self.run_dir = run_dir
        self.namespace = 'fedex-wan%d' % number
        self.root_dev, self.ns_dev = 'fxwan%da' % number, 'fxwan%db' % number
        self.root_addr = '10.77.%d.1' % number
        self.ns_addr = '10.77.%d.2' % number

    def exists(self):
        return self.namespace in _ip('ip', 'netns', 'list').stdout.split()

    def up(self, rate_mbit=100, delay_ms=0, port=15500):
        """Make the namespace, the veth pair with tbf, and start the relay.

        Returns (address, port) that sources connect to.
        """
        self.down()
        _ip('ip', 'netns', 'add', self.namespace)
        try:
            _ip('ip', 'link', 'add', self.root_dev, 'type', 'veth', 'peer',
                'name', self.ns_dev)
            _ip('ip', 'link', 'set', self.ns_dev, 'netns', self.namespace)
            _ip('ip', 'addr', 'add', self.root_addr + '/30', 'dev', self.root_dev)
            _ip('ip', 'link', 'set', self.root_dev, 'up')
            _ip('ip', 'addr', 'add', self.ns_addr + '/30', 'dev', self.ns_dev, ns=self.namespace)
            _ip('ip', 'link', 'set', self.ns_dev, 'up', ns=self.namespace)
            _ip('ip', 'link', 'set', 'lo', 'up', ns=self.namespace)
            self.set_rate(rate_mbit)
            os.makedirs(self.run_dir, exist_ok=True)
            out = open(os.path.join(self.run_dir, 'wan-relay.out'), 'ab')
            subprocess.Popen(
                ['ip', 'netns', 'exec', self.namespace, sys.executable, '-m',
                 'fedex_sandbox.relay', '--listen', '%s:%d' % (self.ns_addr, port),
                 '--target', '%s:%d' % (self.root_addr, port), '--delay-ms',
                 str(delay_ms)], stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)
            self._wait_listening(port)
        except Exception:
            self.down()
            raise
        return self.ns_addr, port

    def _wait_listening(self, port, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ss = _ip('ss', '-ltn', ns=self.namespace).stdout
            if ':%d ' % port in ss:
                return
            time.sleep(0.05)
        raise exception.SandboxError(reason='the WAN relay did not start; '
                                     'see %s' % self.run_dir)

    def set_rate(self, rate_mbit):
        """Set (or change) the tbf rate on both ends of the link."""
        for ns, dev in ((None, self.root_dev),
                        (self.namespace, self.ns_dev)):
            _ip('tc', 'qdisc', 'replace', 'dev', dev, 'root', 'tbf',
                'rate', '%dmbit' % rate_mbit, 'burst', '64kb',
                'latency', '200ms', ns=ns)

    def _relays(self):
        """Pids of the relays listening on this link's address."""
        listen = '%s:' % self.ns_addr
        pids = set()
        for name in os.listdir('/proc'):
            if not name.isdigit():
                continue
            cmd = processes.read_cmdline(int(name)) or []
            if 'fedex_sandbox.relay' in cmd and any(
                    a.startswith(listen) for a in cmd):
                pids.add(int(name))
        return pids

    def down(self):
        """Remove the link, with whatever a killed run left of it.

        A run killed before its clean-up leaves its relay running in the
        namespace, which keeps the namespace and the veth pair alive after
        ``ip netns del``: the next ``up`` of this number then failed with
        "File exists".
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
