#!/usr/bin/env python3
"""After 'fedex-sandbox destroy': nothing of the sandbox may still run.

Fails (exit 1, naming them) if a process still has the sandbox directory in
its command line or environment, or anything listens on the sandbox's first
1000 ports (sites, services, cloud, terminals). CI runs it last.
"""

import os
import sys

from fedex_sandbox import opts
from fedex_sandbox import processes


def main():
    root = os.environ.get(opts.DIR_ENV, opts.DEFAULT_DIR)
    base = int(os.environ.get(opts.BASE_PORT_ENV) or opts.DEFAULT_BASE_PORT)
    left = []
    for pid in filter(str.isdigit, os.listdir('/proc')):
        pid = int(pid)
        if pid == os.getpid():
            continue
        cmd = processes.read_cmdline(pid)
        if cmd is None:
            continue
        try:
            with open('/proc/%d/environ' % pid, 'rb') as f:
                env = f.read()
        except OSError:
            env = b''
        # Paths under the sandbox (HOME=<root>/services/rabbitmq...), not a
        # shell that merely names it in FEDEX_SANDBOX_DIR.
        # root + '/': another sandbox whose directory merely starts with
        # ours (/var/tmp/fedex-ci and /var/tmp/fedex-ci-2) is not ours.
        if (root + '/') in ' '.join(cmd) or (root + '/').encode() in env:
            left.append('pid %d: %s' % (pid, ' '.join(cmd)[:150]))
    for port in range(base, base + 1000):
        pid = processes.listening_pid(port)
        if pid:
            left.append('port %d: pid %d %s' % (
                port, pid, ' '.join(processes.read_cmdline(pid) or [])[:120]))
    if os.path.exists(root):
        left.append('directory %s still exists' % root)
    for line in left:
        print('left behind: %s' % line, file=sys.stderr)
    print('check_no_leftovers: %s' % ('FAILED' if left else 'nothing left'))
    return 1 if left else 0


if __name__ == '__main__':
    sys.exit(main())
