"""The sweeper re-posts a phase only when ZooKeeper says its job is gone.

Real MariaDB and ZooKeeper; no conductor runs, so nothing claims the
jobs: the test sees every post the sweeper makes.
"""

import os
import signal
import subprocess
import sys
import threading
import time
import types

import fixtures
from oslo_config import cfg

from fedex_manager.actions import migrations

from fedex_manager.actions import sites
from fedex_manager.conductor import jobboard
from fedex_manager.conductor import periodics
from fedex_manager.db import api as db
from fedex_manager import states
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
        self.zk = jobboard.zk_client(CONF)
        self.addCleanup(self.zk.stop)
        self.sweeper = periodics.Sweeper(self.board, self.zk, 'sweeper-t')

    def jobs_of(self, m):
        return sorted(j.details['generation'] for j in
                      self.board.iterjobs(ensure_fresh=True)
                      if j.details.get('migration_id') == m['id'])

    def hold(self, kind, m):
        """A process holding the migration's ``kind`` lock; kill it."""
        proc = subprocess.Popen(
            [sys.executable, '-c', HOLDER, ','.join(CONF.jobboard.hosts),
             jobboard.lock_path(kind, m['id']),
             str(CONF.jobboard.session_timeout)],
            stdout=subprocess.PIPE, text=True)
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        self.assertEqual('held', proc.stdout.readline().strip())
        return proc

    def new_migration(self):
        for site in ('site-a', 'site-b'):
            sites.terminal_register(self.ctx, 'term-%s' % site, site)
        _, name = self.new_image(4 * base.MiB)
        return migrations.migration_create(
            self.ctx, [{'server_id': 'vm-%s' % self.id_,
                        'volumes': ['vms/%s' % name]}],
            'site-a', 'site-b', start=False)

    def test_second_job_of_a_migration_waits_for_the_first(self):
        """A conductor runs a job only when no other job of it runs."""
        m = self.new_migration()
        proc = self.hold('run', m)      # the first job, on a conductor
        ran = []
        self.useFixture(fixtures.MonkeyPatch(
            'taskflow.conductors.backends.impl_executor.ExecutorConductor.'
            '_dispatch_job', lambda self_, job: ran.append('ran') or True))
        c = jobboard.OneRunConductor(
            self.zk, CONF, 'conductor-t', self.board, engine='serial',
            max_simultaneous_jobs=1, wait_timeout=0.2)
        job = types.SimpleNamespace(name='prepare-%s-2' % m['id'],
                                    details={'migration_id': m['id']})
        t = threading.Thread(target=lambda: ran.append(c._dispatch_job(job)))
        t.start()
        time.sleep(8)       # more than one of its 5 s waits for the lock
        self.assertEqual([], ran)
        # Its conductor killed: the session ends, the second job runs.
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        t.join(3 * CONF.jobboard.session_timeout + 20)
        self.assertEqual(['ran', True], ran)
        self.assertEqual([], jobboard.busy(self.zk, m['id']))

    def test_late_post_or_running_job_is_not_posted_again(self):
        m = self.new_migration()
        self.assertEqual(states.REQUESTED, m['state'])
        time.sleep(1.5)   # older than the grace: only ZooKeeper decides
        for kind in ('post', 'run'):
            # A poster (or a job of the migration) that is only late.
            proc = self.hold(kind, m)
            self.sweeper.run(periodics.repost_lost_phases)
            self.sweeper.run(periodics.repost_lost_phases)
            self.assertEqual([], self.jobs_of(m), kind)
            self.assertEqual(m['generation'], db.get(
                self.ctx, 'migration', m['id'])['generation'])
            # kill -9: ZooKeeper ends its session after session_timeout.
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            self.dep.wait(lambda: not jobboard.busy(self.zk, m['id']),
                          3 * CONF.jobboard.session_timeout + 10,
                          'the dead holder\'s session to end')
        time.sleep(1.5)
        self.sweeper.run(periodics.repost_lost_phases)
        # Posted once, and not again while that job is on the board.
        self.sweeper.run(periodics.repost_lost_phases)
        gen = db.get(self.ctx, 'migration', m['id'])['generation']
        self.assertEqual([gen], self.jobs_of(m))
        self.assertEqual(m['generation'] + 1, gen)

    def test_lock_znodes_of_ended_migrations_are_removed(self):
        """COMPLETED, ABORTED or CLEANED: no lock znodes left behind.

        A held lock (a contender) stays, as do the locks of a migration
        still at work.
        """
        ended, working = self.new_migration(), self.new_migration()
        root = '%s-locks' % CONF.jobboard.path
        for m in (ended, working):
            for kind in ('post', 'run'):
                self.zk.ensure_path(jobboard.lock_path(kind, m['id']))
        with db.writer(self.ctx) as session:     # where they got to
            db._get(session, 'migration', ended['id']).state = \
                states.ABORTED
            db._get(session, 'migration', working['id']).state = \
                states.EXPORTING
        proc = self.hold('run', ended)          # a phase still ending
        self.sweeper.run(periodics.remove_ended_locks)
        mine = sorted(n for n in self.zk.get_children(root)
                      if n.partition('-')[2] in (ended['id'], working['id']))
        self.assertEqual(sorted(['run-' + ended['id'],
                                 'post-' + working['id'],
                                 'run-' + working['id']]), mine)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        self.dep.wait(lambda: not jobboard.busy(self.zk, ended['id']),
                      3 * CONF.jobboard.session_timeout + 10,
                      'the dead holder\'s session to end')
        self.sweeper.run(periodics.remove_ended_locks)
        mine = sorted(n for n in self.zk.get_children(root)
                      if n.partition('-')[2] in (ended['id'], working['id']))
        self.assertEqual(sorted(['post-' + working['id'],
                                 'run-' + working['id']]), mine)
