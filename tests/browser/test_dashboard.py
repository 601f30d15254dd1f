"""The dashboard in a real headless Chromium against the sandbox's
mini-cloud: its Keystone (real users), fedex-api (its policy, the sandbox
manager's database), Horizon under uwsgi, and the sandbox's real manager
(fedex-conductor, a terminal agent per site, the simulated courier).

A member creates, from the panel's form, the migration of a real Nova
server of the cloud (the tiny guest, booted at site-a; fedex-api's
preflight asks Nova for it), whose root disk ``vms/<server>_disk`` a writer
in the test also keeps changing; the manager exports it to devices, ships them, imports and
catches up while the migrations page refreshes the row by itself; the
catch-up tab charts the rounds the manager recorded; the member approves
the cutover. A member of another project sees only their own migration
(another's, by its address, is not found); a reader gets fedex-api's
refusal as Horizon's message. That other
migration goes by the manual courier: the admin records its hand-over and,
once its devices are in the site-b terminal's slots, its delivery through
the Record Carrier Event form, and the manager imports it.

The tests run in order (their names) on the same two migrations.
"""

import os
import shutil
import time
import uuid

from fedex_sandbox import demo
from fedex_sandbox.services import guest_reader
from lsrp import exception
from lsrp.server import records
from tests.browser import base

MIB = 1 << 20
MIGRATIONS = '/project/fedex_migrations/'
ADMIN_MIGRATIONS = '/admin/fedex_migrations/'
FINAL = ('COMPLETED', 'CLEANED', 'FAILED', 'ABORTED')
# Past the courier's delivery: from here the row is polled to the end of
# the catch-up (IN_TRANSIT and earlier settled states are not polled).
AFTER_DELIVERY = ('DELIVERED', 'IMPORTING', 'CATCHING_UP')
# The catch-up of the member's migration must stay in CATCHING_UP until
# test 8 pauses the writer, by design, on a loaded machine as on a quiet
# one. The convergence threshold (192 KiB) is below one of the writer's
# blocks (256 KiB) and above the guest's own writes (its tick ring is
# 128 KiB): a round converges only if the writer wrote nothing at all
# while the previous one ran (it writes every 1/16 s plus the write's
# latency; a round took 0.6 to 2.7 s at load 60). Its writes stay in a
# 16 MiB span, so a round sends at most 16 MiB (16 s at the 1 MiB/s cap)
# however fast it writes. max_rounds (1000) keeps the catch-up from going
# READY anyway. (With the defaults, 8 MiB and 10 rounds, it converged in
# 3 rounds, 24 s, between two polls of the page.)
WRITE_RATE = 4 * MIB
WRITE_BLOCK = 256 << 10
WRITE_SPAN = (4 * MIB, 20 * MIB)        # the guest's ring is at 1 MiB
RATE_CAP_MIB = 1
THRESHOLD_MIB = '0.1875'
MAX_ROUNDS = 1000
# The sandbox's manager on a loaded machine: export, courier, import.
DRIVE_TIMEOUT = 900
# Where the servers boot (the mini-cloud's first compute host of site-a).
SITE_A_HOST = 'site-a-h1'


def row(mid):
    return 'tr[data-object-id="%s"]' % mid


def cell(mid, name):
    return '%s td[data-fedex-cell="%s"]' % (row(mid), name)


class TestDashboard(base.BrowserTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.addClassCleanup(cls.clean_up)
        cls.tag = uuid.uuid4().hex[:6]
        cls.images, cls.created, cls.servers = [], [], []
        cls.writer = None
        # Each migration takes its devices (data and parity) for good.
        cls.blank_devices(6)
        cls.web = cls.server('web-%s' % cls.tag)
        cls.db = cls.server('db-%s' % cls.tag)
        cls.writer = demo.Writer(cls.stack.clusters['site-a'],
                                 ['vms/%s_disk' % cls.web], WRITE_RATE,
                                 block=WRITE_BLOCK, span=WRITE_SPAN)
        cls.writer.start()
        cls.p2 = cls.api('fedex-member2', 'POST', '/v1/migrations', json={
            'name': 'p2-%s' % cls.db, 'servers': [cls.db],
            'source_site': 'site-a', 'dest_site': 'site-b',
            'options': {'cutover': 'approved', 'carrier': 'manual'}}
        )['migration']
        cls.created.append(cls.p2['id'])
        cls.p1 = None

    # --- the world the tests act in ------------------------------------------

    @classmethod
    def blank_devices(cls, count):
        """``count`` blank devices in the site-a terminal's slots."""
        terminal = cls.stack.sandbox.terminal('site-a')[0]
        cls.stack.manager.dep.make_slots('site-a', count)
        deadline = time.monotonic() + 120
        while True:
            terms = {t['id']: t['name'] for t in cls.api(
                'fedex-admin', 'GET', '/v1/terminals')['terminals']}
            blank = [d for d in cls.api('fedex-admin', 'GET', '/v1/devices',
                                        params={'state': 'BLANK'})['devices']
                     if terms.get(d.get('terminal_id')) == terminal]
            if len(blank) >= count:
                return blank
            if time.monotonic() > deadline:
                raise AssertionError('%s reports %d blank devices, not %d, '
                                     'after 120 s' % (terminal, len(blank),
                                                      count))
            time.sleep(2)

    @classmethod
    def server(cls, name):
        """A real server of the cloud at site-a (the tiny guest); its id.

        Its disk is the guest's (a kernel and initramfs outside it): the
        guest ticks into a ring at 1 MiB, the test's writer may write
        anywhere else in the 1 GiB without harming it.
        """
        server = cls.stack.cloud.openstack(
            'server', 'create', '--flavor', 'm1.mini', '--image', 'guest',
            '--nic', 'none', '--availability-zone', 'site-a:%s' % SITE_A_HOST,
            '--wait', name, timeout=900)
        cls.servers.append(server['id'])
        cls.images.append('%s_disk' % server['id'])
        return server['id']

    @classmethod
    def clean_up(cls):
        if cls.writer is not None:
            cls.writer.stopped.set()
            cls.writer.resume()
            cls.writer.join()
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            left = [m for m in map(cls.migration, cls.created)
                    if m['state'] not in FINAL]
            if not left:
                break
            for m in left:
                # Not one whose cutover runs (it ends by itself, and may
                # come back to READY_FOR_CUTOVER: aborted then).
                if 'abort' in (m.get('allowed_actions') or ()):
                    cls.api('fedex-admin', 'POST', '/v1/migrations/%s/action'
                            % m['id'], json={'abort': {
                                'reason': 'browser tests done'}})
            time.sleep(3)
        for sid in cls.servers:
            # An admin may delete a server its migration locked in Nova.
            cls.stack.cloud.openstack_plain('server', 'delete', '--wait', sid,
                                            check=False)
        for site in ('site-a', 'site-b'):
            with cls.stack.clusters[site].pool('vms') as p:
                for name in cls.images:
                    cls.remove_image(p, name)

    @classmethod
    def remove_image(cls, pool, name):
        """Remove image ``name`` and its snapshots, if still there.

        The manager (an abort's clean-up) and Nova (the server's delete)
        may be removing the same snapshots and image meanwhile: what is
        gone already is fine.
        """
        gone = (exception.ImageNotFound, exception.SnapshotNotFound)
        try:
            if not pool.image_exists(name):
                return
            # A cutover's record of the final state at B is a clone of a
            # snapshot of the image (lsrp.server.records): it goes first.
            records.remove(pool, name, prefixes=('',))
            with pool.open_image(name) as img:
                for snap in reversed(img.list_snapshots()):
                    if snap.namespace != 'user':
                        continue
                    try:
                        if snap.protected:
                            img.unprotect_snapshot(snap.name)
                        img.remove_snapshot(snap.name)
                    except exception.SnapshotNotFound:
                        pass
            pool.remove_image(name)
        except gone:
            pass

    @classmethod
    def migration(cls, mid):
        return cls.api('fedex-admin', 'GET',
                       '/v1/migrations/%s' % mid)['migration']

    @classmethod
    def state(cls, mid):
        return cls.migration(mid)['state']

    def wait_state(self, mid, wanted, timeout=DRIVE_TIMEOUT):
        deadline = time.monotonic() + timeout
        while True:
            m = self.migration(mid)
            if m['state'] in wanted:
                return m
            if m['state'] in FINAL:
                self.fail('migration %s is %s, not %s: %s' % (
                    mid, m['state'], ' or '.join(wanted), m.get('last_error')))
            if time.monotonic() > deadline:
                self.fail('migration %s still %s after %d s, not %s' % (
                    mid, m['state'], timeout, ' or '.join(wanted)))
            time.sleep(3)

    def cell_text(self, mid, name):
        return self.browser.text_of(cell(mid, name)).strip()

    # --- the tests, in order -------------------------------------------------

    def test_1_member_previews_the_plan_and_creates_a_migration(self):
        b = self.browser
        self.login('fedex-member1')
        b.get(MIGRATIONS + 'create/')
        name = 'wave-%s' % self.tag
        b.fill('#id_name', name)
        b.fill('#id_servers', self.web)
        b.select('#id_source_site', 'site-a')
        b.select('#id_dest_site', 'site-b')
        b.fill('#id_rate_cap', str(RATE_CAP_MIB))
        b.fill('#id_threshold_mib', THRESHOLD_MIB)
        b.fill('#id_max_rounds', str(MAX_ROUNDS))
        # The forecast reads the server's disk, memory and the link itself;
        # the writer's rate is what only the test knows.
        b.fill('#id_write_mib', '4')
        b.click('#fedex-preview')
        b.find('.fedex-plan')
        self.assertIn('Recommended', b.text())
        self.assertIn('Assumes', b.text())
        # 4 MiB/s of writes against the 1 MiB/s cap: said before it starts.
        self.assertIn('the catch-up will not converge', b.text())
        b.shot('create-with-plan-preview')
        b.click('input.btn-primary[type="submit"]')
        b.wait(lambda d: d.current_url.rstrip('/').endswith(
            'fedex_migrations'), 120, 'the list after creation')
        self.assertIn('Migration %s created' % name, ' '.join(b.messages()))
        mine = [m for m in self.api('fedex-member1', 'GET',
                                    '/v1/migrations')['migrations']
                if m['name'] == name]
        self.assertEqual(1, len(mine), 'one migration named %s' % name)
        type(self).p1 = mine[0]
        self.created.append(mine[0]['id'])
        self.assertEqual([{'server_id': self.web}],
                         [{'server_id': s['server_id']}
                          for s in mine[0]['servers']])
        self.assertEqual((192 << 10, MAX_ROUNDS, RATE_CAP_MIB * MIB), tuple(
            mine[0]['options'][k]
            for k in ('threshold_bytes', 'max_rounds', 'rate_cap')))
        b.find(row(mine[0]['id']))
        b.shot('member1-created')
        # Horizon's JavaScript started without an error (without it no row
        # ever refreshes itself: test 2).
        self.assertTrue(b.js_started(), "Horizon's JavaScript did not start")
        self.assertEqual([], b.js_errors())

    def test_2_the_manager_drives_it_to_catching_up_in_the_page(self):
        self.assertIsNotNone(self.p1, 'test_1 created no migration')
        mid = self.p1['id']
        b = self.browser
        self.login('fedex-member1')
        # Settled states are not polled: reload until the devices are
        # delivered, then the page must follow by itself.
        deadline = time.monotonic() + DRIVE_TIMEOUT
        while True:
            b.get(MIGRATIONS)
            state = self.cell_text(mid, 'state')
            if state in AFTER_DELIVERY:
                break
            if state in FINAL or time.monotonic() > deadline:
                self.fail('migration %s is %s after %d s: %s' % (
                    mid, state, DRIVE_TIMEOUT,
                    self.migration(mid).get('last_error')))
            time.sleep(5)
        b.shot('member1-after-delivery-%s' % state.lower())
        rounds0 = int(self.cell_text(mid, 'rounds') or 0)
        b.driver.execute_script('window.fedexNotReloaded = true;')

        def catching_up(driver):
            # Two rounds past the first seen: the row then shows a rate
            # and the next round's ETA of rounds the page followed.
            try:
                progress = self.cell_text(mid, 'progress')
                return (self.cell_text(mid, 'state') == 'CATCHING_UP'
                        and int(self.cell_text(mid, 'rounds')) > rounds0 + 1
                        and '/s' in progress
                        and 'next round ETA -' not in progress)
            except Exception:   # the row is being replaced
                return False
        b.wait(catching_up, DRIVE_TIMEOUT,
               'CATCHING_UP with new rounds in the row of %s' % mid)
        self.assertTrue(b.driver.execute_script(
            'return window.fedexNotReloaded === true;'),
            'the page was reloaded: the row did not refresh by itself')
        # The last event column: what the manager recorded last.
        self.assertNotIn(self.cell_text(mid, 'last_event'), ('', '-'))
        progress = self.cell_text(mid, 'progress')
        self.assertRegex(progress, r'round \d+: [\d.]+ [KM]iB')
        self.assertIn('next round ETA', progress)
        # The docs' screenshot (doc/source/images/).
        b.shot('migrations-catching-up', numbered=False)
        m = self.migration(mid)
        self.assertGreaterEqual(m['rounds'], 2)
        self.assertEqual('CATCHING_UP', m['state'])

    def test_3_the_catchup_tab_charts_the_managers_rounds(self):
        mid = self.p1['id']
        b = self.browser
        # test_2 leaves it with rounds; on its own, wait for the first.
        deadline = time.monotonic() + DRIVE_TIMEOUT
        while (self.migration(mid)['rounds'] or 0) < 1:
            if time.monotonic() > deadline:
                self.fail('migration %s has no round after %d s'
                          % (mid, DRIVE_TIMEOUT))
            time.sleep(3)
        self.login('fedex-member1')
        b.get(MIGRATIONS + mid + '/?tab=migration_details__catchup')
        b.find('svg.fedex-catchup-chart rect.fedex-round')
        bars = b.find_all('svg.fedex-catchup-chart rect.fedex-round')
        events = [e for e in self.api('fedex-admin', 'GET', '/v1/events',
                                      params={'migration': mid,
                                              'limit': 1000})['events']
                  if 'round' in (e.get('details') or {})]
        self.assertGreaterEqual(len(bars), 1)
        self.assertLessEqual(len(bars), len(events))
        b.find('svg.fedex-catchup-chart line.fedex-threshold')
        b.shot('member1-catchup-chart')

    def test_4_reader_gets_the_error_for_a_forbidden_action(self):
        mid = self.p1['id']
        b = self.browser
        self.login('fedex-reader1')
        b.get(MIGRATIONS)
        abort = '%s button[value="migrations__abort__%s"]' % (row(mid), mid)
        # The only action of a CATCHING_UP row is its button; behind
        # Approve Cutover (READY_FOR_CUTOVER) it sits in the row's menu.
        # The row is replaced by its polling every few seconds: each step
        # looks its element up afresh (Browser.displayed, Browser.click).
        if not b.displayed(abort):
            b.click('%s .dropdown-toggle' % row(mid))
        b.click(abort)
        b.wait(lambda d: b.confirm_if_asked() or b.messages(), 60,
               'a message')
        text = ' '.join(b.messages())
        self.assertIn('Your role does not allow this', text)
        b.shot('reader-forbidden-abort')
        self.assertNotIn(self.state(mid), ('ABORTING', 'ABORTED'))

    def test_5_member_sees_only_their_own_migrations(self):
        b = self.browser
        self.login('fedex-member2')
        b.get(MIGRATIONS)
        b.find(row(self.p2['id']))
        self.assertEqual([], b.find_all(row(self.p1['id'])))
        self.assertNotIn(self.p1['name'], b.text())
        b.shot('member2-migrations')
        # The other project's migration, by its address: not found, as an
        # unknown id (fedex-api does not tell that it exists), and the
        # list again.
        b.get(MIGRATIONS + self.p1['id'] + '/')
        b.wait(lambda d: d.current_url.rstrip('/').endswith(
            'fedex_migrations'), 60, 'the redirect to the list')
        text = ' '.join(b.messages())
        self.assertIn('Unable to show migration %s' % self.p1['id'], text)
        self.assertIn('migration %s does not exist' % self.p1['id'], text)
        self.assertNotIn('role does not allow', text)
        b.shot('member2-other-projects-migration')

    def test_6_admin_sees_every_project_and_the_logistics(self):
        b = self.browser
        self.login('fedex-admin')
        b.get(ADMIN_MIGRATIONS)
        b.find(row(self.p1['id']))
        b.find(row(self.p2['id']))
        self.assertIn('Migration over FedEx', b.text())
        b.shot('admin-migrations')
        shipments = self.migration(self.p1['id'])['shipments']
        self.assertTrue(shipments, 'the manager made no shipment')
        b.get('/admin/fedex_shipments/')
        b.find('table#shipments')
        self.assertIn(shipments[0]['name'], b.text())
        b.shot('admin-shipments')
        b.get('/admin/fedex_devices/')
        b.find('table#devices')
        self.assertIn('usb-site-a-', b.text())
        b.shot('admin-devices')

    def record_carrier_event(self, shipment_id, event, tracking=None):
        """The Record Carrier Event form of a shipment's row; its message."""
        b = self.browser
        b.get('/admin/fedex_shipments/')
        b.click('a[id="shipments__row_%s__action_carrier_event"]'
                % shipment_id)
        b.select('.modal #id_event', event)
        if tracking:
            b.fill('.modal #id_tracking_number', tracking)
        b.fill('.modal #id_location', 'site-b dock' if event == 'delivered'
               else 'site-a dock')
        b.shot('admin-record-%s' % event)
        b.click('.modal input.btn-primary[type="submit"]')
        return b.wait(lambda d: ' '.join(b.messages()), 120,
                      'the message of the carrier event %s' % event)

    def test_7_admin_records_a_manual_shipments_delivery(self):
        mid = self.p2['id']
        # The manual courier does nothing by itself: the migration waits.
        self.wait_state(mid, ('SEALED',))
        shipment = self.migration(mid)['shipments'][0]
        self.assertEqual('manual', shipment['carrier'])
        self.login('fedex-admin')
        tracking = 'FX-%s' % self.tag.upper()
        text = self.record_carrier_event(shipment['id'], 'handed_to_carrier',
                                         tracking)
        self.assertIn('HANDED_TO_CARRIER', text)
        self.assertIn(tracking, self.browser.text())
        self.assertEqual('IN_TRANSIT', self.state(mid))
        # What the person at site-b does: plug the devices in there.
        slots = self.stack.manager.dep.slots_dir('site-b')
        os.makedirs(slots, exist_ok=True)
        for d in self.api('fedex-admin', 'GET', '/v1/devices', params={
                'shipment': shipment['id']})['devices']:
            shutil.move(d['path'], os.path.join(
                slots, os.path.basename(d['path'])))
        text = self.record_carrier_event(shipment['id'], 'delivered')
        self.assertIn('DELIVERED', text)
        self.browser.shot('admin-delivered')
        # The manager imports what was delivered and catches up.
        m = self.wait_state(mid, ('READY_FOR_CUTOVER',))
        self.assertIn('carrier: deliver at site-b dock', [
            e['message'] for e in self.api(
                'fedex-admin', 'GET', '/v1/events', params={
                    'shipment': shipment['id'], 'limit': 1000})['events']])
        self.assertEqual(tracking, m['shipments'][0]['tracking_number'])

    def test_8_member_approves_the_cutover(self):
        mid = self.p1['id']
        # The servers stop writing: the next round converges.
        self.writer.pause()
        self.wait_state(mid, ('READY_FOR_CUTOVER',))
        # The 1 MiB/s cap that kept the catch-up busy caps the memory copy
        # too (it shares the WAN): 256 MiB of guest at 1 MiB/s, the guest
        # dirtying about as much, may never converge. The member lifts it
        # for the cutover, as an operator would.
        self.api('fedex-member1', 'PATCH', '/v1/migrations/%s' % mid,
                 json={'rate_cap': 0})
        self.assertEqual(0, self.migration(mid)['options']['rate_cap'])
        b = self.browser
        self.login('fedex-member1')
        b.get(MIGRATIONS)
        self.assertEqual('READY_FOR_CUTOVER', self.cell_text(mid, 'state'))
        b.click('%s button[value="migrations__approve_cutover__%s"]'
                % (row(mid), mid))
        b.wait(lambda d: b.confirm_if_asked() or b.messages(), 60,
               'a message')
        self.assertIn('Cutover approved', ' '.join(b.messages()))
        b.shot('member1-cutover-approved')
        m = self.migration(mid)
        self.assertTrue(m['cutover_approved'])
        self.assertIn('cutover approved',
                      [e['message'] for e in m['events']])
        # The manager then cuts over for real: the form named no host, so
        # the manager chose one of site-b's aggregate, and Nova (with
        # nova_fedex) moved the server there, alive.
        m = self.wait_state(mid, ('COMPLETED', 'CLEANED'))
        self.assertTrue(m['dest_host'].startswith('site-b-'), m['dest_host'])
        said = [e['message'] for e in self.api(
            'fedex-admin', 'GET', '/v1/events',
            params={'migration': mid, 'limit': 1000})['events']]
        self.assertIn('destination host %s chosen in aggregate site-b (the '
                      'most memory left of the hosts with room)'
                      % m['dest_host'], said)
        server = self.stack.cloud.openstack('server', 'show', self.web)
        self.assertEqual(('ACTIVE', m['dest_host']), (
            server['status'], server['OS-EXT-SRV-ATTR:host']))
        with self.stack.clusters['site-b'].pool('vms') as pool:
            guest_reader.GuestReader(pool.ioctx, '%s_disk' % self.web
                                     ).wait_advancing(ticks=10, timeout=120)
        b.get(MIGRATIONS)
        self.assertEqual(m['state'], self.cell_text(mid, 'state'))
        b.shot('member1-completed')
