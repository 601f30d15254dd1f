"""What nova_fedex asks of fedex-api at a cutover (in process)."""

import os

from fedex_manager.db import api as db
from fedex_manager import states
from nova_fedex import manager_client
from tests.unit.fedex_manager.api import test_api

SERVICE = test_api.SERVICE
MEMBER = test_api.MEMBER
PORTS = {'site-a': 14501, 'site-b': 14502}
READY = ('snapshot', 'export', 'seal', 'ship', 'deliver', 'import',
         'catch_up', 'converge')


class TestCutoverPlan(test_api.Fixture):

    def setUp(self):
        super().setUp()
        for site in ('site-a', 'site-b'):
            self.call('POST', '/v1/terminals', {
                'name': 'term-' + site[-1], 'site': site, 'slots': 2,
                'lsrp_address': '127.0.0.1:%d' % PORTS[site]},
                roles=SERVICE, status=201)
            self.call('PUT', '/v1/terminals/term-%s/health' % site[-1],
                      {'state': 'UP', 'info': {'slots': 2}},
                      roles=SERVICE, status=200)
        self.devices()
        # After the create: its preflight would connect to the cluster.
        self.m = self.create()
        conf = os.path.join(self.tmp, 'site-b.conf')
        with open(conf, 'w') as f:
            f.write('[global]\nfsid = 1234\nmon host = '
                    '[v2:127.0.0.1:14100,v1:127.0.0.1:14101]\n')
        db.update(self.ctx, 'site', db.get(self.ctx, 'site', 'site-b')['id'],
                  {'ceph_conf': conf})

    def plan(self, server='vm1', **kw):
        return self.call('GET', '/v1/servers/%s/cutover' % server, **kw)

    def event(self, name, status=202, **details):
        return self.call('POST', '/v1/migrations/%s/cutover-events'
                         % self.m['id'], {'event': name, 'host': 'b-h1',
                                          'details': details},
                         roles=SERVICE, status=status)

    def cutting_over(self):
        for ev in READY + ('cutover',):
            db.transition(self.ctx, 'migration', self.m['id'], ev)

    def test_plan_is_what_nova_fedex_reads(self):
        body = self.plan(roles=SERVICE, status=200).json['cutover']
        plan = manager_client.CutoverPlan.from_dict(body)
        self.assertFalse(plan.ready)
        self.assertEqual(('site-a', 'site-b'), (plan.source_site,
                                                plan.destination_site))
        self.assertEqual([('127.0.0.1', '14101')], plan.cluster.monitors)
        self.assertEqual('1234', plan.cluster.fsid)
        self.assertEqual(('127.0.0.1', 14502, 'term-b'), plan.terminal)
        self.assertEqual(['vms/vm1_disk'], [d.source for d in plan.disks])
        self.assertEqual(['vms/vm1_disk'],
                         [d.destination for d in plan.disks])
        self.cutting_over()
        body = self.plan(roles=SERVICE, status=200).json['cutover']
        self.assertTrue(manager_client.CutoverPlan.from_dict(body).ready)

    def test_plan_refusals(self):
        self.plan(roles=MEMBER, status=403)
        resp = self.plan('vm-none', roles=SERVICE, status=404)
        self.assertIn('vm-none', resp.text)

    def test_completed_and_rolled_back(self):
        self.event('migrating')
        self.assertEqual(states.REQUESTED,
                         db.get(self.ctx, 'migration', self.m['id'])['state'])
        self.cutting_over()
        self.event('rolled_back', reason='final delta failed')
        m = db.get(self.ctx, 'migration', self.m['id'])
        self.assertEqual(states.CATCHING_UP, m['state'])
        self.assertIn('final delta failed', m['last_error'])
        db.transition(self.ctx, 'migration', self.m['id'], 'converge')
        db.transition(self.ctx, 'migration', self.m['id'], 'cutover')
        self.event('completed', dest='b-h2')
        self.assertEqual(states.COMPLETED,
                         db.get(self.ctx, 'migration', self.m['id'])['state'])
        # The reporter (the source's compute) is not where the server is.
        texts = [e['message'] for e in db.list_(
            self.ctx, 'event', {'migration_id': self.m['id']})]
        self.assertIn('nova: completed, the server now on b-h2 (reported '
                      'by b-h1)', texts)
        self.assertIn('nova: rolled_back (reported by b-h1): final delta '
                      'failed', texts)
        self.event('nonsense', status=400)

    def test_end_reported_after_the_read_back_ended_it(self):
        """The conductor's read-back ends it while the report is handled."""
        from unittest import mock

        from fedex_manager.actions import cutover as cutover_actions
        self.cutting_over()
        real = cutover_actions.migration_cutover_finish

        def read_back_first(ctx, mid, success=True, **kw):
            real(ctx, mid, success=True)        # the conductor's
            return real(ctx, mid, success=success, **kw)
        with mock.patch.object(cutover_actions, 'migration_cutover_finish',
                               read_back_first):
            self.event('completed', dest='b-h2')
        self.assertEqual(states.COMPLETED,
                         db.get(self.ctx, 'migration', self.m['id'])['state'])

    def cleanups(self):
        return [p for p in self.posted if p[:2] == (self.m['id'], 'cleanup')]

    def test_cleanup_posted_by_fedex_api_when_kept_for_no_days(self):
        db.update(self.ctx, 'migration', self.m['id'], {'options': dict(
            self.m['options'], retention_days=0)})
        self.cutting_over()
        # nova_fedex compares the final state after ``completed``: the
        # cleanup (which removes what it reads) waits for its report.
        self.event('completed', dest='b-h2', final_state_check_timeout=900)
        self.assertEqual(states.COMPLETED,
                         db.get(self.ctx, 'migration', self.m['id'])['state'])
        self.assertEqual([], self.cleanups())
        self.event('final_state_checked', seconds=3.0)
        self.event('final_state_checked', seconds=3.0)     # sent twice
        m = db.get(self.ctx, 'migration', self.m['id'])
        self.assertEqual([(m['id'], 'cleanup', m['generation'])],
                         self.cleanups())

    def test_cleanup_posted_with_completed_without_a_check(self):
        db.update(self.ctx, 'migration', self.m['id'], {'options': dict(
            self.m['options'], retention_days=0)})
        self.cutting_over()
        self.event('completed', dest='b-h2', final_state_check_timeout=0)
        self.assertEqual(1, len(self.cleanups()))

    def test_no_cleanup_posted_when_kept(self):
        self.assertEqual(7, self.m['options']['retention_days'])
        self.cutting_over()
        self.event('completed', dest='b-h2', final_state_check_timeout=0)
        self.event('final_state_checked', seconds=3.0)
        self.assertEqual(states.COMPLETED,
                         db.get(self.ctx, 'migration', self.m['id'])['state'])
        self.assertEqual([], self.cleanups())


MIB = 1 << 20


class TestConvergenceVerdict(TestCutoverPlan):
    """nova_fedex's dirty rate in, the manager's verdict out (the plan)."""

    def measured(self, rate, **kw):
        figures = dict(server_id='vm1', dirty_rate=rate * MIB,
                       samples=[rate * MIB] * 3, working_set=rate * MIB,
                       memory=256 * MIB, resident=80 * MIB, seconds=6.2,
                       mode='page-sampling')
        figures.update(kw)
        return self.event('dirty_rate', **figures)

    def options(self, **opts):
        m = db.get(self.ctx, 'migration', self.m['id'])
        db.update(self.ctx, 'migration', m['id'],
                  {'options': dict(m['options'], **opts)})

    def verdict(self):
        body = self.plan(roles=SERVICE, status=200).json['cutover']
        return manager_client.CutoverPlan.from_dict(body).convergence

    def test_no_verdict_before_a_measure(self):
        self.assertIsNone(self.verdict())

    def test_idle_guest_pre_copy_capped_at_the_rate_cap(self):
        self.options(rate_cap=8 * MIB, downtime_budget=2)
        self.measured(0.5)
        v = self.verdict()
        self.assertEqual('pre-copy', v['means'])
        self.assertEqual(8 * MIB, v['max_bandwidth'])
        # The bound: twice the forecast copy and a minute.
        self.assertEqual(int(2 * v['forecast']['copy_seconds'] + 60),
                         v['copy_timeout'])
        # The switchover's limit the forecast counted on ([planner]
        # memory_downtime), for nova_fedex to start Nova's steps at.
        self.assertEqual(0.5, v['max_downtime'])
        text = db.events(self.ctx, {'migration_id': self.m['id']})[-1]
        self.assertIn('nova: dirty_rate (reported by b-h1): server vm1 '
                      'dirties 0.5 MiB/s', text['message'])
        self.assertIn('pre-copy, memory copy', text['message'])

    def test_a_rate_under_the_sampling_s_resolution_counts_as_it(self):
        # Read 0 by page-sampling, on a 1 MiB/s cap: not forecast as an
        # idle guest (that one's copy did not converge in 900 s).
        self.options(rate_cap=MIB, downtime_budget=2)
        self.measured(0, resolution=2 * MIB)
        v = self.verdict()
        self.assertNotEqual('pre-copy', v['means'])
        self.assertEqual(2 * MIB, v['forecast']['dirty_rate'])
        text = db.events(self.ctx, {'migration_id': self.m['id']})[-1]
        self.assertIn("dirties less than 2.0 MiB/s (the sampling's "
                      "resolution)", text['message'])

    def test_busy_guest_refused_with_the_forecast(self):
        self.options(rate_cap=8 * MIB, downtime_budget=2,
                     convergence='refuse')
        self.measured(20)
        v = self.verdict()
        self.assertIsNone(v['means'])
        self.assertIsNone(v['copy_timeout'])
        self.assertIn("exceeds the link's 8.4 MB/s", v['reason'])
        self.assertIn('> budget 2 s', v['reason'])
        event = db.events(self.ctx, {'migration_id': self.m['id']})[-1]
        self.assertIn('refused before the pause: dirty rate 21.0 MB/s',
                      event['message'])
        self.assertEqual('dirty_rate', event['details']['event'])
        # Kept with the server: the API shows it.
        shown = self.call('GET', '/v1/migrations/%s' % self.m['id'],
                          roles=MEMBER, status=200).json['migration']
        self.assertIsNone(shown['servers'][0]['convergence']['means'])

    def test_busy_guest_auto_converges_by_default(self):
        self.options(rate_cap=8 * MIB, downtime_budget=2)
        self.measured(20)
        v = self.verdict()
        self.assertEqual('auto-converge', v['means'])
        self.assertGreater(v['forecast']['throttle'], 0.5)
        self.assertLessEqual(v['forecast']['pause_seconds'], 2)

    def test_default_link_is_not_a_cap(self):
        # No [planner] wan_link and no rate cap: the default link is an
        # assumption, QEMU is not capped at it.
        self.measured(0.5)
        self.assertIsNone(self.verdict()['max_bandwidth'])

    def test_malformed_figures_are_a_400(self):
        self.event('dirty_rate', status=400, server_id='vm1')
