"""/v1/plans: the fleet planner and the forecast of a request, kept per
project; each persona's view of a plan."""

from tempest.lib.common.utils import data_utils
from tempest.lib.common.utils import test_utils
from tempest.lib import decorators

from fedex_tempest_plugin.tests import base

CONF = base.CONF

FLEET = {'vms': [{'size': '100G', 'count': 10}], 'wan_bandwidth': '1gbit/s'}


class PlansTest(base.BaseFedexTest):

    def _create(self, client=None, **extra):
        body = dict(FLEET, name=data_utils.rand_name('fedex-plan'), **extra)
        plan = (client or self.member).create_plan(**body)['plan']
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        self.admin.delete_plan, plan['id'])
        return body, plan

    @decorators.idempotent_id('2b2e95d8-e56a-4f0d-b11a-a438ed8490d1')
    def test_fleet_plan(self):
        body, plan = self._create()
        self.assertEqual(body['name'], plan['name'])
        self.assertEqual(self.project_id, plan['project_id'])
        self.assertEqual(body, plan['request'])
        # Units parsed: 100 GB disks, 1 Gbit/s = 125 MB/s.
        self.assertEqual(100 * 10 ** 9, plan['inputs']['vms'][0]['size'])
        self.assertEqual(10, plan['inputs']['vms'][0]['count'])
        self.assertEqual(125 * 10 ** 6,
                         plan['inputs']['link']['wan_bandwidth'])
        # 1 TB over 125 MB/s: 8000 s on the WAN.
        self.assertEqual(8000.0, plan['wan']['total_time'])
        self.assertGreater(plan['fedex']['total_time'], 0)
        self.assertIn(plan['recommended'], ('wan', 'fedex'))
        shown = self.member.show_plan(plan['id'])['plan']
        self.assertEqual(plan['id'], shown['id'])
        self.assertEqual(plan['wan'], shown['wan'])

    @decorators.idempotent_id('78ae5fbb-dfd2-40db-875a-94313f17f2f8')
    def test_plan_per_persona(self):
        _, plan = self._create()
        # The project's reader sees it, in the list and whole.
        self.assertEqual(plan['id'], self.reader.show_plan(
            plan['id'])['plan']['id'])
        self.assertIn(plan['id'], self.ids(
            self.reader.list_plans()['plans']))
        # Another project's member does not.
        self.assertNotIn(plan['id'], self.ids(self.alt.list_plans()['plans']))
        self.assert_policy_refused('fedex:plan:show', self.alt.show_plan,
                                   plan['id'])
        self.assert_policy_refused('fedex:plan:delete', self.alt.delete_plan,
                                   plan['id'])
        self.assert_policy_refused('fedex:plan:list:all_projects',
                                   self.member.list_plans,
                                   all_projects='true')
        # An admin sees every project's.
        self.assertIn(plan['id'], self.ids(
            self.admin.list_plans(all_projects='true')['plans']))
        self.assertIn(plan['id'], self.ids(
            self.admin.list_plans(project=self.project_id)['plans']))
        # A reader computes nothing and deletes nothing.
        self.assert_policy_refused('fedex:plan:create',
                                   self.reader.create_plan, **FLEET)
        self.assert_policy_refused('fedex:plan:delete',
                                   self.reader.delete_plan, plan['id'])
        # Its member deletes it: gone for everyone.
        self.member.delete_plan(plan['id'])
        for _, client in self.personas():
            self.assert_refused(404, client.show_plan, plan['id'])

    @decorators.idempotent_id('1cbc2bdc-2e31-4162-8ba8-3803cf25bbfc')
    def test_plan_bad_input(self):
        self.assert_refused(400, self.member.create_plan,
                            code='fedex.invalid_body', detail='vms',
                            **dict(FLEET, vms=[]))
        self.assert_refused(400, self.member.create_plan,
                            code='fedex.InvalidPlanInput',
                            detail='wan_bandwidth',
                            **dict(FLEET, wan_bandwidth='1Gbit'))

    @decorators.idempotent_id('5c7f5fd5-fed5-49f1-a5c2-5e295cec3314')
    def test_forecast_refusals(self):
        # The forecast of a POST /v1/migrations body, read as create reads
        # it: its refusals are create's.
        request = {'servers': [data_utils.rand_uuid()],
                   'source_site': CONF.fedex.site_a_name,
                   'dest_site': CONF.fedex.site_b_name}
        errors = self.assert_refused(409, self.member.create_plan,
                                     code='fedex.PreflightFailed',
                                     migration=request)
        self.assertIn('server %s does not exist in Nova'
                      % request['servers'][0],
                      [e['detail'] for e in errors])
        self.assert_refused(
            400, self.member.create_plan, code='fedex.bad_request',
            detail='migration.servers: a migration needs servers or volumes',
            migration={'dest_site': CONF.fedex.site_b_name})
        self.assert_refused(400, self.member.create_plan,
                            code='fedex.invalid_body', detail='bogus',
                            migration=dict(request, bogus=1))
