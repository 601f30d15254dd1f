"""Phases run as jobs by the conductor (taskflow's, as fedex-conductor
runs it): the poster's logbook, the engine, the conductor's log. The
jobboard and ZooKeeper's locks are faked; the terminals are faked at the
RPC client (the real thing: tests/functional/manager)."""

import datetime
import logging
import types
import uuid

import fixtures
from oslo_config import cfg
from taskflow.persistence import backends as persistence_backends

from fedex_manager.actions import migrations as migration_actions
from fedex_manager.conductor import jobboard
from fedex_manager.conductor import periodics
from fedex_manager.db import api as db
from fedex_manager import jobs
from fedex_manager import shipments
from fedex_manager import states
from tests.unit.fedex_manager import test_shipments

CONF = cfg.CONF


class FreeLock(object):

    def acquire(self, timeout=None, blocking=True):
        return True

    def release(self):
        pass

    def contenders(self):
        return []


class FakeZK(object):

    def Lock(self, path, identifier=None):
        return FreeLock()


class FakeBoard(object):
    """Keeps the jobs posted; the conductor is handed them one by one.

    ``live``: the jobs the sweeper sees on the board.
    """

    def __init__(self):
        self.posted, self.live = [], []

    def iterjobs(self, ensure_fresh=False):
        return iter(self.live)

    def post(self, name, book=None, details=None):
        job = types.SimpleNamespace(name=name, uuid=str(uuid.uuid4()),
                                    book=book, details=details)
        self.posted.append(job)
        return job


class ConductorJobsTestCase(test_shipments.ShipmentsTestCase):

    def setUp(self):
        super().setUp()
        backend = persistence_backends.fetch({'connection': 'memory://'})
        self.board, zk = FakeBoard(), FakeZK()
        jobs.set_poster(jobboard.Poster(backend, self.board, zk, CONF))
        self.conductor = jobboard.OneRunConductor(
            zk, CONF, 'test-conductor', self.board, persistence=backend,
            engine='serial')
        self.log = self.useFixture(fixtures.FakeLogger(
            level=logging.INFO, format='%(levelname)s %(name)s %(message)s'))

    def posts_of(self, ids):
        return [j for j in self.board.posted
                if j.details['migration_id'] in ids]

    def run_job(self, m, phase):
        """Post the phase and run its job as the conductor does."""
        jobs.post(self.ctx, m['id'], phase)
        job = self.board.posted[-1]
        self.board.live = [job]
        try:
            consumed = self.conductor._dispatch_job(job)
        finally:
            self.board.live = []
        return consumed, db.get(self.ctx, 'migration', m['id'])


class TestParkLogged(ConductorJobsTestCase):

    def test_a_follower_parks_in_one_info_line(self):
        made = migration_actions.migrations_create(self.ctx, [
            {'servers': [{'server_id': 'vm%d' % i,
                          'volumes': ['vms/clone%d' % i]}],
             'source_site': 'site-a', 'dest_site': 'site-b'}
            for i in (1, 2)], one_shipment=True)
        # The group's order (created in the same second: by id).
        lead, follower = shipments.members(self.ctx, made[0])
        consumed, m = self.run_job(follower, 'prepare')
        self.assertEqual(states.REQUESTED, m['state'])
        self.assertIsNone(m['last_error'])
        # Its job ended (taken off the board) with nothing done.
        self.assertTrue(consumed)
        self.assertEqual([], self.ops('snapshot'))
        out = self.log.output
        self.assertNotIn('Traceback', out)
        self.assertNotIn('ERROR', out)
        self.assertNotIn('WARNING', out)
        parked = [x for x in out.splitlines() if 'parked' in x]
        self.assertEqual(1, len(parked), out)
        self.assertTrue(parked[0].startswith('INFO '), parked)
        self.assertIn('phase prepare parked: shipment group %s: migration '
                      '%s packs the group\'s shipments; the leader moves it '
                      'on' % (follower['options']['shipment_group'],
                              lead['id']), parked[0])

    def test_a_real_failure_keeps_its_warning_and_traceback(self):
        self.terminals.fail['snapshot'] = 'disk on fire'
        consumed, m = self.run_job(self.m, 'prepare')
        self.assertEqual(states.FAILED, m['state'])
        out = self.log.output
        self.assertIn('WARNING taskflow.conductors.backends.impl_executor '
                      'Job execution failed', out)
        self.assertIn('Traceback', out)
        self.assertIn('disk on fire', out)

    def test_a_pack_short_of_devices_says_a_sweep_posts_it(self):
        # Pack parks too (3 devices there, a parity of 2 needs 4).
        m = migration_actions.migration_create(
            self.ctx, [{'server_id': 'vm9', 'volumes': ['vms/d9']}],
            'site-a', 'site-b', options={'parity': 2})
        consumed, m = self.run_job(m, 'prepare')
        self.assertEqual(states.EXPORTING, m['state'])
        out = self.log.output
        self.assertNotIn('Traceback', out)
        self.assertNotIn('WARNING', out)
        parked = [x for x in out.splitlines() if 'parked' in x]
        self.assertEqual(1, len(parked), out)
        self.assertIn('waiting for 4 blank devices at term-a (3 there); a '
                      'sweep posts it again', parked[0])


class TestFollowersMovedOnByTheLeader(ConductorJobsTestCase):

    def test_no_follower_posted_while_the_leader_packs_for_it(self):
        CONF.set_override('sweep_interval', 1, group='conductor')
        self.addCleanup(CONF.clear_override, 'sweep_interval',
                        group='conductor')
        made = migration_actions.migrations_create(self.ctx, [
            {'servers': [{'server_id': 'vm%d' % i,
                          'volumes': ['vms/clone%d' % i]}],
             'source_site': 'site-a', 'dest_site': 'site-b'}
            for i in (1, 2, 3)], one_shipment=True)
        # The group's order (created in the same second: by id).
        made = shipments.members(self.ctx, made[0])
        lead, followers = made[0], made[1:]
        ids = {m['id'] for m in made}
        for f in followers:
            self.assertEqual(states.REQUESTED,
                             self.run_job(f, 'prepare')[1]['state'])
        sweeper = periodics.Sweeper(self.board, FakeZK(), 'sweeper-t')
        swept = []
        result = self.terminals.result

        def sweep_meanwhile(kind, params):
            # The leader's job runs (on the board); every state older than
            # the sweeper's grace.
            since = datetime.datetime.utcnow() - datetime.timedelta(hours=1)
            for m in made:
                db.update(self.ctx, 'migration', m['id'],
                          {'updated_at': since})
            before = len(self.board.posted)
            periodics.repost_lost_phases(sweeper, self.ctx)
            # (Not the base class's migration, REQUESTED past the grace.)
            swept.append((kind, [j.details['migration_id']
                                 for j in self.board.posted[before:]
                                 if j.details['migration_id'] in ids]))
            return result(kind, params)
        self.terminals.result = sweep_meanwhile
        posts = len(self.posts_of(ids))
        self.assertEqual(states.SEALED, self.run_job(lead, 'prepare')[1][
            'state'])
        # A sweep at each of the leader's operations posted nothing.
        self.assertEqual([('snapshot', []), ('export', []), ('seal', [])],
                         swept)
        self.assertEqual(posts + 1, len(self.posts_of(ids)))
        # The leader moved its followers on: sealed, in its shipment.
        for f in followers:
            f = db.get(self.ctx, 'migration', f['id'])
            self.assertEqual(states.SEALED, f['state'])
        self.assertEqual(1, len(self.ops('export')))
        self.assertNotIn('Traceback', self.log.output)
