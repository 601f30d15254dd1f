"""A migration runs end to end through fedex-conductor and lsrp-agent,
with a writer changing the images, and survives kill -9."""

from lsrp.manager import actions
from lsrp.manager.db import api as db
from lsrp.manager import states
from tests.functional.manager import base


class TestEndToEnd(base.ManagerTestCase):

    def test_migration_converges_bit_exact(self):
        self.dep.start_conductor('conductor-1')
        self.start_terminals()
        specs, writer = self.vm()
        m = self.migrate(specs)
        self.wait_state(m, states.READY_FOR_CUTOVER)
        shown = actions.migration_show(self.ctx, m['id'])
        self.assertGreaterEqual(shown['progress']['rounds'], 1)
        self.assertEqual('IMPORTED', shown['shipments'][0]['state'])
        self.cut_over(m, writer)
        m = self.assert_converged(m)
        self.wait_state(m, states.CLEANED)
        s = actions.shipment_list(self.ctx)[0]
        self.assertEqual('ERASED', s['state'])
        texts = self.events(m)
        for phrase in ('requested', 'custody check passed', 'round 1'):
            self.assertTrue(any(phrase in t for t in texts), phrase)
