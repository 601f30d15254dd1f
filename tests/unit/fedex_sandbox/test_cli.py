"""``fedex-sandbox`` on a terminal: its answer, no library's lines."""

import os
import subprocess
import sys

import fixtures
import testtools


class TestStatus(testtools.TestCase):

    def test_status_of_no_sandbox_answers_alone(self):
        root = self.useFixture(fixtures.TempDir()).path
        # PYTHONWARNINGS unset: what an operator sees. The manager's layer
        # imports oslo.service and oslo.messaging once logging is set up.
        env = {k: v for k, v in os.environ.items()
               if k not in ('PYTHONWARNINGS', 'FEDEX_SANDBOX_BASE_PORT')}
        result = subprocess.run(
            [sys.executable, '-m', 'fedex_sandbox.cli', '--sandbox-dir', root,
             '--sandbox-base_port', '27000', 'status'],
            capture_output=True, text=True, timeout=120, env=env)
        self.assertEqual('', result.stderr)
        self.assertEqual(1, result.returncode)    # not healthy: not created
        lines = result.stdout.splitlines()
        self.assertEqual('site-a: NOT CREATED  fsid=-', lines[0])
        self.assertIn('manager: not set up (fedex-sandbox up starts it)',
                      lines)
