"""The migrations table: progress, state, and the actions the state allows.

Which actions a row offers comes from fedex-api itself
(``allowed_actions`` of each migration), so the dashboard never offers
what the state machine would refuse; policy still decides who may.
"""

from django.template import loader
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext_lazy

from horizon import exceptions
from horizon import tables

from fedex_dashboard.api import fedex
from fedex_dashboard.content import states
from fedex_dashboard.content import units


def _servers(m):
    return ', '.join(s.get('name') or s['server_id']
                     for s in m.get('servers') or []) or '-'


def _route(m):
    return '%s \u2192 %s' % (
        m.get('source_site') or m.get('source_site_id') or '?',
        m.get('dest_site') or m.get('dest_site_id') or '?')


def _progress(m):
    p = m.get('progress') or {}
    return loader.render_to_string('fedex/migrations/_progress.html', {
        'percent': p.get('percent'),
        'moving': m['state'] not in states.STABLE,
        'done': units.size(p.get('bytes_done')),
        'total': units.size(p.get('bytes_total')),
        'rate': units.rate(p.get('rate')),
        'eta': units.duration(p.get('eta_seconds')),
        # In the catch-up: what the last round sent; the ETA is the next
        # round's (fedex-api's eta_seconds).
        'catchup': m['state'] in ('CATCHING_UP', 'READY_FOR_CUTOVER'),
        'rounds': p.get('rounds') or m.get('rounds') or 0,
        'last_round': units.size(p.get('last_round_bytes')),
    })


def _rounds(m):
    return (m.get('progress') or {}).get('rounds') or m.get('rounds') or 0


def _last_event(m):
    # The list's summary (``last_event``: a message or an event), else the
    # newest of a shown migration's events (the row update reads one).
    last = m.get('last_event')
    if isinstance(last, dict):
        last = last.get('message')
    if not last and m.get('events'):
        last = m['events'][0].get('message')
    return last or m.get('last_error') or '-'


class _MigrationAction(tables.BatchAction):
    """A POST /v1/migrations/{id}/action offered when the state allows it."""

    api_action = None

    def allowed(self, request, datum=None):
        return datum is None or self.api_action in datum.get(
            'allowed_actions', ())

    def _act(self, request, obj_id, **args):
        try:
            fedex.migration_action(request, obj_id, self.api_action, **args)
        except fedex.FedexAPIError as e:
            # Our message (what failed and what to do), not the table's
            # generic "Unable to ...".
            exceptions.handle(request, str(e), escalate=True)


class AbortMigration(_MigrationAction):
    name = 'abort'
    api_action = 'abort'
    classes = ('btn-danger',)
    help_text = _('The migration stops; devices are erased and the source '
                  'keeps running. This cannot be undone.')

    @staticmethod
    def action_present(count):
        return ngettext_lazy('Abort Migration', 'Abort Migrations', count)

    @staticmethod
    def action_past(count):
        return ngettext_lazy('Abort requested for Migration',
                             'Abort requested for Migrations', count)

    def action(self, request, obj_id):
        self._act(request, obj_id, reason='aborted from the dashboard by %s'
                  % request.user.username)


class RetryMigration(_MigrationAction):
    name = 'retry'
    api_action = 'retry'

    @staticmethod
    def action_present(count):
        return ngettext_lazy('Retry Migration', 'Retry Migrations', count)

    @staticmethod
    def action_past(count):
        return ngettext_lazy('Retry requested for Migration',
                             'Retry requested for Migrations', count)

    def action(self, request, obj_id):
        self._act(request, obj_id)


class ApproveCutover(_MigrationAction):
    name = 'approve_cutover'
    api_action = 'approve_cutover'
    classes = ('btn-primary',)
    help_text = _('The servers pause for about a second and resume at the '
                  'destination site.')

    @staticmethod
    def action_present(count):
        return ngettext_lazy('Approve Cutover', 'Approve Cutovers', count)

    @staticmethod
    def action_past(count):
        return ngettext_lazy('Cutover approved for Migration',
                             'Cutover approved for Migrations', count)

    def action(self, request, obj_id):
        self._act(request, obj_id)


class CreateMigration(tables.LinkAction):
    name = 'create'
    verbose_name = _('Create Migration')
    classes = ('ajax-modal',)
    icon = 'plus'

    def get_link_url(self, datum=None):
        from django import urls
        return urls.reverse(self.table.url_namespace + ':create')


class MigrationFilterAction(tables.FilterAction):
    # Filtered by fedex-api (?state=), not in the page.
    filter_type = 'server'
    filter_choices = (('state', _('State ='), True),)


class UpdateRow(tables.Row):
    """Rows of moving migrations refresh themselves (Horizon's polling)."""

    ajax = True

    def get_data(self, request, migration_id):
        m = fedex.migration_get(request, migration_id)
        _name_sites(request, [m])
        return m


def _name_sites(request, migrations):
    """Site names instead of ids, from one /v1/sites call."""
    try:
        names = {s['id']: s['name'] for s in fedex.site_list(request)}
    except fedex.FedexAPIError:
        return
    for m in migrations:
        m['source_site'] = names.get(m.get('source_site_id'))
        m['dest_site'] = names.get(m.get('dest_site_id'))


def _named(name):
    """Cell attributes naming the column, for scripts and browser tests.

    Horizon sets data-cell-name only on inline-editable cells.
    """
    return lambda _datum: {'data-fedex-cell': name}


class MigrationsTable(tables.DataTable):
    name = tables.WrappingColumn(
        lambda m: m.get('name') or m['id'], verbose_name=_('Name'),
        link='detail')
    servers = tables.Column(_servers, verbose_name=_('Servers'))
    route = tables.Column(_route, verbose_name=_('Source \u2192 Destination'))
    state = tables.Column('state', verbose_name=_('State'), status=True,
                          status_choices=states.STATUS_CHOICES,
                          cell_attributes_getter=_named('state'))
    progress = tables.Column(_progress, verbose_name=_('Progress'),
                             cell_attributes_getter=_named('progress'))
    rounds = tables.Column(_rounds, verbose_name=_('Rounds'),
                           cell_attributes_getter=_named('rounds'))
    last_event = tables.WrappingColumn(
        _last_event, verbose_name=_('Last event'),
        cell_attributes_getter=_named('last_event'))

    # Set by the panel's view: 'horizon:project:fedex_migrations' or admin.
    url_namespace = 'horizon:project:fedex_migrations'

    def __init__(self, request, *args, **kwargs):
        super().__init__(request, *args, **kwargs)
        self.columns['name'].link = self._detail_link

    def _detail_link(self, datum):
        from django import urls
        return urls.reverse(self.url_namespace + ':detail',
                            args=[datum['id']])

    def get_object_id(self, datum):
        return datum['id']

    def get_object_display(self, datum):
        return datum.get('name') or datum['id']

    class Meta(object):
        name = 'migrations'
        verbose_name = _('Migrations')
        status_columns = ['state']
        row_class = UpdateRow
        table_actions = (MigrationFilterAction, CreateMigration)
        row_actions = (ApproveCutover, RetryMigration, AbortMigration)


class AdminMigrationsTable(MigrationsTable):
    project = tables.Column('project_id', verbose_name=_('Project'))
    url_namespace = 'horizon:admin:fedex_migrations'

    class Meta(MigrationsTable.Meta):
        columns = ('name', 'project', 'servers', 'route', 'state',
                   'progress', 'rounds', 'last_event')


class EventsTable(tables.DataTable):
    when = tables.Column(lambda e: e.get('occurred_at') or e.get(
        'created_at'), verbose_name=_('When'))
    kind = tables.Column('kind', verbose_name=_('Kind'))
    transition = tables.Column(
        lambda e: ('%s \u2192 %s' % (e.get('from_state') or '',
                                     e['to_state'])) if e.get('to_state')
        else '', verbose_name=_('State'))
    message = tables.WrappingColumn('message', verbose_name=_('Message'))
    location = tables.Column('location', verbose_name=_('Location'),
                             empty_value='')

    def get_object_id(self, datum):
        return str(datum['id'])

    class Meta(object):
        name = 'events'
        verbose_name = _('Events')


def _cutover(s):
    """A wave server's last cutover: outcome (or running) and seconds."""
    runs = s.get('cutovers') or []
    if not runs:
        return s.get('waiting') or '-'
    last = runs[-1]
    if last.get('outcome') is None:
        return _('running since %s') % last['started_at']
    return '%s (%s)' % (last['outcome'], units.duration(last['seconds']))


class WaveServersTable(tables.DataTable):
    """The servers of a wave: each one's migration, state, progress, ETA."""

    server = tables.Column('server_id', verbose_name=_('Server'))
    migration = tables.Column('name', verbose_name=_('Migration'),
                              empty_value='-')
    state = tables.Column('state', verbose_name=_('State'))
    progress = tables.Column(
        lambda s: '-' if (s.get('progress') or {}).get('percent') is None
        else '%s%%' % s['progress']['percent'], verbose_name=_('Progress'))
    eta = tables.Column(
        lambda s: units.duration((s.get('progress') or {}).get(
            'eta_seconds')), verbose_name=_('ETA'))
    cutover = tables.WrappingColumn(_cutover, verbose_name=_('Cutover'))

    def get_object_id(self, datum):
        return datum['migration_id']

    class Meta(object):
        name = 'wave_servers'
        verbose_name = _('Servers of the wave')
