"""``fedex-status upgrade check`` on SQLite databases made by the code of
``fedex-manage db sync``: each check's failure, and 0 when all is well."""

import contextlib
import io
import json
import os
import subprocess
import sys
import uuid

from alembic import script as alembic_script
import fixtures
from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslo_policy import policy as oslo_policy
import sqlalchemy as sa
from taskflow.persistence import backends as tf_backends
from taskflow.persistence import models as tf_models
import testtools

from fedex_manager.cmd import status
from fedex_manager.db import api as db
from fedex_manager.db import migration
from fedex_manager import policies
from tests.unit.fedex_manager import base

Code = status.Code


def fedex_status(*args):
    """The console script, as setup.cfg runs it."""
    return subprocess.run(
        [sys.executable, '-c', 'import sys; from fedex_manager.cmd.status '
         'import main; sys.argv[0] = "fedex-status"; sys.exit(main())'] +
        list(args), capture_output=True, text=True, timeout=120,
        env={k: v for k, v in os.environ.items() if k != 'PYTHONWARNINGS'})


class TestCommand(testtools.TestCase):
    """The command in a process of its own, as an operator runs it."""

    def test_exit_codes_of_a_synced_an_empty_and_a_missing_database(self):
        work = self.useFixture(fixtures.TempDir()).path

        def conf(name):
            path = os.path.join(work, name + '.conf')
            with open(path, 'w') as f:
                f.write('[database]\nconnection = sqlite:///%s/%s.sqlite\n'
                        '[manager]\nstate_path = %s\n' % (work, name, work))
            return path

        sync = subprocess.run(
            [sys.executable, '-c', 'import sys; from fedex_manager.cmd.manage'
             ' import main; sys.exit(main())', '--config-file',
             conf('synced'), 'db', 'sync'], capture_output=True, text=True,
            timeout=120)
        self.assertEqual(0, sync.returncode, sync.stderr)
        ok = fedex_status('--config-file', conf('synced'), 'upgrade',
                          'check', '--json')
        self.assertEqual(0, ok.returncode, ok.stdout + ok.stderr)
        results = json.loads(ok.stdout)
        self.assertEqual({Code.SUCCESS}, {c['result']
                                          for c in results['checks']})
        self.assertIn('Database schema', [c['check']
                                          for c in results['checks']])

        sa.create_engine('sqlite:///%s/empty.sqlite' % work).connect().close()
        empty = fedex_status('--config-file', conf('empty'), 'upgrade',
                             'check')
        self.assertEqual(2, empty.returncode, empty.stdout + empty.stderr)
        self.assertIn('fedex-manage db sync', empty.stdout)

        missing = fedex_status('--config-file', conf('missing'), 'upgrade',
                               'check')
        self.assertEqual(2, missing.returncode, missing.stdout)
        self.assertIn('no SQLite database', missing.stdout)
        self.assertFalse(os.path.exists(os.path.join(work,
                                                     'missing.sqlite')))


class ChecksTestCase(base.DBTestCase):
    """The checks in process, on the test's database (at head)."""

    def setUp(self):
        super().setUp()
        self.config = self.useFixture(config_fixture.Config(cfg.CONF))
        status.register_opts(cfg.CONF)
        cfg.CONF([], project='fedex', default_config_files=[])
        self.url = 'sqlite:///%s/manager.sqlite' % self.tmp
        self.config.config(connection=self.url, group='database')
        self.config.config(state_path=self.tmp, group='manager')

    def run_checks(self):
        """{check name: Result} and the overall code."""
        checks = status.Checks(cfg.CONF)
        results = {}
        for name, func in checks._upgrade_checks:
            if isinstance(func, tuple):
                func, kwargs = func
                results[name] = func(checks, **kwargs)
            else:
                results[name] = func(checks)
        with contextlib.redirect_stdout(io.StringIO()):
            code = checks.check()
        return results, code

    def assertOnly(self, name, code, results, overall):
        self.assertEqual(code, results[name].code, results[name].details)
        others = {n: r.code for n, r in results.items() if n != name}
        self.assertEqual({Code.SUCCESS}, set(others.values()), others)
        self.assertEqual(code, overall)

    def sql(self, statement, **params):
        with db.get_engine().begin() as connection:
            connection.execute(sa.text(statement), params)


class TestDatabaseChecks(ChecksTestCase):

    def test_a_synced_database_passes(self):
        results, code = self.run_checks()
        self.assertEqual(Code.SUCCESS, code,
                         {n: r.details for n, r in results.items()})

    def test_schema_behind_the_code(self):
        url = 'sqlite:///%s/old.sqlite' % self.tmp
        db.configure(url)
        migration.upgrade('0001')
        self.config.config(connection=url, group='database')
        results, code = self.run_checks()
        head, = alembic_script.ScriptDirectory(
            migration.ALEMBIC_DIR).get_heads()
        schema = results['Database schema']
        self.assertEqual(Code.FAILURE, schema.code)
        self.assertIn('are at revision 0001; this release needs %s' % head,
                      schema.details)
        self.assertIn('run "fedex-manage db sync"', schema.details)
        # The checks of the data say why they did not run.
        self.assertEqual(Code.WARNING, results['Known states'].code)
        self.assertIn('Not checked', results['Known states'].details)
        self.assertEqual(Code.FAILURE, code)

    def test_schema_of_a_newer_release(self):
        self.sql('UPDATE fedex_alembic_version SET version_num = :v',
                 v='9999')
        results, code = self.run_checks()
        details = results['Database schema'].details
        self.assertIn('revision 9999, which this release does not know',
                      details)
        self.assertNotIn('db sync', details)
        self.assertEqual(Code.FAILURE, code)

    def test_taskflow_tables_missing(self):
        self.sql('DROP TABLE alembic_version')
        results, code = self.run_checks()
        self.assertIn("Taskflow's tables are not created",
                      results['Database schema'].details)
        self.assertEqual(Code.FAILURE, code)

    def test_states_this_release_does_not_know(self):
        db.create(self.ctx, 'device', {'serial': 'SN-1', 'state': 'BLANK'})
        db.create(self.ctx, 'device', {'serial': 'SN-2', 'state': 'BLANK'})
        self.sql("UPDATE devices SET state = 'MELTED'")
        results, code = self.run_checks()
        self.assertOnly('Known states', Code.FAILURE, results, code)
        self.assertIn('2 devices MELTED', results['Known states'].details)

    def test_unfinished_flows_of_the_old_package(self):
        backend = tf_backends.fetch({'connection': self.url})
        for state, factory in (('RUNNING', 'lsrp.manager.flows.phases.'
                                           'prepare'),
                               ('SUCCESS', 'lsrp.manager.flows.phases.'
                                           'receive'),
                               ('RUNNING', 'fedex_manager.flows.phases.'
                                           'catch_up')):
            book = tf_models.LogBook('book-%s' % factory)
            detail = tf_models.FlowDetail(factory.rsplit('.', 1)[1],
                                          str(uuid.uuid4()))
            detail.state = state
            detail.meta = {'factory': {'name': factory, 'args': [],
                                       'kwargs': {}}}
            book.add(detail)
            with contextlib.closing(backend.get_connection()) as conn:
                conn.save_logbook(book)
        results, code = self.run_checks()
        self.assertOnly('Flows of the old package', Code.WARNING, results,
                        code)
        details = results['Flows of the old package'].details
        self.assertIn('1 unfinished flow(s) name lsrp.manager (prepare)',
                      details)


class TestConfigurationChecks(ChecksTestCase):

    def test_courier_of_the_configuration_and_of_open_shipments(self):
        self.config.config(courier='pigeon', group='conductor')
        results, code = self.run_checks()
        self.assertOnly('Courier plugins', Code.FAILURE, results, code)
        details = results['Courier plugins'].details
        self.assertIn('pigeon ([conductor] courier)', details)
        self.assertIn('manual', details)
        self.config.config(courier='manual', group='conductor')
        db.create(self.ctx, 'shipment', {'name': 'ship-1',
                                         'state': 'CREATED',
                                         'carrier': 'owl'})
        results, code = self.run_checks()
        self.assertIn('owl (an open shipment)',
                      results['Courier plugins'].details)

    def policy_file(self, text, name='policy.yaml'):
        path = os.path.join(self.tmp, name)
        with open(path, 'w') as f:
            f.write(text)
        self.config.config(policy_file=path, group='oslo_policy')
        return path

    def test_policy_file_of_known_rules_passes(self):
        rule = policies.list_rules()[0].name
        self.policy_file('"%s": "rule:site_admin"\n"site_admin": "role:'
                         'admin"\n' % rule)
        results, code = self.run_checks()
        self.assertEqual(Code.SUCCESS, code,
                         {n: r.details for n, r in results.items()})

    def test_unknown_and_deprecated_rules(self):
        old = oslo_policy.DeprecatedRule(
            'fedex:migration:get', 'role:admin',
            deprecated_reason='renamed', deprecated_since='2027.1')
        renamed = oslo_policy.RuleDefault('fedex:migration:show:new',
                                          'role:admin', deprecated_rule=old)
        rules = policies.list_rules() + [renamed]
        self.useFixture(fixtures.MonkeyPatch(
            'fedex_manager.cmd.status.policies.list_rules', lambda: rules))
        self.policy_file('"fedex:migration:get": "role:admin"\n'
                         '"fedex:teleport": "role:admin"\n')
        results, code = self.run_checks()
        self.assertOnly('Policy rules', Code.WARNING, results, code)
        details = results['Policy rules'].details
        self.assertIn('fedex:migration:get is deprecated: it is now '
                      'fedex:migration:show:new', details)
        self.assertIn('fedex:teleport is no rule of fedex-api', details)

    def test_json_policy_file(self):
        rule = policies.list_rules()[0].name
        self.policy_file('{"%s": "role:admin"}' % rule, name='policy.json')
        results, code = self.run_checks()
        self.assertOnly('Policy File JSON to YAML Migration', Code.FAILURE,
                        results, code)
