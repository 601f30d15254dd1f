"""``.. cli-help:: PROGRAM``: a program's help, as its real parser prints it.

Runs ``python -m <module> --help`` (and ``COMMAND --help`` for each command
the top-level help lists) when the docs are built, so the CLI reference
cannot drift from the code.
"""

import re
import subprocess
import sys

from docutils import nodes
from docutils.parsers.rst import Directive
from docutils.parsers.rst import directives

MODULES = {'lsrp': 'lsrp.cli', 'lsrp-server': 'lsrp.server.cli',
           'fedex-sandbox': 'fedex_sandbox.cli'}
COMMAND = re.compile(r'^  ([a-z][\w-]*)  ', re.M)


def run_help(program, *args):
    result = subprocess.run(
        [sys.executable, '-m', MODULES[program]] + list(args) + ['--help'],
        capture_output=True, text=True, timeout=120)
    if result.returncode:
        raise RuntimeError('%s %s --help failed: %s' % (
            program, ' '.join(args), result.stderr))
    return result.stdout


def commands(text):
    """The commands the top-level help lists, in order."""
    block = text.split('Commands:\n', 1)
    if len(block) < 2:
        return []
    return COMMAND.findall(block[1].split('\n\n', 1)[0])


class CliHelp(Directive):
    required_arguments = 1
    option_spec = {'commands': directives.flag}

    def run(self):
        program = self.arguments[0]
        top = run_help(program)
        out = [nodes.literal_block(top, top)]
        if 'commands' in self.options:
            for command in commands(top):
                section = nodes.section(
                    ids=[nodes.make_id('%s-%s' % (program, command))])
                section += nodes.title(text='%s %s' % (program, command))
                text = run_help(program, command)
                section += nodes.literal_block(text, text)
                out.append(section)
        return out


def setup(app):
    app.add_directive('cli-help', CliHelp)
    return {'parallel_read_safe': True, 'parallel_write_safe': True}
