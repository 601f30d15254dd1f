"""The mini-cloud's services, catalog, zones and status.

A guest booted at site A by a member, a volume attached and a plain live
migration inside site A: tests/scenarios/test_guest_at_site_a (by hand
since 2026-11-29; in CI the demo's test moves a server with a volume by a
plain live migration inside site B after its FedEx cutover).
"""

import os
import subprocess
import sys

from tests.openstack import base


class TestStatus(base.CloudTestCase):

    def test_status_lists_every_service_running(self):
        exe = os.path.join(os.path.dirname(sys.executable), 'fedex-sandbox')
        result = subprocess.run([exe, 'status'], capture_output=True,
                                text=True)
        self.assertEqual(0, result.returncode, result.stdout + result.stderr)
        lines = result.stdout.splitlines()
        for svc in self.cloud.services():
            mine = [ln for ln in lines if ln.split()[:1] == [svc.name]]
            self.assertEqual(1, len(mine), svc.name)
            self.assertEqual('pid', mine[0].split()[1], mine[0])

    def test_catalog_has_every_service(self):
        types = {e['Type'] for e in self.os('catalog', 'list')}
        for t in ('identity', 'compute', 'placement', 'image',
                  'block-storage', 'network'):
            self.assertIn(t, types)

    def test_one_availability_zone_per_site(self):
        hosts = {h['Host']: h['Zone'] for h in self.os(
            'compute', 'service', 'list', '--service', 'nova-compute')}
        self.assertEqual({'site-a-h1': 'site-a', 'site-a-h2': 'site-a',
                          'site-b-h1': 'site-b', 'site-b-h2': 'site-b'},
                         hosts)

    def test_status_reports_a_disk_about_to_fill(self):
        exe = os.path.join(os.path.dirname(sys.executable), 'fedex-sandbox')
        result = subprocess.run([exe, '--sandbox-min_free_mib', '1000000000',
                                 'status'], capture_output=True, text=True)
        self.assertEqual(1, result.returncode, result.stdout)
        self.assertIn('SANDBOX_DISK_LOW', result.stdout)
