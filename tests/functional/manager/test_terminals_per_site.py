"""Two terminals per site: the manager spreads migrations over them.

Two migrations created at once, naming no terminal: each gets a source
terminal and a destination terminal of its own (the least busy of its
site), its export runs on its source terminal's agent, its import on its
destination terminal's, its catch-up rounds from its source; both end
bit-exact (``rbd export | sha256sum`` on both sites). Real Ceph,
MariaDB, RabbitMQ, ZooKeeper, conductor and four agents (the second
terminal of each site as ``fedex-sandbox up --terminals-per-site 2``
makes it: fedex_sandbox.manager.deploy).
"""

import sys

from fedex_manager.actions import devices as device_actions
from fedex_manager.actions import migrations as migration_actions
from fedex_manager.actions import sites
from fedex_manager.db import api as db
from fedex_manager import rpc
from fedex_manager import states
from tests.functional.manager import base

MiB = base.MiB


class TestTerminalsPerSite(base.ManagerTestCase):

    def agent_record(self, terminal, op_id):
        """What ``terminal``'s agent knows of operation ``op_id``."""
        term = sites.terminal_show(self.ctx, terminal)
        return rpc.TerminalAPI(term['rpc_topic']).status(op_id)

    def test_two_migrations_at_once_take_a_terminal_each_per_site(self):
        self.dep.start_conductor('conductor-1')
        self.start_terminals(devices=3)
        # The second terminal of site A with blank devices of its own.
        self.dep.make_slots('site-a', 3, n=2)
        a2 = self.start_second_terminal('site-a')
        b2 = self.start_second_terminal('site-b')
        self.dep.wait(lambda: len(device_actions.device_list(
            self.ctx, {'state': 'BLANK'})) >= 6, 60,
            'three blank devices at each terminal of site A')
        pairs = {'site-a': {'terminal-site-a', a2},
                 'site-b': {'terminal-site-b', b2}}
        vms = [self.vm((32 * MiB, 16 * MiB)) for _ in range(2)]
        made = migration_actions.migrations_create(self.ctx, [
            self.request(specs, 'vm%d-%s' % (i, self.id_))
            for i, (specs, _) in enumerate(vms)])
        routes = []
        for m in made:
            routes.append((
                db.get(self.ctx, 'terminal', m['source_terminal_id'])['name'],
                db.get(self.ctx, 'terminal', m['dest_terminal_id'])['name']))
        # A terminal each at each site.
        self.assertEqual(pairs['site-a'], {r[0] for r in routes}, routes)
        self.assertEqual(pairs['site-b'], {r[1] for r in routes}, routes)
        for m in made:
            self.wait_state(m, states.READY_FOR_CUTOVER, timeout=300)
        figures = []
        for m, (src, dst) in zip(made, routes):
            ops = db.list_(self.ctx, 'operation', {'migration_id': m['id']})
            by_kind = {}
            for op in ops:
                by_kind.setdefault(op['kind'], []).append(op)
            # Where each ran: the operation's row, and the agents.
            for kind, where in (('export', src), ('import', dst),
                                ('catchup_round', src)):
                self.assertTrue(by_kind.get(kind), kind)
                for op in by_kind[kind]:
                    self.assertEqual(where, op['terminal'], kind)
                    rec = self.agent_record(where, op['id'])
                    self.assertEqual('DONE', rec['state'], (kind, rec))
                    other, = pairs['site-a' if where in pairs['site-a']
                                   else 'site-b'] - {where}
                    self.assertEqual('UNKNOWN', self.agent_record(
                        other, op['id'])['state'], (kind, other))
            # How long each took on its terminal (the agent's clock).
            took = {}
            for kind, where in (('export', src), ('import', dst)):
                rec = self.agent_record(where, by_kind[kind][0]['id'])
                took[kind] = rec['finished_at'] - rec['started_at']
                took[kind + '_at'] = rec['started_at']
            figures.append((took['export_at'], '%s -> %s: export %.1f s, '
                            'import %.1f s, %d catch-up round(s)' % (
                                src, dst, took['export'], took['import'],
                                len(by_kind['catchup_round']))))
        for m, (_, writer) in zip(made, vms):
            self.cut_over(m, writer)
            self.assert_converged(m)
        self.assertEqual({states.COMPLETED}, {self.state(m) for m in made})
        # The figures in doc/source/manager.rst.
        first = min(t for t, _ in figures)
        sys.stderr.write('terminals per site:\n' + ''.join(
            '  %s (export started at +%.1f s)\n' % (line, t - first)
            for t, line in figures))
