"""``fedex-manage``: the manager's administration command.

    fedex-manage [--config-file F] db sync      create or upgrade the schema
    fedex-manage db version                     print the schema revision
"""

import sys

from oslo_config import cfg
from oslo_log import log as logging

from fedex_manager.db import api as db
from fedex_manager.db import migration
from fedex_manager import opts
from lsrp import cmdline
from lsrp import exception

CONF = cfg.CONF


def do_sync(args):
    migration.upgrade()
    print('fedex-manage: schema at %s (%s)' % (
        migration.version(), db.get_engine().url.render_as_string(
            hide_password=True)))


def do_version(args):
    print(migration.version() or 'none')


def add_parsers(subparsers):
    p = subparsers.add_parser('db', help='The database schema.')
    sub = p.add_subparsers(dest='db_command', required=True)
    sub.add_parser('sync', help='Create or upgrade the schema (ours and '
                   'taskflow\'s).').set_defaults(func=do_sync)
    sub.add_parser('version', help='Print the schema revision.'
                   ).set_defaults(func=do_version)


def setup(argv, prog):
    logging.register_options(CONF)
    opts.register_opts(CONF)
    CONF.set_default('use_stderr', True)
    return argv


def main(argv=None):
    setup(argv, 'fedex-manage')
    CONF.register_cli_opt(cfg.SubCommandOpt(
        'command', title='Commands', handler=add_parsers))
    CONF(sys.argv[1:] if argv is None else argv, project='fedex',
         prog='fedex-manage')
    # Its answer is printed; alembic's steps are logged with --debug.
    cmdline.setup_logging(CONF, 'fedex-manage',
                          ['fedex_manager=INFO', 'lsrp=WARN'])
    if not CONF.database.connection:
        CONF.set_override('connection', 'sqlite:///%s/manager.sqlite'
                          % CONF.manager.state_path, group='database')
    try:
        db.configure(CONF.database.connection)
        CONF.command.func(CONF.command)
    except exception.FedexException as e:
        print('fedex-manage: error: %s' % e, file=sys.stderr)
        return 2
    except Exception as e:  # noqa: a DB that cannot be reached, etc.
        print('fedex-manage: error: %s' % e, file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main())
