"""A server booted at site A moved to site B by a FedEx migration.

What ``openstack server migrate --live-migration --fedex --site B
--cutover approved`` does (nova_fedex/osc/v1/common.py,
``migration_request``), through the same API calls: the source site from
the server's availability zone (GET /v1/sites), the server's Nova root
disk as its one image, POST /v1/migrations; then the cutover approved
(POST .../action ``cutover``) once READY_FOR_CUTOVER. The cloud's
conductor and terminal agents do the rest: snapshot, export to devices,
the courier, import, WAN catch-up, and nova_fedex's cutover (a Nova live
migration, the guest paused at B, the final delta, resume).

Checked: each persona's view of the running migration (another project's
member gets 404), COMPLETED, the server ACTIVE on a host of site B,
nova_fedex's own comparison of the disks (``final_state_checked``), and,
with ``[fedex] compare_disks``, ``rbd export | sha256sum`` of the source
image at A (its QEMU stopped) against B's record of its state at the
resume, and B's image changed since (the guest runs at B).
"""

import shlex
import subprocess
import time

from tempest.common import waiters
from tempest.lib.common import api_microversion_fixture
from tempest.lib.common.utils import data_utils
from tempest.lib.common.utils import test_utils
from tempest.lib import decorators
from tempest.lib import exceptions as lib_exc

from fedex_tempest_plugin.tests import base

CONF = base.CONF
# networks='none' in POST /servers (the cloud may have no Neutron).
COMPUTE_MICROVERSION = '2.37'
# Nova's RBD image of a server's root disk (images_type = rbd).
NOVA_DISK = 'vms/%s_disk'
# B's record of an image's state at the resume (lsrp/server/records.py):
# the clone <image>.<snapshot> and its snapshot, named after the migration.
FINAL = 'fedex-final-%s'
BAD_END = ('FAILED', 'ABORTED')
# The seed needs more blank devices at site A than its parity (1).
SEED_DEVICES = 2
# Kept one day at A after the cutover (the evidence of the disk checks);
# the conductor cleans the migration up then and the devices go home.
RETENTION_DAYS = 1


class ServerMigrateFedexTest(base.BaseFedexTest):

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.fedex.run_scenario:
            raise cls.skipException('[fedex] run_scenario is False')

    @classmethod
    def setup_credentials(cls):
        # No networks: the server boots with networks='none'.
        cls.set_network_resources()
        super().setup_credentials()

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.servers = cls.os_project_member.servers_client
        cls.admin_servers = cls.os_project_admin.servers_client
        cls.admin_services = cls.os_project_admin.services_client

    def setUp(self):
        super().setUp()
        self.useFixture(api_microversion_fixture.APIMicroversionFixture(
            compute_microversion=COMPUTE_MICROVERSION))

    # --- steps ----------------------------------------------------------

    def wait_blank_devices(self):
        """Site A's terminals hold enough blank devices for the seed."""
        terminals = [t['name'] for t in self.admin.list_terminals(
            site=CONF.fedex.site_a_name)['terminals'] if t['health'] == 'UP']
        self.assertNotEqual([], terminals, 'no terminal of %s is UP'
                            % CONF.fedex.site_a_name)
        deadline = time.monotonic() + CONF.fedex.build_timeout
        while True:
            blank = [d['serial'] for t in terminals
                     for d in self.admin.list_devices(
                         terminal=t, state='BLANK', limit=1000)['devices']]
            if len(blank) >= SEED_DEVICES:
                return blank
            if time.monotonic() > deadline:
                self.fail('%d blank device(s) at %s (%s), the seed needs %d:'
                          ' register devices at its terminal' % (
                              len(blank), CONF.fedex.site_a_name,
                              ', '.join(terminals), SEED_DEVICES))
            time.sleep(CONF.fedex.build_interval)

    def boot_at_site_a(self):
        server = self.servers.create_server(
            name=data_utils.rand_name('fedex-server'),
            imageRef=CONF.compute.image_ref,
            flavorRef=CONF.compute.flavor_ref,
            availability_zone=CONF.fedex.site_a_zone,
            networks='none')['server']
        self.addCleanup(waiters.wait_for_server_termination, self.servers,
                        server['id'])
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        self.servers.delete_server, server['id'])
        waiters.wait_for_server_status(self.servers, server['id'], 'ACTIVE')
        return self.admin_servers.show_server(server['id'])['server']

    def zone_hosts(self, zone):
        return {s['host'] for s in self.admin_services.list_services(
            binary='nova-compute')['services'] if s['zone'] == zone}

    def migration_request(self, server):
        """The body ``openstack server migrate --fedex`` sends."""
        zone = server['OS-EXT-AZ:availability_zone']
        source = [s['name'] for s in self.member.list_sites(
            limit=1000)['sites'] if s.get('availability_zone') == zone or
            s['name'] == zone]
        self.assertEqual([CONF.fedex.site_a_name], source,
                         'the site of zone %s' % zone)
        return {'servers': [{'server_id': server['id'], 'volumes': [
                    {'source_image': NOVA_DISK % server['id'],
                     'kind': 'disk'}]}],
                'source_site': source[0],
                'dest_site': CONF.fedex.site_b_name,
                'name': data_utils.rand_name('fedex-migration'),
                'options': {'cutover': 'approved',
                            'retention_days': RETENTION_DAYS}}

    def forecast(self, request):
        """POST /v1/plans of the request: its servers' figures, kept."""
        plan = self.member.create_plan(migration=request)['plan']
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        self.member.delete_plan, plan['id'])
        self.assertEqual(self.project_id, plan['project_id'])
        self.assertEqual(request, plan['request']['migration'])
        self.assertEqual([request['servers'][0]['server_id']],
                         [s.get('server_id') for s in
                          plan['inputs']['servers']])
        self.assertGreater(plan['fedex']['total_time'], 0)
        self.assertIn(plan['recommended'], ('wan', 'fedex'))
        self.member.delete_plan(plan['id'])

    def wait_state(self, migration_id, states):
        deadline = time.monotonic() + CONF.fedex.migration_timeout
        while True:
            m = self.member.show_migration(migration_id,
                                           events_limit=0)['migration']
            if m['state'] in states:
                return m
            if m['state'] in BAD_END:
                self.fail('migration %s is %s: %s' % (
                    m['id'], m['state'], m.get('last_error')))
            if time.monotonic() > deadline:
                self.fail('migration %s still %s after %d s (waiting for '
                          '%s)' % (m['id'], m['state'],
                                   CONF.fedex.migration_timeout,
                                   ', '.join(states)))
            time.sleep(CONF.fedex.build_interval)

    def check_personas(self, m):
        """Each persona's view of a running migration of the project."""
        mid = m['id']
        self.assertEqual(mid, self.reader.show_migration(mid)[
            'migration']['id'])
        for client in (self.member, self.reader):
            self.assertIn(mid, self.ids(
                client.list_migrations()['migrations']))
        self.assertIn(mid, self.ids(self.admin.list_migrations(
            all_projects='true')['migrations']))
        self.assertEqual(self.project_id, self.admin.show_migration(
            mid)['migration']['project_id'])
        # Another project's member: as if it did not exist.
        self.assertNotIn(mid, self.ids(self.alt.list_migrations()[
            'migrations']))
        gone = {'code': 'fedex.NotFound',
                'detail': 'migration %s does not exist' % mid}
        self.assert_refused(404, self.alt.show_migration, mid, **gone)
        self.assert_refused(404, self.alt.update_migration, mid,
                            rate_cap=1, **gone)
        self.assert_refused(404, self.alt.migration_action, mid, 'abort',
                            **gone)
        self.assert_refused(404, self.alt.migration_action, mid, 'cutover',
                            **gone)
        self.assert_refused(404, self.alt.delete_migration, mid, **gone)
        # Its reader sees it but changes nothing.
        self.assert_policy_refused('fedex:migration:update',
                                   self.reader.update_migration, mid,
                                   rate_cap=1)
        self.assert_policy_refused('fedex:migration:abort',
                                   self.reader.migration_action, mid, 'abort')
        self.assert_policy_refused('fedex:migration:cutover',
                                   self.reader.migration_action, mid,
                                   'cutover')
        # Its member: a running migration is not deleted.
        self.assert_refused(409, self.member.delete_migration, mid,
                            detail='abort it first')
        renamed = self.member.update_migration(
            mid, name=m['name'] + '-renamed')['migration']
        self.assertEqual(m['name'] + '-renamed', renamed['name'])

    def final_state_event(self, mid):
        """nova_fedex's comparison of the disks after the resume."""
        deadline = time.monotonic() + CONF.fedex.build_timeout
        while True:
            for e in self.member.list_events(migration=mid, sort_dir='desc',
                                             limit=200)['events']:
                event = (e.get('details') or {}).get('event') or ''
                if event.startswith('final_state_'):
                    return e
            if time.monotonic() > deadline:
                self.fail('no final_state_* event of migration %s in %d s'
                          % (mid, CONF.fedex.build_timeout))
            time.sleep(CONF.fedex.build_interval)

    def sha256(self, site, spec):
        """``rbd export <spec> - | sha256sum`` at ``site``.

        With the site's Ceph conf and keyring as fedex-api's admin view
        of the site gives them.
        """
        s = self.admin.show_site(site)['site']
        argv = ['rbd', '-c', s['ceph_conf'], '--id', s.get('ceph_client') or
                'admin']
        if s.get('ceph_keyring'):
            argv += ['--keyring', s['ceph_keyring']]
        cmd = '%s export --no-progress %s - | sha256sum' % (
            ' '.join(shlex.quote(a) for a in argv), shlex.quote(spec))
        out = subprocess.run(['bash', '-o', 'pipefail', '-c', cmd],
                             capture_output=True, text=True)
        self.assertEqual(0, out.returncode, '%s: %s' % (cmd, out.stderr))
        return out.stdout.split()[0]

    # --- the test ---------------------------------------------------------

    @decorators.attr(type='slow')
    @decorators.idempotent_id('134a8856-cf7f-4143-93c7-fd44b057ef87')
    def test_server_migrate_fedex(self):
        self.wait_blank_devices()
        server = self.boot_at_site_a()
        sid = server['id']
        self.assertIn(server['OS-EXT-SRV-ATTR:host'],
                      self.zone_hosts(CONF.fedex.site_a_zone))
        request = self.migration_request(server)
        self.forecast(request)

        m = self.member.create_migration(**request)
        self.assertTrue(m.response['location'].endswith(
            '/v1/migrations/%s' % m['migration']['id']), m.response)
        m = m['migration']
        self.assertEqual((self.project_id, request['name'], [sid]),
                         (m['project_id'], m['name'],
                          [s['server_id'] for s in m['servers']]))
        self.assertEqual([NOVA_DISK % sid],
                         [v['source_image'] for v in m['volumes']])
        self.assertFalse(m['cutover_approved'])
        self.check_personas(m)

        m = self.wait_state(m['id'], ('READY_FOR_CUTOVER',))
        self.assertFalse(m['cutover_approved'])
        # Nothing moved before the approval: the server is still at A.
        self.assertIn(self.admin_servers.show_server(sid)['server'][
            'OS-EXT-SRV-ATTR:host'], self.zone_hosts(CONF.fedex.site_a_zone))
        approved = self.member.migration_action(m['id'], 'cutover')
        self.assertTrue(approved['migration']['cutover_approved'])
        m = self.wait_state(m['id'], ('COMPLETED',))

        server = self.admin_servers.show_server(sid)['server']
        self.assertEqual('ACTIVE', server['status'])
        self.assertIn(server['OS-EXT-SRV-ATTR:host'],
                      self.zone_hosts(CONF.fedex.site_b_zone))
        self.assertEqual(CONF.fedex.site_b_zone,
                         server['OS-EXT-AZ:availability_zone'])
        event = self.final_state_event(m['id'])
        self.assertEqual('final_state_checked', event['details']['event'],
                         event)
        # One disk compared (its digest per image): the root disk.
        disks = list(event['details']['disks'])
        self.assertEqual(1, len(disks), event)
        self.assertTrue(disks[0].endswith('%s_disk' % sid), event)
        if not CONF.fedex.compare_disks:
            return
        # Our own comparison, with rbd: A's image (its QEMU stopped at the
        # pause) against B's record of its state at the resume.
        dest = m['volumes'][0].get('dest_image') or NOVA_DISK % sid
        pool, name = dest.split('/', 1)
        final = FINAL % m['id'][:8]
        record = '%s/%s.%s@%s' % (pool, name, final, final)
        at_a = self.sha256(CONF.fedex.site_a_name, NOVA_DISK % sid)
        at_b = self.sha256(CONF.fedex.site_b_name, record)
        self.assertEqual(at_a, at_b, 'site A %s, site B %s'
                         % (NOVA_DISK % sid, record))
        # The guest goes on at B: its image has changed since the resume.
        self.assertNotEqual(at_b, self.sha256(CONF.fedex.site_b_name, dest))
        # A finished migration is kept until the retention ends.
        self.assert_refused(409, self.member.delete_migration, m['id'])
        self.assertRaises(lib_exc.NotFound, self.alt.show_migration,
                          m['id'])
