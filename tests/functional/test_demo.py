"""README's first command: the demo, end to end, on the sandbox."""

import json
import os
import subprocess
import sys

from tests.functional import base


class TestDemo(base.FunctionalTestCase):

    def test_demo_moves_a_writing_vm_and_the_sites_agree(self):
        exe = os.path.join(os.path.dirname(sys.executable), 'fedex-sandbox')
        result = subprocess.run(
            [exe, '--sandbox-dir', self.sandbox.root, 'demo', '--ceph-only',
             '--disk-mib',
             '48', '--write-rate-mib', '0.5'],
            capture_output=True, text=True, timeout=600)
        self.assertEqual(0, result.returncode, result.stdout + result.stderr)
        summary = json.loads(result.stdout.strip().splitlines()[-1])
        self.assertTrue(summary['destination_equals_source'])
        self.assertGreater(summary['bytes_shipped'], 0)
        self.assertGreaterEqual(summary['rounds'], 2)
        self.assertGreater(summary['written_during_migration'], 0)
        self.assertIn('destination == source', result.stdout)
        # The demo cleans up after itself at both sites.
        names = [spec.split('/')[1] for spec in summary['images']]
        for site in ('site-a', 'site-b'):
            self.assertEqual([], [n for n in self.pool(site).list_images()
                                  if n in names])
