"""The help of lsrp, lsrp-server and fedex-sandbox, read from the real parsers.

What an operator sees first: the commands, one line each; every subcommand
with a description and an example; every flag with help; no help text naming
a flag that does not exist; one spelling per setting in lsrp and lsrp-server.
"""

import argparse
import os
import re
import subprocess
import sys

import testtools

from fedex_sandbox import cli as sandbox_cli
from fedex_sandbox import opts as sandbox_opts
from lsrp import cli
from lsrp import cmdline
from lsrp import opts

PROGRAMS = {'lsrp': 'lsrp.cli', 'lsrp-server': 'lsrp.server.cli',
            'fedex-sandbox': 'fedex_sandbox.cli'}
WITH_COMMANDS = {'lsrp': (cli.COMMAND_LIST, cli.add_parsers),
                 'fedex-sandbox': (sandbox_cli.COMMAND_LIST,
                                   sandbox_cli.add_command_parsers)}
FLAG = re.compile(r'(?<![\w-])(--[a-z][\w-]*)')
DEFINED = re.compile(r'^  -.*$', re.M)   # a line listing a flag, aliases


def defined_flags(text):
    """Flags a help text lists (with their aliases), not those it names."""
    found = set()
    for line in DEFINED.findall(text):
        found.update(FLAG.findall(re.split(r'\s{2,}', line.strip())[0]))
    return found


def run_help(prog, *args):
    result = subprocess.run(
        [sys.executable, '-m', PROGRAMS[prog]] + list(args),
        capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def subparsers(prog):
    """{command: argparse parser} as the program builds them."""
    parser = argparse.ArgumentParser(prog=prog)
    action = parser.add_subparsers()
    WITH_COMMANDS[prog][1](action)
    return action.choices


class TestTopLevelHelp(testtools.TestCase):

    def test_commands_come_first_one_line_each(self):
        for prog, (commands, _) in WITH_COMMANDS.items():
            lines = run_help(prog, '--help').splitlines()
            self.assertEqual('usage: %s [OPTIONS] COMMAND [ARGS]' % prog,
                             lines[0])
            self.assertEqual(['', 'Commands:'], lines[1:3])
            listed = [line.split()[0] for line in lines[3:]
                      if line.startswith('  ') and line[2] != ' ']
            self.assertEqual([c.name for c in commands],
                             listed[:len(commands)])
            for c in commands:
                self.assertIn(c.summary.split()[0],
                              '\n'.join(lines[3:3 + 3 * len(commands)]))

    def test_help_is_all_the_output(self):
        # No library's log line or warning on stderr (PYTHONWARNINGS unset:
        # what an operator sees).
        env = {k: v for k, v in os.environ.items() if k != 'PYTHONWARNINGS'}
        for prog in PROGRAMS:
            result = subprocess.run(
                [sys.executable, '-m', PROGRAMS[prog], '--help'],
                capture_output=True, text=True, timeout=60, env=env)
            self.assertEqual((0, ''), (result.returncode, result.stderr),
                             prog)

    def test_logging_flags_only_with_help_all(self):
        for prog in PROGRAMS:
            short = run_help(prog, '--help')
            self.assertNotIn('--log-file', short)
            self.assertNotIn('--debug', short)
            self.assertIn('--help-all', short)
            full = run_help(prog, '--help-all')
            self.assertIn('--log-file', full)
            self.assertIn('--debug', full)

    def test_no_help_names_a_flag_that_does_not_exist(self):
        # --help-all is read before the parser (cmdline.argv_for_oslo).
        texts, defined = [], {cmdline.HELP_ALL}
        for prog in PROGRAMS:
            text = run_help(prog, '--help-all')
            texts.append(text)
            defined.update(defined_flags(text))
        for prog in WITH_COMMANDS:
            for parser in subparsers(prog).values():
                text = parser.format_help()
                texts.append(text)
                defined.update(defined_flags(text))
        for text in texts:
            # NOTE: oslo.config writes "The inverse of --<name>" (without
            # the group) for a boolean option of a group: not ours to fix.
            text = re.sub(r'The inverse of --\S+', '', text)
            for flag in FLAG.findall(text):
                self.assertIn(flag, defined, 'named in help, not a flag:\n'
                              + text)


class TestSubcommands(testtools.TestCase):

    def test_every_command_has_a_description_and_an_example(self):
        for prog in WITH_COMMANDS:
            for name, parser in subparsers(prog).items():
                self.assertTrue(parser.description, name)
                self.assertIn('Example:\n  %s %s' % (prog, name)
                              if name != 'env' else 'fedex-sandbox env',
                              parser.epilog)

    def test_every_flag_and_argument_has_help(self):
        for prog in WITH_COMMANDS:
            for name, parser in subparsers(prog).items():
                for action in parser._actions:
                    self.assertTrue(
                        action.help and action.help != argparse.SUPPRESS,
                        '%s %s: %s has no help' % (prog, name,
                                                   action.option_strings
                                                   or action.dest))

    def test_no_argument_is_hidden_by_a_configuration_name(self):
        # oslo.config answers CONF.command.<dest> with an error when <dest>
        # is also a group or option of the configuration, and .name with
        # the command's name.
        from oslo_log import _options as log_options
        taken = {'name', 'ceph', 'shipment', 'server', 'sandbox'} | {
            o.dest for o in log_options.list_opts()[0][1]}
        for prog in WITH_COMMANDS:
            for name, parser in subparsers(prog).items():
                for action in parser._actions:
                    self.assertNotIn(action.dest, taken, '%s %s %s' % (
                        prog, name, action.option_strings))

    def test_every_option_has_help(self):
        every = (opts.ceph_opts + opts.shipment_opts + opts.server_opts +
                 sandbox_opts.sandbox_opts +
                 cmdline.setting_cli_opts(cmdline.SETTING_FLAGS))
        for opt in every:
            self.assertTrue(opt.help, opt.name)


class TestOneSpelling(testtools.TestCase):

    def test_settings_are_spelled_alike_in_lsrp_and_lsrp_server(self):
        server = run_help('lsrp-server', '--help')
        lsrp = '\n'.join(p.format_help()
                         for p in subparsers('lsrp').values())
        for flag in cmdline.SETTING_FLAGS:
            self.assertIn('  %s ' % flag.flag, server)
            self.assertIn(' [%s ' % flag.flag, lsrp)
        for text in (server, lsrp):
            for old in ('--ceph-conf_file', '--server-tls_ca',
                        '--server-name NAME', '--ceph-site_name'):
                self.assertNotIn(old, text)

    def test_a_flag_sets_its_option(self):
        from oslo_config import cfg
        conf = cfg.ConfigOpts()
        conf.register_opts(opts.ceph_opts, group='ceph')
        conf.register_opts(opts.server_opts, group='server')
        conf.register_cli_opts(cmdline.setting_cli_opts(
            cmdline.SETTING_FLAGS))
        conf(['--ceph-conf', '/x.conf', '--tls-ca', 'ca.pem', '--name',
              't1'], default_config_files=[])
        cmdline.apply_cli_settings(conf, cmdline.SETTING_FLAGS)
        self.assertEqual('/x.conf', conf.ceph.conf_file)
        self.assertEqual('ca.pem', conf.server.tls_ca)
        self.assertEqual('t1', conf.server.name)
        self.assertEqual(60, conf.ceph.op_timeout)


class TestClosedStdout(testtools.TestCase):

    def test_a_reader_gone_away_ends_a_listing_quietly(self):
        # What 'fedex-sandbox wan-stats | head -1' does: no traceback.
        script = ('import sys\n'
                  'from lsrp import cmdline\n'
                  'try:\n'
                  '    for i in range(100000):\n'
                  '        print("line %d" % i)\n'
                  'except BrokenPipeError:\n'
                  '    sys.exit(cmdline.stdout_closed())\n')
        writer = subprocess.Popen([sys.executable, '-c', script],
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        self.assertEqual(b'line 0\n', writer.stdout.readline())
        writer.stdout.close()
        stderr = writer.stderr.read()
        self.assertEqual(141, writer.wait())
        self.assertEqual(b'', stderr)
