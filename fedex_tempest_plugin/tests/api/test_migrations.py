"""/v1/migrations: refusals, lists and unknown ids for each persona.

A migration that really runs, seen by each persona (another project's
member gets 404 for it), is the scenario's (tests/scenario).
"""

from tempest.lib.common.utils import data_utils
from tempest.lib import decorators

from fedex_tempest_plugin.tests import base

CONF = base.CONF


class MigrationsTest(base.BaseFedexTest):

    def _body(self, **extra):
        body = {'servers': [data_utils.rand_uuid()],
                'source_site': CONF.fedex.site_a_name,
                'dest_site': CONF.fedex.site_b_name}
        body.update(extra)
        return body

    @decorators.idempotent_id('6ad796ce-2ab4-4704-8134-a683f34e7d65')
    def test_create_bad_input(self):
        # The body is checked before anything else: 400 naming the field.
        create = self.member.create_migration
        self.assert_refused(400, create, code='fedex.invalid_body',
                            detail="'dest_site' is a required property")
        self.assert_refused(
            400, create, dest_site=CONF.fedex.site_b_name,
            code='fedex.bad_request',
            detail='a migration needs servers or volumes')
        self.assert_refused(400, create, code='fedex.invalid_body',
                            detail="'bogus' was unexpected",
                            **self._body(bogus=1))
        self.assert_refused(400, create, code='fedex.invalid_body',
                            detail='servers', **self._body(servers=[]))
        self.assert_refused(400, create, code='fedex.invalid_body',
                            detail='cutover', **self._body(
                                options={'cutover': 'sometimes'}))

    @decorators.idempotent_id('36ac5154-b7f2-4aae-9ecf-74407abf6a9e')
    def test_create_refused_to_reader(self):
        self.assert_policy_refused('fedex:migration:create',
                                   self.reader.create_migration,
                                   **self._body())

    @decorators.idempotent_id('185f96b9-4083-41d0-83d9-6caf09770135')
    def test_create_of_unknown_server_fails_preflight(self):
        # Nothing is created: the preflight names every reason (409).
        body = self._body()
        errors = self.assert_refused(409, self.member.create_migration,
                                     code='fedex.PreflightFailed', **body)
        self.assertIn('server %s does not exist in Nova' % body['servers'][0],
                      [e['detail'] for e in errors])
        listed = self.member.list_migrations(server=body['servers'][0])
        self.assertEqual([], listed['migrations'])

    @decorators.idempotent_id('97ecbc15-282f-450c-9a25-b800a2cb56f4')
    def test_unknown_id_is_404_for_everyone(self):
        unknown = data_utils.rand_uuid()
        for name, client in self.personas():
            self.assert_refused(404, client.show_migration, unknown,
                                code='fedex.NotFound',
                                detail='migration %s does not exist'
                                % unknown)
        # Writes on it: 404 too (the body is valid, the id unknown).
        self.assert_refused(404, self.member.update_migration, unknown,
                            name='x')
        self.assert_refused(404, self.member.migration_action, unknown,
                            'cutover')
        self.assert_refused(404, self.member.migration_action, unknown,
                            'abort', reason='tempest')
        self.assert_refused(404, self.member.delete_migration, unknown)

    @decorators.idempotent_id('db1e68d6-64e1-47d4-b930-a817d77ee941')
    def test_action_bad_body(self):
        # The action's body is checked before the id: one action, known.
        self.assert_refused(400, self.member.migration_action,
                            data_utils.rand_uuid(), 'explode',
                            code='fedex.invalid_body', detail='explode')

    @decorators.idempotent_id('308c3e73-7067-44b1-b612-fa7a9c3ce8e8')
    def test_list_is_own_project_only(self):
        for name, client, project in (
                ('member', self.member, self.project_id),
                ('reader', self.reader, self.project_id),
                ('alt member', self.alt, self.alt_project_id)):
            listed = client.list_migrations()['migrations']
            self.assertIsInstance(listed, list)
            self.assertEqual(set(), {m['project_id'] for m in listed} -
                             {project}, name)
        # Another project's, or all of them: admins only.
        for client in (self.member, self.reader):
            self.assert_policy_refused('fedex:migration:list:all_projects',
                                       client.list_migrations,
                                       all_projects='true')
        self.assert_policy_refused('fedex:migration:list:all_projects',
                                   self.alt.list_migrations,
                                   project=self.project_id)
        everyone = self.admin.list_migrations(all_projects='true')
        self.assertIsInstance(everyone['migrations'], list)
        mine = self.admin.list_migrations(project=self.project_id)
        self.assertEqual(set(), {m['project_id'] for m in mine['migrations']}
                         - {self.project_id})

    @decorators.idempotent_id('828cb91e-7acd-44b5-96d8-6164a2568640')
    def test_list_bad_query(self):
        self.assert_refused(400, self.member.list_migrations, bogus='1',
                            detail='bogus')
        self.assert_refused(400, self.member.list_migrations,
                            all_projects='perhaps', detail='all_projects')
