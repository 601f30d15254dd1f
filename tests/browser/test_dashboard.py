"""The dashboard in a real headless Chromium, against real Keystone users,
the real fedex-api (its policy, its database) and Horizon under uwsgi.

The logistics (sites, a terminal per site reporting healthy, blank devices)
and one migration per project are made through fedex-api as its users
would; the browser then logs in as each persona.
"""

import uuid

from tests.browser import base

MIGRATIONS = '/project/fedex_migrations/'
ADMIN_MIGRATIONS = '/admin/fedex_migrations/'


def row(mid):
    return 'tr[data-object-id="%s"]' % mid


class TestDashboard(base.BrowserTestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tag = uuid.uuid4().hex[:6]
        sites = {s['name'] for s in cls.api(
            'fedex-admin', 'GET', '/v1/sites')['sites']}
        terms = {t['name'] for t in cls.api(
            'fedex-admin', 'GET', '/v1/terminals')['terminals']}
        for name in ('site-a', 'site-b'):
            if name not in sites:
                cls.api('fedex-admin', 'POST', '/v1/sites',
                        json={'name': name})
            if 'term-%s' % name not in terms:
                cls.api('fedex-admin', 'POST', '/v1/terminals',
                        json={'name': 'term-%s' % name, 'site': name,
                              'slots': 4, 'capacity_bytes': 1 << 40})
        for i in range(3):
            cls.api('fedex-admin', 'POST', '/v1/devices',
                    json={'serial': 'SN-%s-%d' % (cls.tag, i),
                          'terminal': 'term-site-a',
                          'capacity_bytes': 1 << 40})
        cls.p1 = cls.create('fedex-member1', 'p1-web-%s' % cls.tag)
        cls.p2 = cls.create('fedex-member2', 'p2-db-%s' % cls.tag)

    @classmethod
    def heartbeat(cls):
        """The terminals report in, as their agents do.

        The preflight wants a terminal seen in the last minute at each site.
        """
        for name in ('term-site-a', 'term-site-b'):
            cls.api('fedex-admin', 'PUT', '/v1/terminals/%s/health' % name,
                    json={'state': 'UP'})

    @classmethod
    def create(cls, user, name):
        cls.heartbeat()
        return cls.api(user, 'POST', '/v1/migrations', json={
            'name': name, 'servers': ['srv-%s' % name],
            'source_site': 'site-a', 'dest_site': 'site-b',
            'options': {'cutover': 'approved'}})['migration']

    def test_admin_sees_every_project_and_the_logistics(self):
        b = self.browser
        self.login('fedex-admin')
        b.get(ADMIN_MIGRATIONS)
        b.find(row(self.p1['id']))
        b.find(row(self.p2['id']))
        nav = b.text()
        self.assertIn('Migration over FedEx', nav)
        self.assertIn(self.p2['name'], nav)
        b.shot('admin-migrations')
        b.get('/admin/fedex_devices/')
        b.find('table#devices')
        self.assertIn('SN-%s-0' % self.tag, b.text())
        b.shot('admin-devices')
        b.get('/admin/fedex_shipments/')
        b.find('table#shipments')
        b.shot('admin-shipments')

    def test_member_sees_only_their_own_migrations(self):
        b = self.browser
        self.login('fedex-member2')
        b.get(MIGRATIONS)
        b.find(row(self.p2['id']))
        self.assertEqual([], b.find_all(row(self.p1['id'])))
        self.assertNotIn(self.p1['name'], b.text())
        b.shot('member2-migrations')
        # The other project's migration, by its address: refused, and the
        # list again with fedex-api's reason.
        b.get(MIGRATIONS + self.p1['id'] + '/')
        b.wait(lambda d: d.current_url.rstrip('/').endswith(
            'fedex_migrations'), 30, 'the redirect to the list')
        text = ' '.join(b.messages())
        self.assertIn('Unable to show migration %s' % self.p1['id'], text)
        b.shot('member2-other-projects-migration')

    def test_reader_gets_the_error_for_a_forbidden_action(self):
        b = self.browser
        self.login('fedex-reader1')
        b.get(MIGRATIONS)
        b.find(row(self.p1['id']))
        b.click('%s button[value="migrations__abort__%s"]' % (
            row(self.p1['id']), self.p1['id']))
        b.wait(lambda d: b.confirm_if_asked() or b.messages(), 60,
               'a message')
        text = ' '.join(b.messages())
        self.assertIn('Your role does not allow this', text)
        b.shot('reader-forbidden-abort')
        m = self.api('fedex-admin', 'GET',
                     '/v1/migrations/%s' % self.p1['id'])['migration']
        self.assertNotIn(m['state'], ('ABORTING', 'ABORTED'))

    def test_member_previews_the_plan_and_creates_a_migration(self):
        b = self.browser
        self.login('fedex-member1')
        b.get(MIGRATIONS + 'create/')
        name = 'wave-%s' % self.tag
        b.fill('#id_name', name)
        b.fill('#id_servers', 'srv-a-%s srv-b-%s' % (self.tag, self.tag))
        b.select('#id_source_site', 'site-a')
        b.select('#id_dest_site', 'site-b')
        b.fill('#id_disk_gib', '500')
        b.fill('#id_wan_mbit', '44.76')
        self.heartbeat()
        b.click('#fedex-preview')
        b.find('.fedex-plan')
        self.assertIn('Recommended', b.text())
        b.shot('create-with-plan-preview')
        b.click('input.btn-primary[type="submit"]')
        b.wait(lambda d: d.current_url.rstrip('/').endswith(
            'fedex_migrations'), 60, 'the list after creation')
        self.assertIn('Migration %s created' % name, ' '.join(b.messages()))
        self.assertIn(name, b.text())
        b.shot('member1-created')
