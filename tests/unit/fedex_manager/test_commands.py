"""The manager's commands: their answer alone on a terminal; the agent's
life under oslo.service's launcher.

Each runs in a process of its own, as its console script does (setup.cfg),
without PYTHONWARNINGS: what an operator sees.
"""

import os
import signal
import subprocess
import sys
import time
from unittest import mock

import fixtures
import testtools

from fedex_manager.agent import agent as agent_mod

# console_scripts of setup.cfg.
ENTRY_POINTS = {'fedex-manage': 'fedex_manager.cmd.manage',
                'fedex-conductor': 'fedex_manager.conductor',
                'lsrp-agent': 'fedex_manager.agent.agent',
                'fedex-api': 'fedex_manager.api.server'}


def argv(prog, *args):
    return [sys.executable, '-c',
            'import sys; from %s import main; sys.argv[0] = %r; '
            'sys.exit(main())' % (ENTRY_POINTS[prog], prog)] + list(args)


def environ():
    return {k: v for k, v in os.environ.items() if k != 'PYTHONWARNINGS'}


def run(prog, *args):
    return subprocess.run(argv(prog, *args), capture_output=True, text=True,
                          timeout=120, env=environ())


class TestQuietCommands(testtools.TestCase):
    """No library's log lines or warnings before the answer."""

    def test_help_is_all_the_output(self):
        for prog in ENTRY_POINTS:
            result = run(prog, '--help')
            self.assertEqual(0, result.returncode, result.stderr)
            self.assertEqual('', result.stderr, prog)
            self.assertTrue(result.stdout.startswith('usage: %s ' % prog),
                            result.stdout)

    def test_db_sync_and_version_answer_alone_unless_debug(self):
        work = self.useFixture(fixtures.TempDir()).path
        conf = os.path.join(work, 'manage.conf')
        with open(conf, 'w') as f:
            f.write('[database]\nconnection = sqlite:///%s/m.sqlite\n'
                    % work)
        sync = run('fedex-manage', '--config-file', conf, 'db', 'sync')
        self.assertEqual(0, sync.returncode, sync.stderr)
        self.assertEqual('', sync.stderr)
        self.assertIn('fedex-manage: schema at ', sync.stdout)
        version = run('fedex-manage', '--config-file', conf, 'db',
                      'version')
        self.assertEqual(('', 1), (version.stderr,
                                   len(version.stdout.splitlines())))
        # The libraries' lines are there with --debug (alembic's).
        debug = run('fedex-manage', '--config-file', conf, '--debug', 'db',
                    'version')
        self.assertIn('alembic', debug.stderr)
        self.assertEqual(version.stdout, debug.stdout)


class TestAgentService(testtools.TestCase):
    """lsrp-agent under oslo.service's launcher, as fedex-conductor."""

    def start_agent(self):
        work = self.useFixture(fixtures.TempDir()).path
        conf = os.path.join(work, 'agent.conf')
        with open(conf, 'w') as f:
            f.write('[DEFAULT]\ntransport_url = fake:/\n'
                    '[agent]\nname = terminal-t\nserve_lsrp = false\n'
                    '[shipment]\nstate_dir = %s/state\n'
                    '[shipment_keys]\nkey_dir = %s/keys\n' % (work, work))
        proc = subprocess.Popen(argv('lsrp-agent', '--config-file', conf),
                                stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True,
                                env=environ(), start_new_session=True)
        self.addCleanup(self.kill_group, proc.pid)
        self.addCleanup(proc.stdout.close)
        # What the sandbox's log shows when it runs.
        self.assertEqual('lsrp-agent terminal-t: serving '
                         'fedex-terminal.terminal-t\n', proc.stdout.readline())
        workers = subprocess.run(['ps', '-o', 'pid=', '--ppid',
                                  str(proc.pid)], capture_output=True,
                                 text=True).stdout.split()
        self.assertEqual(1, len(workers))
        return proc, int(workers[0])

    @staticmethod
    def kill_group(pgid):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def assert_exits(self, pid, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with open('/proc/%d/stat' % pid) as f:
                    # State after the name: Z once it exited.
                    if f.read().rsplit(')', 1)[1].split()[0] == 'Z':
                        return
            except FileNotFoundError:
                return
            time.sleep(0.05)
        self.fail('process %d still runs after %d s' % (pid, timeout))

    def test_sigterm_stops_it(self):
        proc, worker = self.start_agent()
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(0, proc.wait(60))
        self.assert_exits(worker)

    def test_kill_9_ends_the_worker_too(self):
        # As when the agent was one process: an agent started again does
        # not meet the old one's operations or LSRP port.
        proc, worker = self.start_agent()
        proc.kill()
        proc.wait(60)
        self.assert_exits(worker, timeout=5)


class TestAgentServiceStop(testtools.TestCase):

    def service(self, master_pid):
        svc = agent_mod.AgentService(mock.Mock())
        svc.master_pid = master_pid
        return svc

    def test_a_worker_whose_master_died_exits_at_once(self):
        exit_ = self.useFixture(fixtures.MockPatch(
            'os._exit', side_effect=SystemExit)).mock
        svc = self.service(master_pid=-1)   # neither we nor our parent
        self.assertRaises(SystemExit, svc.stop)
        exit_.assert_called_once_with(1)
        svc.agent.stop.assert_not_called()

    def test_stop_in_the_worker_and_in_the_master(self):
        exit_ = self.useFixture(fixtures.MockPatch('os._exit')).mock
        for master_pid in (os.getppid(), os.getpid()):
            svc = self.service(master_pid)
            svc.stop()
            svc.agent.stop.assert_called_once_with()
        exit_.assert_not_called()
