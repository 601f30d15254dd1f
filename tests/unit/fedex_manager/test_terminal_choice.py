"""Which terminals a migration gets when a site has several.

The least busy UP terminal of each site (the real thing, two terminals
per site with their agents running the operations:
tests/functional/manager/test_terminals_per_site.py).
"""

from fedex_manager.actions import migrations
from fedex_manager.actions import sites
from fedex_manager.actions import wave as wave_actions
from fedex_manager.db import api as db
from lsrp import exception
from tests.unit.fedex_manager import base

NAMES = ('term-a', 'term-a-2', 'term-b', 'term-b-2')


def request(i, **options):
    return {'servers': [{'server_id': 'vm%d' % i,
                         'volumes': ['vms/disk%d' % i]}],
            'source_site': 'site-a', 'dest_site': 'site-b',
            'options': dict({'cutover': 'approved'}, **options)}


class TestTerminalChoice(base.DBTestCase):

    def setUp(self):
        super().setUp()
        sites.site_register(self.ctx, 'site-a')
        sites.site_register(self.ctx, 'site-b')
        for name in NAMES:
            sites.terminal_register(self.ctx, name, 'site-' + name[5])
            sites.terminal_heartbeat(self.ctx, name, {})

    def route(self, m):
        m = db.get(self.ctx, 'migration', m['id'])
        return (db.get(self.ctx, 'terminal', m['source_terminal_id'])['name'],
                db.get(self.ctx, 'terminal', m['dest_terminal_id'])['name'])

    def test_migrations_at_once_go_to_different_terminals(self):
        made = migrations.migrations_create(
            self.ctx, [request(i) for i in range(4)])
        routes = [self.route(m) for m in made]
        # Two each: the least busy of each site takes the next.
        for field in (0, 1):
            used = [r[field] for r in routes]
            self.assertEqual(2, len(set(used)), routes)
            self.assertEqual(2, used.count(used[0]), routes)
        self.assertNotEqual(routes[0][0], routes[1][0])
        self.assertNotEqual(routes[0][1], routes[1][1])

    def test_the_least_busy_terminals_are_chosen(self):
        busy = migrations.migration_create(
            self.ctx, [{'server_id': 'vm1', 'volumes': ['vms/d1']}],
            'site-a', 'site-b', source_terminal='term-a',
            dest_terminal='term-b')
        m = migrations.migration_create(
            self.ctx, [{'server_id': 'vm2', 'volumes': ['vms/d2']}],
            'site-a', 'site-b')
        self.assertEqual(('term-a', 'term-b'), self.route(busy))
        self.assertEqual(('term-a-2', 'term-b-2'), self.route(m))

    def test_a_down_terminal_is_not_chosen(self):
        # Its agent answers, its LSRP port does not: DOWN.
        sites.terminal_heartbeat(self.ctx, 'term-a-2', {'lsrp': 'DOWN'})
        made = migrations.migrations_create(
            self.ctx, [request(i) for i in range(3)])
        self.assertEqual({'term-a'}, {self.route(m)[0] for m in made})

    def test_one_shipment_keeps_one_route(self):
        # Its members travel together: the first's terminals are all's
        # (the least busy pick for the second would be the other pair,
        # which the group refuses).
        made = migrations.migrations_create(
            self.ctx, [request(i) for i in range(3)], one_shipment=True)
        self.assertEqual(1, len({self.route(m) for m in made}))

    def test_a_wave_keeps_one_route(self):
        w = wave_actions.wave_create(
            self.ctx, [{'server_id': 'vm%d' % i, 'volumes': [
                'vms/disk%d' % i]} for i in range(3)], 'site-a', 'site-b')
        ms = [m for m in db.list_(self.ctx, 'migration')
              if m['options'].get('shipment_group') == w['id']]
        self.assertEqual(3, len(ms))
        self.assertEqual(1, len({self.route(m) for m in ms}))

    def test_a_newcomer_follows_its_open_group(self):
        first = migrations.migration_create(
            self.ctx, [{'server_id': 'vm0', 'volumes': ['vms/d0']}],
            'site-a', 'site-b', options={'shipment_group': 'flock'},
            start=False)
        second = migrations.migration_create(
            self.ctx, [{'server_id': 'vm1', 'volumes': ['vms/d1']}],
            'site-a', 'site-b', options={'shipment_group': 'flock'},
            start=False)
        self.assertEqual(self.route(first), self.route(second))
        # Naming another terminal is still refused: one group, one route.
        other = 'term-a' if self.route(first)[0] == 'term-a-2' else \
            'term-a-2'
        e = self.assertRaises(
            exception.InvalidInput, migrations.migration_create, self.ctx,
            [{'server_id': 'vm2', 'volumes': ['vms/d2']}], 'site-a',
            'site-b', options={'shipment_group': 'flock'},
            source_terminal=other)
        self.assertIn('one route', str(e))
