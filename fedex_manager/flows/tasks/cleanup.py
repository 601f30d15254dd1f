"""The cleanup phase: COMPLETED .. CLEANED, after the retention.

:class:`BeginCleanup` unlocks the servers in Nova (once: the sweeper may
have done it while the migration was kept).

:class:`EraseAndClean` erases the migration's shipments and removes its
snapshots at both terminals (at the destination with the records of the
final state: ``lsrp.server.records``; a snapshot left on a running
guest's image holds space as the guest writes, and makes Nova's delete of
the server leave its disk behind).
"""

from fedex_manager.flows.tasks import common
from fedex_manager.flows.tasks import erase
from fedex_manager import states


class Cleanup(common.PhaseTask):
    phase = 'cleanup'
    allowed = (states.COMPLETED,)


class BeginCleanup(common.Begin, Cleanup):
    """And the servers unlocked in Nova, if nobody did yet.

    fedex-api records COMPLETED on nova_fedex's report and posts this
    phase, but holds no [nova] credentials: the conductor does. Here, not
    in a task of its own: the flow keeps the tasks an older release saved.
    """

    def run(self, ctx, m, generation):
        super().run(ctx, m, generation)
        common.unlock_once(ctx, m)


class EraseAndClean(Cleanup):

    def run(self, ctx, m, generation):
        erase._erase_shipments(self, ctx, m, generation, 'migration completed')
        erase._remove_snapshots(self, ctx, m, generation, m['source_terminal_id'],
                                common._specs(m))
        erase._remove_snapshots(self, ctx, m, generation, m['dest_terminal_id'],
                                [v['dest_image'] for v in m['volumes']])
        common.step(ctx, m, 'clean')
