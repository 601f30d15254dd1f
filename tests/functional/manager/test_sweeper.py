"""The sweeper re-posts a phase only when ZooKeeper says its job is gone.

Real MariaDB and ZooKeeper; no conductor runs, so nothing claims the
jobs: the test sees every post the sweeper makes.
"""

import os
import signal
import subprocess
import sys
import time

from oslo_config import cfg

from lsrp.manager import actions
from lsrp.manager import conductor
from lsrp.manager.db import api as db
from lsrp.manager import states
from tests.functional.manager import base

CONF = cfg.CONF

# Takes a lock as a poster or a running job would, then sleeps: a process
# that is late (loaded machine), not dead, until it is killed.
HOLDER = '''
import sys, time
from kazoo import client
zk = client.KazooClient(hosts=sys.argv[1], timeout=float(sys.argv[3]))
zk.start(timeout=30)
lock = zk.Lock(sys.argv[2], 'late-holder')
lock.acquire(timeout=30)
print('held', flush=True)
time.sleep(600)
'''


class TestSweeper(base.ManagerTestCase):

    def setUp(self):
        super().setUp()
        CONF.set_override('sweep_interval', 1, group='conductor')
        self.zk = conductor.zk_client(CONF)
        self.addCleanup(self.zk.stop)
        self.sweeper = conductor.Sweeper(self.board, self.zk, 'sweeper-t')

    def jobs_of(self, m):
        return sorted(j.details['generation'] for j in
                      self.board.iterjobs(ensure_fresh=True)
                      if j.details.get('migration_id') == m['id'])

    def hold(self, kind, m):
        """A process holding the migration's ``kind`` lock; kill it."""
        proc = subprocess.Popen(
            [sys.executable, '-c', HOLDER, ','.join(CONF.jobboard.hosts),
             conductor.lock_path(kind, m['id']),
             str(CONF.jobboard.session_timeout)],
            stdout=subprocess.PIPE, text=True)
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        self.assertEqual('held', proc.stdout.readline().strip())
        return proc

    def test_late_post_or_running_job_is_not_posted_again(self):
        for site in ('site-a', 'site-b'):
            actions.terminal_register(self.ctx, 'term-%s' % site, site)
        _, name = self.new_image(4 * base.MiB)
        specs = ['vms/%s' % name]
        m = actions.migration_create(
            self.ctx, [{'server_id': 'vm-%s' % self.id_, 'volumes': specs}],
            'site-a', 'site-b', start=False)
        self.assertEqual(states.REQUESTED, m['state'])
        time.sleep(1.5)   # older than the grace: only ZooKeeper decides
        for kind in ('post', 'run'):
            # A poster (or a job of the migration) that is only late.
            proc = self.hold(kind, m)
            self.sweeper.sweep()
            self.sweeper.sweep()
            self.assertEqual([], self.jobs_of(m), kind)
            self.assertEqual(m['generation'], db.get(
                self.ctx, 'migration', m['id'])['generation'])
            # kill -9: ZooKeeper ends its session after session_timeout.
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            self.dep.wait(lambda: not conductor.busy(self.zk, m['id']),
                          3 * CONF.jobboard.session_timeout + 10,
                          'the dead holder\'s session to end')
        time.sleep(1.5)
        self.sweeper.sweep()
        # Posted once, and not again while that job is on the board.
        self.sweeper.sweep()
        gen = db.get(self.ctx, 'migration', m['id'])['generation']
        self.assertEqual([gen], self.jobs_of(m))
        self.assertEqual(m['generation'] + 1, gen)
