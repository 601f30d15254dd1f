#!/usr/bin/env python3
"""What one look at the jobboard costs the sweeper, by jobs on the board.

    FEDEX_SANDBOX_DIR=/var/tmp/fedex-scale FEDEX_SANDBOX_BASE_PORT=26000 \\
    python tests/benchmarks/jobboard_bench.py [--jobs 100,1000]

Posts that many jobs on a ZooKeeper jobboard of its own (the sandbox's
shared ZooKeeper, started if needed) and times, three times each, the two
ways of listing them fresh: taskflow's ``iterjobs(ensure_fresh=True)``
(what the sweeper used: it also reads each job's state, a ZooKeeper round
trip or two per job) and the refreshed list the sweeper reads now
(:meth:`fedex_manager.conductor.periodics.Sweeper.live_jobs`). Removes
its jobs at the end.
"""

import argparse
import time
import types
import uuid

from kazoo import client as kazoo_client
from taskflow.jobs import backends as job_backends
from taskflow.persistence import backends as persistence_backends

from fedex_manager.conductor import periodics
from fedex_sandbox.services import shared


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--jobs', default='100,1000')
    args = p.parse_args()
    services = shared.SharedServices.from_env()
    services.up()
    hosts = services.zookeeper_hosts()
    zk = kazoo_client.KazooClient(hosts=hosts)
    zk.start()
    root = '/jobboard-bench-%s' % uuid.uuid4().hex[:6]
    try:
        for n in [int(x) for x in args.jobs.split(',')]:
            board = job_backends.fetch(
                'bench', {'board': 'zookeeper', 'hosts': hosts,
                          'path': '%s/%d' % (root, n),
                          'check_compatible': False},
                persistence=persistence_backends.fetch(
                    {'connection': 'memory://'}), client=zk)
            board.connect()
            for i in range(n):
                board.post('job-%d' % i, details={
                    'migration_id': str(uuid.uuid4()), 'generation': 1})
            sweeper = types.SimpleNamespace(board=board)
            for label, look in (
                    ('iterjobs(ensure_fresh=True)', lambda: {
                        (j.details or {}).get('migration_id')
                        for j in board.iterjobs(ensure_fresh=True)}),
                    ('Sweeper.live_jobs()', lambda: periodics.Sweeper.
                     live_jobs(sweeper))):
                look()
                begin = time.perf_counter()
                for _ in range(3):
                    found = look()
                took = (time.perf_counter() - begin) / 3
                print('%5d jobs: %-28s %7.3f s a look (%d found)' % (
                    n, label, took, len(found)))
            board.close()
    finally:
        zk.delete(root, recursive=True)
        zk.stop()
        zk.close()


if __name__ == '__main__':
    main()
