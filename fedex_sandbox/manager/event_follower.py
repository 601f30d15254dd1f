"""A migration's events as lines on the terminal, for the sandbox demos."""

from fedex_manager.actions import events as event_actions
# Kinds worth a line besides state changes: what an operator watching a
# demo wants to see move (a 'health' or 'cutover' event is only recorded
# by the manager or the cutover that has one).
SHOWN_KINDS = ('progress', 'error', 'custody', 'health', 'cutover')


class EventFollower(object):
    """Prints each event of one migration once, in the order recorded."""

    def __init__(self, ctx, out):
        self.ctx = ctx
        self.out = out
        self.marker = None

    def show(self, migration_id):
        """Print the events recorded since the last call."""
        for ev in event_actions.events_query(self.ctx, migration=migration_id,
                                             marker=self.marker, limit=200):
            self.marker = ev['id']
            if ev['kind'] == 'state':
                self.out('  %s -> %s  %s' % (ev['from_state'] or '-',
                                             ev['to_state'], ev['message']))
            elif ev['kind'] in SHOWN_KINDS:
                self.out('  [%s] %s' % (ev['kind'], ev['message']))
