"""``fedex-status upgrade check``: is this deployment ready for the code?

oslo.upgradecheck's command, as ``nova-status``: run with the new release
installed, after ``fedex-manage db sync`` and before the services restart.
Exit 0 all checks passed, 1 a warning to read, 2 a failure that stops the
upgrade, 255 a check that could not run. ``--json`` prints the results as
JSON.

The checks read the database with SQL, not the manager's models: they must
run on the previous release's data.
"""

import os
import re
import sys

from alembic import migration as alembic_migration
from alembic import script as alembic_script
from oslo_config import cfg
from oslo_policy import opts as policy_opts
from oslo_policy import policy as oslo_policy
from oslo_upgradecheck import common_checks
from oslo_upgradecheck import upgradecheck
import sqlalchemy as sa
from stevedore import extension
from taskflow.persistence.backends.sqlalchemy import migration as tf_migration

from fedex_manager import couriers
from fedex_manager.db import api as db
from fedex_manager.db import migration
from fedex_manager.flows import legacy
from fedex_manager import opts
from fedex_manager import policies
from fedex_manager import states

CONF = cfg.CONF
Code = upgradecheck.Code
Result = upgradecheck.Result

FEDEX_VERSION_TABLE = 'fedex_alembic_version'
TASKFLOW_VERSION_TABLE = 'alembic_version'
TASKFLOW_ALEMBIC_DIR = os.path.join(os.path.dirname(tf_migration.__file__),
                                    'alembic')
# taskflow flow states after which a flow detail is never loaded again.
FLOW_DONE = ('SUCCESS', 'REVERTED')
# A rule named in another rule's check string: "rule:admin_or_owner".
_RULE_REF = re.compile(r'rule:([^\s()]+)')
# The tables of the three state machines.
STATE_TABLES = (('migrations', states.MIGRATION),
                ('shipments', states.SHIPMENT),
                ('devices', states.DEVICE))


def _heads(script_dir):
    return set(alembic_script.ScriptDirectory(script_dir).get_heads())


def _revisions(script_dir):
    return {r.revision for r in
            alembic_script.ScriptDirectory(script_dir).walk_revisions()}


def _schema_problem(connection, name, script_dir, version_table):
    """(what is wrong with one alembic history, whether db sync fixes it).

    None when it is at the head of ``script_dir``.
    """
    ctx = alembic_migration.MigrationContext.configure(
        connection, opts={'version_table': version_table})
    current = set(ctx.get_current_heads())
    heads = _heads(script_dir)
    if not current:
        return '%s are not created' % name, True
    unknown = current - _revisions(script_dir)
    if unknown:
        return ('%s are at revision %s, which this release does not know '
                '(a newer release\'s?)' % (name, ', '.join(sorted(unknown))),
                False)
    if current != heads:
        return '%s are at revision %s; this release needs %s' % (
            name, ', '.join(sorted(current)), ', '.join(sorted(heads))), True
    return None


def schema_problems(connection):
    """The problems of our tables' schema and taskflow's: [(text, fixable)]."""
    return [p for p in (
        _schema_problem(connection, 'the manager\'s tables',
                        migration.ALEMBIC_DIR, FEDEX_VERSION_TABLE),
        _schema_problem(connection, 'taskflow\'s tables',
                        TASKFLOW_ALEMBIC_DIR, TASKFLOW_VERSION_TABLE)) if p]


def _policy_files(conf):
    """The policy file, then the files of the policy directories.

    In oslo.policy's order: a later file overrides an earlier one.
    """
    found = []
    path = conf.find_file(conf.oslo_policy.policy_file)
    if path:
        found.append(path)
    for name in conf.oslo_policy.policy_dirs:
        directory = conf.find_file(name)
        if directory and os.path.isdir(directory):
            found += sorted(os.path.join(directory, f)
                            for f in os.listdir(directory)
                            if os.path.isfile(os.path.join(directory, f)))
    return found


class Checks(upgradecheck.UpgradeCommands):
    """The checks of ``fedex-status upgrade check``."""

    def __init__(self, conf=CONF):
        super().__init__()
        self.conf = conf
        self._engine = None
        self._problems = None

    # --- the database -----------------------------------------------------

    def _connection_url(self):
        # The same default as fedex-manage and fedex-api.
        return self.conf.database.connection or (
            'sqlite:///%s/manager.sqlite' % self.conf.manager.state_path)

    def engine(self):
        """The database's engine; raises what stops reaching it."""
        if self._engine is None:
            url = self._connection_url()
            if url.startswith('sqlite'):
                path = sa.engine.make_url(url).database
                # Connecting would create an empty file: say it is missing.
                if path and path != ':memory:' and not os.path.exists(path):
                    raise RuntimeError('no SQLite database at %s' % path)
            db.configure(url)
            self._engine = db.get_engine()
        return self._engine

    def _schema_problems(self):
        """schema_problems(), or a failure to read the database."""
        if self._problems is None:
            try:
                with self.engine().connect() as connection:
                    self._problems = schema_problems(connection)
            except Exception as e:  # noqa: unreachable, wrong URL, no driver
                self._problems = [('cannot read the database: %s' % e,
                                   False)]
        return self._problems

    def _skipped(self):
        """The result of a check of the data when the data cannot be read."""
        if not self._schema_problems():
            return None
        return Result(Code.WARNING, 'Not checked: the database schema is '
                      'not that of this release (see "Database schema").')

    def _check_schema(self):
        """Our alembic history and taskflow's are both at their heads."""
        problems = self._schema_problems()
        if not problems:
            return Result(Code.SUCCESS)
        text = '; '.join(p for p, _ in problems)
        if all(fixable for _, fixable in problems):
            text += ': run "fedex-manage db sync"'
        return Result(Code.FAILURE, text[0].upper() + text[1:] + '.')

    def _check_states(self):
        """Every row is in a state this release's state machines know."""
        skipped = self._skipped()
        if skipped:
            return skipped
        unknown = []
        with self.engine().connect() as connection:
            meta = sa.MetaData()
            for table, machine in STATE_TABLES:
                t = sa.Table(table, meta, autoload_with=connection)
                rows = connection.execute(
                    sa.select(t.c.state, sa.func.count()).where(
                        t.c.state.notin_(machine.states)).group_by(
                            t.c.state)).all()
                unknown += ['%d %s %s' % (n, table, state)
                            for state, n in rows]
        if unknown:
            return Result(Code.FAILURE, 'In states this release does not '
                          'know: %s. Finish or abort them with the previous '
                          'release first.' % ', '.join(unknown))
        return Result(Code.SUCCESS)

    def _check_legacy_flows(self):
        """Unfinished flows saved under the old package's import paths."""
        skipped = self._skipped()
        if skipped:
            return skipped
        with self.engine().connect() as connection:
            t = sa.Table('flowdetails', sa.MetaData(),
                         autoload_with=connection)
            names = connection.execute(sa.select(t.c.name).where(
                sa.cast(t.c.meta, sa.Text).like('%%%s.%%' % legacy.OLD),
                sa.or_(t.c.state.is_(None),
                       t.c.state.notin_(FLOW_DONE)))).scalars().all()
        if names:
            return Result(Code.WARNING, '%d unfinished flow(s) name %s '
                          '(%s): they resume through '
                          'fedex_manager.flows.legacy, which the next '
                          'release removes. Let them finish before that '
                          'upgrade.' % (len(names), legacy.OLD,
                                        ', '.join(sorted(names)[:5])))
        return Result(Code.SUCCESS)

    # --- the configuration --------------------------------------------------

    def _check_couriers(self):
        """The couriers that the configuration and the shipments name exist."""
        known = set(extension.ExtensionManager(couriers.NAMESPACE).names())
        wanted = {self.conf.conductor.courier: '[conductor] courier'}
        if not self._schema_problems():
            with self.engine().connect() as connection:
                meta = sa.MetaData()
                s = sa.Table('shipments', meta, autoload_with=connection)
                for carrier, in connection.execute(
                        sa.select(s.c.carrier).distinct().where(
                            s.c.state.notin_(states.SHIPMENT_FINAL))):
                    wanted.setdefault(carrier, 'an open shipment')
                m = sa.Table('migrations', meta, autoload_with=connection)
                for options, in connection.execute(
                        sa.select(m.c.options).where(
                            m.c.state.notin_(states.MIGRATION_FINAL))):
                    carrier = (options or {}).get('carrier')
                    if carrier:
                        wanted.setdefault(carrier, 'a running migration')
        missing = ['%s (%s)' % (name, who)
                   for name, who in sorted(wanted.items())
                   if name not in known]
        if missing:
            return Result(Code.FAILURE, 'No such courier plugin '
                          '(entry point %s): %s; installed: %s.' % (
                              couriers.NAMESPACE, ', '.join(missing),
                              ', '.join(sorted(known)) or 'none'))
        return Result(Code.SUCCESS)

    def _check_policy_rules(self):
        """The policy files override only rules that exist, by their names."""
        defaults = {r.name: r for r in policies.list_rules()}
        renamed = {r.deprecated_rule.name: r.name for r in defaults.values()
                   if getattr(r, 'deprecated_rule', None)}
        overrides = {}
        for path in _policy_files(self.conf):
            with open(path) as f:
                overrides.update(oslo_policy.parse_file_contents(f.read()))
        if not overrides:
            return Result(Code.SUCCESS, 'No policy file: the defaults in '
                          'code apply.')
        referenced = set()
        for check in list(overrides.values()) + [
                r.check_str for r in defaults.values()]:
            referenced.update(_RULE_REF.findall(check))
        problems = []
        for name in sorted(overrides):
            if name in renamed:
                problems.append('%s is deprecated: it is now %s' % (
                    name, renamed[name]))
            elif name in defaults and defaults[name].deprecated_for_removal:
                problems.append('%s is deprecated for removal' % name)
            elif name not in defaults and name not in referenced:
                problems.append('%s is no rule of fedex-api' % name)
        if problems:
            return Result(Code.WARNING, 'In the policy files: %s. Compare '
                          'with "oslopolicy-sample-generator --namespace '
                          'fedex".' % '; '.join(problems))
        return Result(Code.SUCCESS)

    _upgrade_checks = (
        ('Database schema', _check_schema),
        ('Known states', _check_states),
        ('Flows of the old package', _check_legacy_flows),
        ('Courier plugins', _check_couriers),
        ('Policy rules', _check_policy_rules),
        # NOTE: the same check as nova-status's: JSON policy files are
        # deprecated by oslo.policy.
        ('Policy File JSON to YAML Migration',
         (common_checks.check_policy_json, {'conf': CONF})),
    )


def register_opts(conf):
    opts.register_opts(conf)
    conf.register_opts(policy_opts._options, group=policy_opts._option_group)


def main(argv=None):
    register_opts(CONF)
    return upgradecheck.main(CONF, project='fedex', upgrade_command=Checks(),
                             argv=sys.argv[1:] if argv is None else argv)


if __name__ == '__main__':
    sys.exit(main())
