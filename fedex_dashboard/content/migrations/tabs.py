"""A migration's detail: overview timeline, shipment, catch-up, events."""

from django.utils.translation import gettext_lazy as _

from horizon import exceptions
from horizon import tabs

from fedex_dashboard.api import fedex
from fedex_dashboard.content.migrations import tables as m_tables
from fedex_dashboard.content import states
from fedex_dashboard.content import units


class OverviewTab(tabs.Tab):
    name = _('Overview')
    slug = 'overview'
    template_name = 'fedex/migrations/_overview.html'

    def get_context_data(self, request):
        m = self.tab_group.kwargs['migration']
        p = m.get('progress') or {}
        return {
            'migration': m,
            'failed': m['state'] in states.FAILURES,
            'timeline': states.phase_timeline(m['state'],
                                              reversed(m.get('events') or [])),
            'route': m_tables._route(m),
            'servers': m.get('servers') or [],
            'progress': {
                'percent': p.get('percent'),
                'done': units.size(p.get('bytes_done')),
                'total': units.size(p.get('bytes_total')),
                'rate': units.rate(p.get('rate')),
                'eta': units.duration(p.get('eta_seconds')),
                'rounds': p.get('rounds') or 0,
            },
        }


class ShipmentTab(tabs.Tab):
    name = _('Shipment')
    slug = 'shipment'
    template_name = 'fedex/migrations/_shipment.html'

    def get_context_data(self, request):
        m = self.tab_group.kwargs['migration']
        shipments, note = [], None
        for summary in m.get('shipments') or []:
            s = dict(summary, events=[], devices=None)
            try:
                s.update(fedex.shipment_get(request, summary['id']))
                s['devices'] = fedex.device_list(request,
                                                 shipment=summary['id'])
            except fedex.FedexAPIError as e:
                # A member may see the migration but not the logistics.
                note = str(e)
            for d in s['devices'] or []:
                d['capacity'] = units.size(d.get('capacity_bytes'))
            shipments.append(s)
        return {'shipments': shipments, 'note': note}


def catchup_rounds(events):
    """[(round, bytes changed)] from the manager's catch-up round events.

    The manager records each round as a ``progress`` event whose details
    are the terminal's report (fedex_manager.agent.ops): ``round``,
    ``changed_bytes`` (what the servers wrote since the previous round: the
    remainder that must fall under the threshold), ``wire_bytes``,
    ``estimate``...
    """
    rounds = {}
    for e in events:
        d = e.get('details') or {}
        if e.get('kind') != 'progress' or 'round' not in d or \
                d.get('changed_bytes') is None:
            continue
        rounds[int(d['round'])] = int(d['changed_bytes'])
    return sorted(rounds.items())


def chart(rounds, threshold, width=600, height=220, pad=40):
    """An SVG bar chart (as data for the template) of bytes per round.

    The cutover threshold is a line: the remainder must go under it.
    """
    top = max([b for _r, b in rounds] + [threshold or 0, 1])
    inner_w, inner_h = width - 2 * pad, height - 2 * pad
    step = inner_w / max(len(rounds), 1)
    bars = []
    for i, (rnd, nbytes) in enumerate(rounds):
        h = inner_h * nbytes / top
        bars.append({'x': pad + i * step + step * 0.15, 'w': step * 0.7,
                     'y': pad + inner_h - h, 'h': h, 'round': rnd,
                     'label': units.size(nbytes),
                     'under': threshold is not None and nbytes <= threshold})
    line = None
    if threshold:
        line = {'y': pad + inner_h - inner_h * threshold / top,
                'label': units.size(threshold)}
    return {'width': width, 'height': height, 'pad': pad, 'bars': bars,
            'threshold': line, 'base': pad + inner_h, 'right': width - pad}


class CatchupTab(tabs.Tab):
    name = _('Catch-up')
    slug = 'catchup'
    template_name = 'fedex/migrations/_catchup.html'

    def get_context_data(self, request):
        m = self.tab_group.kwargs['migration']
        try:
            events = fedex.event_list(request, migration=m['id'], limit=1000)
        except fedex.FedexAPIError as e:
            exceptions.handle(request, str(e))
            events = []
        rounds = catchup_rounds(events)
        threshold = (m.get('options') or {}).get('threshold_bytes')
        return {'rounds': [(r, units.size(b)) for r, b in rounds],
                'chart': chart(rounds, threshold) if rounds else None,
                'threshold': units.size(threshold) if threshold else None,
                'migration': m}


class EventsTab(tabs.TableTab):
    name = _('Events')
    slug = 'events'
    table_classes = (m_tables.EventsTable,)
    template_name = 'horizon/common/_detail_table.html'
    preload = False

    def get_events_data(self):
        m = self.tab_group.kwargs['migration']
        try:
            return fedex.event_list(self.request, migration=m['id'],
                                    limit=1000)
        except fedex.FedexAPIError as e:
            exceptions.handle(self.request, str(e))
            return []


class WaveTab(tabs.TableTab):
    """The wave the migration belongs to: a row per server.

    Each server's state, progress, ETA and cutover (its outcome and
    length, or why it waits: its turn, the window, an approval); above
    the table the wave's own progress, ETA and device bytes.
    """
    name = _('Wave')
    slug = 'wave'
    table_classes = (m_tables.WaveServersTable,)
    template_name = 'fedex/migrations/_wave.html'

    def allowed(self, request):
        return bool(self.tab_group.kwargs['migration'].get('wave'))

    def _wave(self):
        if not hasattr(self, '_shown'):
            m = self.tab_group.kwargs['migration']
            try:
                self._shown = fedex.wave_get(self.request, m['wave'])
            except fedex.FedexAPIError as e:
                exceptions.handle(self.request, str(e))
                self._shown = None
        return self._shown

    def get_wave_servers_data(self):
        w = self._wave()
        return (w or {}).get('servers') or []

    def get_context_data(self, request, **kwargs):
        context = super().get_context_data(request, **kwargs)
        w = self._wave() or {}
        p = w.get('progress') or {}
        context['wave'] = w
        context['wave_progress'] = {
            'percent': p.get('percent'), 'servers': p.get('servers'),
            'completed': p.get('completed'),
            'cutting_over': p.get('cutting_over'),
            'eta': units.duration(p.get('eta_seconds')),
            'device_bytes': units.size(w.get('device_bytes'))}
        return context


class MigrationDetailTabs(tabs.DetailTabsGroup):
    slug = 'migration_details'
    tabs = (OverviewTab, WaveTab, ShipmentTab, CatchupTab, EventsTab)
    sticky = True
