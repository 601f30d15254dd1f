"""Catch-up rounds whose snapshot numbers ran ahead of the rounds' count.

The catch-up engine names a round's snapshot past every round snapshot
either site holds (``lsrp.catchup.CatchUp.plan``). After a cutover rolled
back whose final delta left ``rN`` at the destination only, round N's
snapshot is r(N+1): the next round's base. The agent's round operation
(``fedex_manager.agent.ops``) used to remove the source's r(N+1) before
round N+1 as the leftover of an interrupted run, and the migration stopped
for good: "the source site has no snapshot ... to start from" (seen in the
chaos soak, 2026-11-29). Real agent operation, real ``lsrp-server``, real
Ceph; judged with ``rbd export | sha256sum``.
"""

from unittest import mock

from fedex_manager.agent import ops
from tests.functional import test_catchup

MiB = 1 << 20


class TestRoundNumbers(test_catchup.CatchUpTestCase):

    def round(self, port, spec, shipment, base, number):
        name, ca, cert, key = self.terminal('site-a')
        terminal = mock.Mock(spec=['cluster', 'tls_files', 'name'])
        terminal.name = name
        terminal.cluster.return_value = self.sites['site-a']
        terminal.tls_files.return_value = (ca, cert, key)
        params = {'shipment_id': shipment, 'images': [spec], 'base': base,
                  'number': number, 'rate_cap': None,
                  'peer': {'name': self.terminal('site-b')[0],
                           'address': '127.0.0.1:%d' % port}}
        return ops.catchup_round(terminal, params, ops.Reporter(
            'op', lambda *a: None))

    def test_a_round_never_removes_its_own_base(self):
        spec, shipment = self.seeded(16 * MiB)
        _, port = self._serve()
        self.write(spec, seed=1)
        r1 = self.round(port, spec, shipment, 'seed', 1)['snapshot']
        self.assertEqual('%s-r1' % shipment, r1)
        # A final delta from the source's heads left r2 at the destination
        # only (the cutover then rolled back).
        self.rbd_cli('site-b', 'snap', 'create',
                     '%s@%s-r2' % (spec, shipment))
        self.write(spec, seed=2)
        second = self.round(port, spec, shipment, r1, 2)['snapshot']
        self.assertEqual('%s-r3' % shipment, second)
        # Round 3 goes on from r3, which it must not take for leftovers.
        self.write(spec, seed=3)
        third = self.round(port, spec, shipment, second, 3)['snapshot']
        self.assertEqual('%s-r4' % shipment, third)
        self.assert_same(spec, third)
        self.assertIn(second, self.rbd_cli('site-a', 'snap', 'ls', spec))
