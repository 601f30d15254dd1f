"""What ``lsrp``, ``lsrp-server`` and ``fedex-sandbox`` share on the command line.

* ``--help`` starts with the commands, one line each (``usage``); oslo.log's
  flags still work but are listed only by ``--help-all``
  (``register_logging``).
* On the terminal, a command's answer and the project's own lines; the
  libraries' only with ``--debug`` (``setup_logging``).
* Every subcommand has a description and an example (``add_command``).
* A setting that both ``lsrp`` and ``lsrp-server`` take on the command line
  has one spelling (``SETTING_FLAGS``): ``--ceph-conf`` sets ``[ceph]
  conf_file`` in both, ``--tls-ca`` sets ``[server] tls_ca`` in both.
"""

import argparse
import collections
import logging as std_logging
import os
import sys
import textwrap

from oslo_config import cfg
from oslo_log import _options as log_options
from oslo_log import log as logging

HELP_ALL = '--help-all'
WIDTH = 79
_HELP = ('-h', '--help')

Command = collections.namedtuple('Command', 'name summary example')


class Flag(collections.namedtuple('Flag', 'flag group option metavar type '
                                          'help')):
    """A command-line flag for a setting of the configuration file."""

    @property
    def dest(self):
        # NOTE: not "name": oslo.config's command attribute answers
        # ``.name`` with the subcommand's name.
        if self.flag == '--name':
            return 'terminal_name'
        return self.flag[2:].replace('-', '_')

    def help_text(self):
        return '%s (default: [%s] %s).' % (self.help, self.group, self.option)


SETTING_FLAGS = [
    Flag('--ceph-conf', 'ceph', 'conf_file', 'PATH', str,
         'Ceph configuration of the local site'),
    Flag('--keyring', 'ceph', 'keyring', 'PATH', str,
         'cephx keyring of the Ceph client'),
    Flag('--site', 'ceph', 'site_name', 'NAME', str,
         'Name of the local site in messages and logs'),
    Flag('--op-timeout', 'ceph', 'op_timeout', 'SECONDS', int,
         'Seconds before a Ceph operation fails; 0 waits forever'),
    Flag('--name', 'server', 'name', 'NAME', str,
         'This terminal\'s name, as in its TLS certificate'),
    Flag('--tls-ca', 'server', 'tls_ca', 'PEM', str,
         'CA certificate that signs every terminal certificate'),
    Flag('--tls-cert', 'server', 'tls_cert', 'PEM', str,
         'This terminal\'s TLS certificate'),
    Flag('--tls-key', 'server', 'tls_key', 'PEM', str,
         'This terminal\'s TLS private key'),
]
CEPH_FLAGS = [f for f in SETTING_FLAGS if f.group == 'ceph']
TERMINAL_FLAGS = [f for f in SETTING_FLAGS if f.group == 'server']


def add_setting_flags(parser, flags):
    """Add ``flags`` to an argparse (sub)parser; their value default None."""
    for f in flags:
        parser.add_argument(f.flag, dest=f.dest, metavar=f.metavar,
                            type=f.type, help=f.help_text())


def setting_cli_opts(flags):
    """The same ``flags`` as oslo.config CLI options (for ``lsrp-server``).

    Their ``dest`` is ``cli_<dest>``: ``apply_settings`` copies them into
    the options they stand for.
    """
    types = {str: cfg.StrOpt, int: cfg.IntOpt}
    return [types[f.type](f.flag[2:], dest='cli_' + f.dest,
                          metavar=f.metavar, help=f.help_text())
            for f in flags]


def apply_settings(conf, flags, values):
    """Override the options of the ``flags`` given a value.

    ``values``: the parsed arguments of a subcommand. After this the code
    reads the configuration only.
    """
    for f in flags:
        try:
            value = getattr(values, f.dest)
        except (AttributeError, cfg.NoSuchOptError):
            continue   # not a flag of this subcommand
        if value is not None:
            conf.set_override(f.option, value, group=f.group)


def apply_cli_settings(conf, flags):
    """``apply_settings`` for the options made by ``setting_cli_opts``."""
    for f in flags:
        value = conf['cli_' + f.dest]
        if value is not None:
            conf.set_override(f.option, value, group=f.group)


def usage(prog, synopsis, commands=(), epilog=None):
    """A usage text that lists the commands, one line each, first.

    argparse prints a given usage as it is (only ``%(prog)s`` expanded), on
    ``--help`` and above a usage error.
    """
    lines = ['%s %s' % (prog, synopsis)]
    if commands:
        width = max(len(c.name) for c in commands)
        lines += ['', 'Commands:']
        for c in commands:
            lines += textwrap.wrap(
                c.summary, WIDTH, initial_indent='  %-*s  ' % (width, c.name),
                subsequent_indent=' ' * (width + 4))
        lines += ['', 'Run "%s COMMAND --help" for the flags of a command and '
                  'an example.' % prog]
    if epilog:
        lines += [''] + textwrap.wrap(epilog, WIDTH)
    lines.append('Run "%s %s" to list the logging flags too.'
                 % (prog, HELP_ALL))
    return '\n'.join(lines).replace('%', '%%')


def argv_for_oslo(argv):
    """``argv`` with ``--help-all`` turned into ``--help``."""
    return ['--help' if a == HELP_ALL else a for a in argv]


def stdout_closed():
    """The exit code of a listing whose reader went away (``| head``).

    stdout is pointed at /dev/null, as Python's documentation of SIGPIPE
    advises, so that the interpreter's last flush does not raise again;
    128 + SIGPIPE is what a shell reports for a command killed by it.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return 141


def register_logging(conf, argv):
    """oslo.log's options; its flags are not listed by ``--help``.

    They are listed by ``--help-all``. They are parsed as usual otherwise
    (``--debug``, ``--log-file``...): on ``--help`` the program prints its
    help and exits before logging is set up, so registering them as
    configuration options only hides them from that one listing.
    """
    if HELP_ALL in argv or not any(a in _HELP for a in argv):
        logging.register_options(conf)
        return
    # NOTE: oslo.log's list_opts (its oslo.config.opts entry point) lives in
    # oslo_log._options; these are the lists its register_options uses.
    conf.register_opts(log_options.common_cli_opts)
    conf.register_opts(log_options.logging_cli_opts)
    conf.register_opts(log_options.generic_log_opts)
    conf.register_opts(log_options.log_opts)


def setup_logging(conf, prog, levels):
    """oslo.log's setup for a command read on a terminal.

    ``levels``: ``default_log_levels`` pairs of the project's loggers, e.g.
    ``['fedex_sandbox=INFO', 'lsrp=WARN']``: the command's own progress
    lines and the project's warnings. Every other logger (the libraries':
    oslo.service's backend, alembic's steps, kazoo's connection states,
    taskflow's warnings on SQLite...) and Python's warnings show only their
    errors unless ``--debug``. A ``default_log_levels`` set in a
    configuration file wins.
    """
    if not conf.debug:
        # 'root': the level of every logger not listed.
        conf.set_default('default_log_levels', ['root=ERROR'] + list(levels))
    # Warnings raised once the command runs (a library imported late) are
    # log records of 'py.warnings': they follow the levels above.
    std_logging.captureWarnings(True)
    logging.setup(conf, prog)


def add_command(subparsers, prog, command, description=None):
    """A subcommand's parser: its summary, description and example.

    ``prog`` is the program's name: argparse would otherwise make the
    subcommand's from the program's usage, which lists every command.
    """
    text = textwrap.fill(' '.join((description or command.summary).split()),
                         WIDTH)
    return subparsers.add_parser(
        command.name, prog='%s %s' % (prog, command.name),
        help=command.summary, description=text,
        epilog='Example:\n  %s' % command.example,
        formatter_class=argparse.RawDescriptionHelpFormatter)


def subcommand_opt(handler):
    """The ``command`` option; its listing is in ``usage`` already."""
    return cfg.SubCommandOpt('command', title='Commands', handler=handler,
                             help=argparse.SUPPRESS)
