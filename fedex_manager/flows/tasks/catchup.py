"""The catch-up and keep-warm phases: rounds until READY_FOR_CUTOVER.

:class:`Rounds` authorizes (and, for images no shipment brought, seeds)
over the WAN when needed, then runs rounds until the next would fit the
threshold; :class:`KeepWarm` runs one round while the migration waits for
its cutover. The round itself is
:func:`fedex_manager.flows.tasks.rounds.one_round`.
"""

from fedex_manager.actions import cutover as cutover_actions
from fedex_manager.db import api as db
from fedex_manager.flows.tasks import common
from fedex_manager.flows.tasks import rounds
from fedex_manager import options as options_mod
from fedex_manager import states


def _wan_prepare(task_, ctx, m, generation):
    """Before m's first round under a name of its own: authorize, seed.

    The destination accepts rounds of m's images under that name; images
    that no shipment brought (a lost shipment switched to seeding over
    the WAN) are first copied whole at the base snapshot, over LSRP.
    """
    name = rounds.catchup_name(ctx, m)
    if name != 'fedex-%s-wan' % common.short(m['id']):
        return
    src = common._terminal(ctx, m['source_terminal_id'])
    task_.op(ctx, m, generation, m['dest_terminal_id'], 'authorize',
             '%s.authorize' % name,
             {'name': name, 'images': common._specs(m), 'source': src['name']})
    unshipped = [v['source_image'] for v in m['volumes']
                 if not v['shipment_id']]
    if not unshipped:
        return
    dest = common._terminal(ctx, m['dest_terminal_id'])
    result = task_.op(ctx, m, generation, m['source_terminal_id'],
                      'seed_over_wan', '%s.seed_over_wan' % name, {
                          'name': name, 'images': unshipped,
                          'snapshot': m['base_snapshot'],
                          'peer': {'name': dest['name'],
                                   'address': dest['lsrp_address']},
                          'rate_cap': options_mod.rate_cap(m['options'])})
    db.add_event(ctx, 'migration', m['id'], 'progress',
                 'seeded over the WAN: %s at %s, %d bytes on the wire' % (
                     ', '.join(unshipped), m['base_snapshot'],
                     result.get('wire_bytes') or 0),
                 migration_id=m['id'], details=result)


class CatchUp(common.PhaseTask):
    phase = 'catchup'
    allowed = (states.CATCHING_UP,)


class BeginCatchUp(common.Begin, CatchUp):
    pass


class Rounds(CatchUp):
    """Rounds until the next would fit the threshold, then READY."""

    def run(self, ctx, m, generation):
        opts = m['options']
        first = m['rounds'] or 0
        _wan_prepare(self, ctx, m, generation)
        while True:
            m, result = rounds.one_round(self, ctx, m, generation)
            if result['estimate'] <= opts['threshold_bytes']:
                break
            if m['rounds'] - first >= opts['max_rounds']:
                db.add_event(ctx, 'migration', m['id'], 'error',
                             'no convergence in %d rounds (next about %d '
                             'bytes): ready anyway; the final delta will '
                             'be larger' % (opts['max_rounds'],
                                            result['estimate']),
                             migration_id=m['id'])
                break
        m = common.step(ctx, m, 'converge')
        if opts.get('cutover') == 'automatic':
            # Under the wave's lock: two members' catch-ups ending together
            # both saw a slot free, and the second's start failed (its job
            # with a traceback; the sweeper started it later). Then the
            # members that left their slot to this longer cutover
            # (longest_cutover_first_wait) take those still free.
            if cutover_actions.start_in_turn(ctx, m):
                cutover_actions.start_waiting_members(ctx, m)


class KeepWarm(common.PhaseTask):
    phase = 'keep_warm'
    allowed = (states.READY_FOR_CUTOVER,)

    def run(self, ctx, m, generation):
        m, _ = rounds.one_round(self, ctx, m, generation)
        db.transition(ctx, 'migration', m['id'], 'keep_warm',
                      expect=states.READY_FOR_CUTOVER)


class BeginKeepWarm(common.Begin, KeepWarm):
    pass
