"""An emulated WAN between the sandbox's two terminals.

::

    root namespace                       namespace fedex-wan
    lsrp-server (site-b)  10.77.0.1 ===veth, tbf=== 10.77.0.2  relay
    source terminal  ------------------------------------->  relay:port
                                                   -> 10.77.0.1:port

A source connects to the relay at 10.77.0.2; the relay forwards to the
destination terminal listening on 10.77.0.1. Both directions cross the veth
pair, whose two ends carry a ``tbf`` rate limit. Only these two addresses,
made here, carry traffic.
"""

import os
import signal
import subprocess
import sys
import time

from lsrp import exception
from lsrp.sandbox import processes

NAMESPACE = 'fedex-wan'
ROOT_DEV, NS_DEV = 'fxwan0', 'fxwan1'
ROOT_ADDR, NS_ADDR = '10.77.0.1', '10.77.0.2'


def _ip(*args, ns=False, check=True):
    cmd = (['ip', 'netns', 'exec', NAMESPACE] if ns else []) + list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise exception.SandboxError(reason='"%s" failed: %s' % (
            ' '.join(cmd), proc.stderr.strip()))
    return proc


class Wan(object):

    def __init__(self, run_dir):
        self.run_dir = run_dir
        self.pidfile = os.path.join(run_dir, 'wan-relay.pid')

    def exists(self):
        return NAMESPACE in _ip('ip', 'netns', 'list').stdout.split()

    def up(self, rate_mbit=100, delay_ms=0, port=15500):
        """Make the namespace, the veth pair with tbf, and start the relay.

        Returns (address, port) that sources connect to.
        """
        self.down()
        _ip('ip', 'netns', 'add', NAMESPACE)
        try:
            _ip('ip', 'link', 'add', ROOT_DEV, 'type', 'veth', 'peer',
                'name', NS_DEV)
            _ip('ip', 'link', 'set', NS_DEV, 'netns', NAMESPACE)
            _ip('ip', 'addr', 'add', ROOT_ADDR + '/30', 'dev', ROOT_DEV)
            _ip('ip', 'link', 'set', ROOT_DEV, 'up')
            _ip('ip', 'addr', 'add', NS_ADDR + '/30', 'dev', NS_DEV, ns=True)
            _ip('ip', 'link', 'set', NS_DEV, 'up', ns=True)
            _ip('ip', 'link', 'set', 'lo', 'up', ns=True)
            self.set_rate(rate_mbit)
            os.makedirs(self.run_dir, exist_ok=True)
            out = open(os.path.join(self.run_dir, 'wan-relay.out'), 'ab')
            relay = subprocess.Popen(
                ['ip', 'netns', 'exec', NAMESPACE, sys.executable, '-m',
                 'lsrp.sandbox.relay', '--listen', '%s:%d' % (NS_ADDR, port),
                 '--target', '%s:%d' % (ROOT_ADDR, port), '--delay-ms',
                 str(delay_ms)], stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True)
            with open(self.pidfile, 'w') as f:
                f.write('%d\n' % relay.pid)
            self._wait_listening(port)
        except Exception:
            self.down()
            raise
        return NS_ADDR, port

    def _wait_listening(self, port, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ss = _ip('ss', '-ltn', ns=True).stdout
            if ':%d ' % port in ss:
                return
            time.sleep(0.05)
        raise exception.SandboxError(reason='the WAN relay did not start; '
                                     'see %s' % self.run_dir)

    def set_rate(self, rate_mbit):
        """Set (or change) the tbf rate on both ends of the link."""
        for ns, dev in ((False, ROOT_DEV), (True, NS_DEV)):
            _ip('tc', 'qdisc', 'replace', 'dev', dev, 'root', 'tbf',
                'rate', '%dmbit' % rate_mbit, 'burst', '64kb',
                'latency', '200ms', ns=ns)

    def down(self):
        try:
            with open(self.pidfile) as f:
                pid = int(f.read())
            cmd = processes.read_cmdline(pid) or []
            if 'lsrp.sandbox.relay' in cmd:
                os.kill(pid, signal.SIGTERM)
            os.unlink(self.pidfile)
        except (FileNotFoundError, ValueError, ProcessLookupError):
            pass
        if self.exists():
            # The veth pair goes with the namespace.
            _ip('ip', 'netns', 'del', NAMESPACE)
