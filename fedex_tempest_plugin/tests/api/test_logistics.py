"""Shipments, devices, terminals and sites: the operator's hardware.

Projects do not see shipments, devices or terminals (admin or the
service role only); every project reads the sites, without their Ceph
paths and keyrings. Sites and terminals have no DELETE in the API: these
tests register none (only refused registrations); a device is registered
and retired.
"""

from tempest.lib.common.utils import data_utils
from tempest.lib.common.utils import test_utils
from tempest.lib import decorators

from fedex_tempest_plugin.tests import base

CONF = base.CONF
DEVICE_STATES = ('BLANK', 'ASSIGNED', 'WRITTEN', 'SEALED', 'SHIPPED',
                 'RECEIVED', 'VERIFIED', 'ERASED', 'MISSING', 'DAMAGED',
                 'RETURNING', 'LOST')
GiB = 1 << 30


class SitesTest(base.BaseFedexTest):

    @decorators.idempotent_id('53d1e966-e7ce-40cf-983c-8807393c8d7d')
    def test_list_and_show_for_everyone(self):
        zones = {CONF.fedex.site_a_name: CONF.fedex.site_a_zone,
                 CONF.fedex.site_b_name: CONF.fedex.site_b_zone}
        admin_view = {s['name']: s for s in
                      self.admin.list_sites(limit=1000)['sites']}
        for name, client in self.personas():
            sites = {s['name']: s for s in
                     client.list_sites(limit=1000)['sites']}
            self.assertEqual(zones, {n: sites[n]['availability_zone']
                                     for n in zones if n in sites}, name)
            if client is self.admin:
                continue
            for site in sites.values():
                # The Ceph paths and keyrings are for admins only; the
                # rest is the admin's view.
                self.assertEqual({k: v for k, v in admin_view[
                    site['name']].items() if not k.startswith('ceph_')},
                    site, name)
            one = client.show_site(sites[CONF.fedex.site_b_name]['id'])
            self.assertEqual(sites[CONF.fedex.site_b_name], one['site'])

    @decorators.idempotent_id('91862027-0ac8-42bb-82fa-76921f564b9b')
    def test_register_refused(self):
        for client in (self.member, self.reader, self.alt):
            self.assert_policy_refused('fedex:site:register',
                                       client.create_site,
                                       name=data_utils.rand_name('site'))
        self.assert_refused(409, self.admin.create_site,
                            code='fedex.Conflict',
                            detail='exists already',
                            name=CONF.fedex.site_a_name)
        self.assert_refused(400, self.admin.create_site,
                            code='fedex.invalid_body', detail='name',
                            name='')

    @decorators.idempotent_id('fc777e20-2ac5-48bf-9c22-08e12ecbc9eb')
    def test_unknown_site(self):
        unknown = data_utils.rand_uuid()
        for _, client in self.personas():
            self.assert_refused(404, client.show_site, unknown)


class TerminalsTest(base.BaseFedexTest):

    @decorators.idempotent_id('1db9d5f3-4cbc-4ccf-a001-241c8d0966f4')
    def test_list_and_show_as_admin(self):
        sites = {s['id']: s['name'] for s in
                 self.admin.list_sites(limit=1000)['sites']}
        terminals = self.admin.list_terminals(limit=1000)['terminals']
        # A terminal agent per site, heartbeating.
        up = {sites[t['site_id']] for t in terminals if t['health'] == 'UP'}
        self.assertLessEqual({CONF.fedex.site_a_name,
                              CONF.fedex.site_b_name}, up, terminals)
        first = terminals[0]
        shown = self.admin.show_terminal(first['id'])['terminal']
        self.assertEqual((first['id'], first['name'], first['site_id']),
                         (shown['id'], shown['name'], shown['site_id']))
        by_site = self.admin.list_terminals(site=CONF.fedex.site_a_name)
        self.assertEqual({CONF.fedex.site_a_name}, {
            sites[t['site_id']] for t in by_site['terminals']})

    @decorators.idempotent_id('511f0935-e8b7-46f0-9390-c238949fd172')
    def test_projects_refused(self):
        terminal = self.admin.list_terminals(limit=1)['terminals'][0]
        for _, client in self.personas()[1:]:
            self.assert_policy_refused('fedex:terminal:list',
                                       client.list_terminals)
            self.assert_policy_refused('fedex:terminal:show',
                                       client.show_terminal, terminal['id'])
            self.assert_policy_refused('fedex:terminal:register',
                                       client.register_terminal,
                                       name=data_utils.rand_name('term'),
                                       site=CONF.fedex.site_a_name)

    @decorators.idempotent_id('6f4ba680-81d1-4835-89fd-eb7f44c80c05')
    def test_register_bad_input(self):
        self.assert_refused(400, self.admin.register_terminal,
                            code='fedex.invalid_body', detail='site',
                            name=data_utils.rand_name('term'))
        self.assert_refused(404, self.admin.show_terminal,
                            data_utils.rand_uuid())


class DevicesTest(base.BaseFedexTest):

    def _terminal(self, site):
        terminals = self.admin.list_terminals(site=site)['terminals']
        self.assertNotEqual([], terminals, 'no terminal at %s' % site)
        return terminals[0]

    @decorators.idempotent_id('f51696cc-a395-4bf2-aa68-540f25b03a02')
    def test_list_as_admin(self):
        devices = self.admin.list_devices(limit=1000)['devices']
        names = {t['name'] for t in
                 self.admin.list_terminals(limit=1000)['terminals']}
        for d in devices:
            self.assertIn(d['state'], DEVICE_STATES, d)
            self.assertIn(d['home_terminal'], names, d)
        # Site A's terminal has devices (the scenario's seed needs them).
        site_a = self._terminal(CONF.fedex.site_a_name)
        at_a = self.admin.list_devices(home_terminal=site_a['name'])
        self.assertNotEqual([], at_a['devices'])
        self.assertEqual({site_a['name']},
                         {d['home_terminal'] for d in at_a['devices']})

    @decorators.idempotent_id('1b2f21e3-25a1-490b-8131-69a021fa8b8c')
    def test_register_show_retire(self):
        terminal = self._terminal(CONF.fedex.site_b_name)
        serial = data_utils.rand_name('tempest-dev').replace('_', '-')
        d = self.admin.create_device(serial=serial, capacity_bytes=GiB,
                                     terminal=terminal['name'])['device']
        self.addCleanup(test_utils.call_and_ignore_notfound_exc,
                        self.admin.delete_device, d['id'])
        self.assertEqual((serial, 'BLANK', GiB, terminal['id'],
                          terminal['name'], terminal['name']),
                         (d['serial'], d['state'], d['capacity_bytes'],
                          d['terminal_id'], d['terminal'],
                          d['home_terminal']))
        shown = self.admin.show_device(d['id'])['device']
        self.assertEqual((d['id'], serial, 'BLANK'),
                         (shown['id'], shown['serial'], shown['state']))
        self.assertIn(d['id'], self.ids(self.admin.list_devices(
            home_terminal=terminal['name'], limit=1000)['devices']))
        for _, client in self.personas()[1:]:
            self.assert_policy_refused('fedex:device:show',
                                       client.show_device, d['id'])
            self.assert_policy_refused('fedex:device:delete',
                                       client.delete_device, d['id'])
        # Not listed by its terminal (nothing is plugged in): retired.
        self.admin.delete_device(d['id'])
        self.assert_refused(404, self.admin.show_device, d['id'])

    @decorators.idempotent_id('356121c6-637e-4a72-bb57-ef4566d0c433')
    def test_retire_plugged_in_refused(self):
        # A device its terminal lists (plugged in) would be registered
        # again at the next heartbeat: unplug it first.
        terminal = self._terminal(CONF.fedex.site_a_name)
        listed = {x['serial'] for x in (terminal.get('info') or {}).get(
            'devices') or ()}
        blank = [d for d in self.admin.list_devices(
            terminal=terminal['name'], state='BLANK',
            limit=1000)['devices'] if d['serial'] in listed]
        self.assertNotEqual([], blank, 'no blank device plugged into %s'
                            % terminal['name'])
        # 409 "unplug it first"; or, if the scenario's seed took it in the
        # meantime (tempest run --concurrency 2), 409 for its state.
        errors = self.assert_refused(409, self.admin.delete_device,
                                     blank[0]['id'], code='fedex.Conflict')
        self.assertTrue('unplug it' in errors[0]['detail'] or
                        'only a ' in errors[0]['detail'], errors)
        self.assertEqual(blank[0]['serial'], self.admin.show_device(
            blank[0]['id'])['device']['serial'])

    @decorators.idempotent_id('5055cf7e-fcbf-4bfd-92d0-c9437c47999d')
    def test_projects_refused(self):
        terminal = self._terminal(CONF.fedex.site_b_name)
        for _, client in self.personas()[1:]:
            self.assert_policy_refused('fedex:device:list',
                                       client.list_devices)
            self.assert_policy_refused(
                'fedex:device:create', client.create_device,
                serial='tempest-x', capacity_bytes=GiB,
                terminal=terminal['name'])

    @decorators.idempotent_id('eead1bdf-2f20-4f84-aa87-2abe03f6fea7')
    def test_register_bad_input(self):
        terminal = self._terminal(CONF.fedex.site_b_name)
        self.assert_refused(400, self.admin.create_device,
                            code='fedex.invalid_body',
                            detail='capacity_bytes', serial='tempest-x',
                            capacity_bytes=0, terminal=terminal['name'])
        self.assert_refused(404, self.admin.show_device,
                            data_utils.rand_uuid())


class ShipmentsTest(base.BaseFedexTest):

    @decorators.idempotent_id('1edb7732-3d5f-489f-a4d1-48458b7d1f8a')
    def test_list_as_admin(self):
        shipments = self.admin.list_shipments(limit=1000)['shipments']
        self.assertIsInstance(shipments, list)
        for s in shipments:
            shown = self.admin.show_shipment(s['id'])['shipment']
            self.assertEqual((s['id'], s['state']),
                             (shown['id'], shown['state']))
            break
        seeds = self.admin.list_shipments(kind='seed', limit=1000)
        self.assertLessEqual(self.ids(seeds['shipments']),
                             self.ids(shipments))
        self.assert_refused(400, self.admin.list_shipments, kind='parcel',
                            detail='kind')
        self.assert_refused(404, self.admin.show_shipment,
                            data_utils.rand_uuid())

    @decorators.idempotent_id('94484ae7-364f-4de3-adf5-7bb1a3cbcb65')
    def test_projects_refused(self):
        unknown = data_utils.rand_uuid()
        for _, client in self.personas()[1:]:
            self.assert_policy_refused('fedex:shipment:list',
                                       client.list_shipments)
            # Refused before it is looked up: no telling what exists.
            self.assert_policy_refused('fedex:shipment:show',
                                       client.show_shipment, unknown)
