"""Create a migration, with a preview of its forecast first.

The preview is the forecast of this very request (POST /v1/plans with the
migration's body): fedex-api reads the servers' disks and memory, the
link between the two sites, the courier's timetable and the devices, and
says what each figure assumes.
"""

from django.utils.translation import gettext_lazy as _

from horizon import exceptions
from horizon import forms
from horizon import messages

from fedex_dashboard.api import fedex
from fedex_dashboard.content import units

MIB = 1024 ** 2


def _server_ids(text):
    return [s for s in text.replace(',', ' ').split() if s]


def _options(data):
    """The migration's options from the form, as fedex-api takes them."""
    options = {'cutover': data['cutover']}
    if data.get('downtime_budget'):
        options['downtime_budget'] = data['downtime_budget']
    if data.get('rate_cap'):
        options['rate_cap'] = int(data['rate_cap'] * MIB)
    if data.get('threshold_mib') is not None:
        options['threshold_bytes'] = int(data['threshold_mib'] * MIB)
    if data.get('max_rounds'):
        options['max_rounds'] = data['max_rounds']
    return options


class CreateMigrationForm(forms.SelfHandlingForm):
    name = forms.CharField(label=_('Name'), max_length=255, required=False)
    servers = forms.CharField(
        label=_('Servers'), widget=forms.Textarea(attrs={'rows': 3}),
        help_text=_('IDs of the servers to move, separated by spaces, '
                    'commas or lines. Their disks travel together.'))
    source_site = forms.ThemableChoiceField(label=_('Source site'))
    dest_site = forms.ThemableChoiceField(label=_('Destination site'))
    cutover = forms.ThemableChoiceField(
        label=_('Cutover'), choices=(
            ('approved', _('When I approve it')),
            ('automatic', _('As soon as the servers are ready'))),
        help_text=_('Whether the final pause (about a second) waits for '
                    'your approval.'))
    # fedex-api takes whole seconds (options.validate): a float was refused.
    downtime_budget = forms.IntegerField(
        label=_('Downtime budget (s)'), required=False, min_value=1,
        help_text=_('The longest pause the servers may see at cutover.'))
    rate_cap = forms.IntegerField(
        label=_('WAN rate cap (MiB/s)'), required=False, min_value=1)
    threshold_mib = forms.FloatField(
        label=_('Convergence threshold (MiB)'), required=False, min_value=0,
        help_text=_('The catch-up is over when a round is expected to send '
                    'less than this (default 8 MiB).'))
    max_rounds = forms.IntegerField(
        label=_('Catch-up rounds at most'), required=False, min_value=1,
        help_text=_('Ready for cutover after this many rounds even if '
                    'the servers write faster than the WAN sends '
                    '(default 10).'))
    # What fedex-api cannot read: the guests' rates. Left empty, the
    # preview takes its stated defaults.
    write_mib = forms.FloatField(
        label=_('Disk write rate per server (MiB/s), for the preview'),
        required=False, min_value=0,
        help_text=_('Distinct blocks written per second, if you know it; '
                    'otherwise the forecast says which default it took.'))
    dirty_mib = forms.FloatField(
        label=_('Memory dirty rate per server (MiB/s), for the preview'),
        required=False, min_value=0,
        help_text=_('Memory the guest dirties per second (virsh '
                    'domdirtyrate-calc), if you know it. A guest dirtying '
                    'faster than the link never converges.'))

    def __init__(self, request, *args, **kwargs):
        super().__init__(request, *args, **kwargs)
        self.plan = None
        try:
            sites = fedex.site_list(request)
        except fedex.FedexAPIError as e:
            sites = []
            exceptions.handle(request, str(e))
        choices = [(s['name'], s['name']) for s in sites]
        self.fields['source_site'].choices = choices
        self.fields['dest_site'].choices = list(reversed(choices))

    def clean(self):
        data = super().clean()
        if data.get('source_site') and \
                data.get('source_site') == data.get('dest_site'):
            raise forms.ValidationError(
                _('Source and destination are the same site: choose '
                  'another destination.'))
        if 'servers' in data and not _server_ids(data['servers']):
            self.add_error('servers', _('Give at least one server ID.'))
        return data

    def preview(self, request, data):
        """The forecast of this request; kept in self.plan."""
        migration = {'servers': _server_ids(data['servers']),
                     'source_site': data['source_site'],
                     'dest_site': data['dest_site'],
                     'options': _options(data)}
        if data.get('name'):
            migration['name'] = data['name']
        rates = {}
        for field, key in (('write_mib', 'write_rate'),
                           ('dirty_mib', 'dirty_rate')):
            if data.get(field) is not None:
                rates[key] = int(data[field] * MIB)
        try:
            plan = fedex.plan_forecast(request, migration, **rates)
        except fedex.FedexAPIError as e:
            exceptions.handle(request, str(e))
            return False
        self.plan = plan
        return False        # show the form again, with the forecast

    def handle(self, request, data):
        if 'preview' in request.POST:
            return self.preview(request, data)
        try:
            m = fedex.migration_create(
                request, _server_ids(data['servers']), data['source_site'],
                data['dest_site'], name=data.get('name'),
                options=_options(data))
        except fedex.FedexAPIError as e:
            exceptions.handle(request, str(e))
            return False
        messages.success(request, _('Migration %(name)s created: '
                                    '%(state)s.') % {
            'name': m.get('name') or m['id'], 'state': m['state']})
        return m


def _pause(seconds):
    return '%.2f s' % seconds


# The rows of the preview: the figure, its label, its format.
FIGURES = (('total_time', _('Total time'), units.duration),
           ('expected_pause', _('Expected pause'), _pause),
           ('wan_bytes', _('Bytes over the WAN'), units.size),
           ('devices', _('Devices'), str),
           ('shipments', _('Shipments'), str),
           ('cost', _('Cost'), lambda v: '%.2f' % v))


def plan_rows(plan):
    """The preview as (label, WAN, FedEx, what it assumes) rows."""
    if not plan:
        return []
    rows = []
    wan, ship = plan.get('wan') or {}, plan.get('fedex') or {}
    assumes = plan.get('assumes') or {}
    for key, label, fmt in FIGURES:
        if key in wan or key in ship:
            rows.append((label,
                         fmt(wan[key]) if wan.get(key) is not None else '-',
                         fmt(ship[key]) if ship.get(key) is not None
                         else '-', assumes.get(key, '')))
    catch = plan.get('catch_up')
    if catch:
        rounds = str(catch['rounds'])
        if not catch.get('converges', True):
            rounds = _('%s (not converged)') % rounds
        rows.append((_('Catch-up rounds'), '-', rounds,
                     assumes.get('catch_up', '')))
    return rows


def server_rows(plan):
    """Each server's memory copy and pause (FedEx), for the template."""
    rows = []
    for s in (plan or {}).get('servers') or []:
        copy = s.get('memory_copy_seconds')
        pause = s.get('pause_seconds')
        rows.append({
            'server_id': s.get('server_id'),
            'disk': units.size(s.get('allocated_bytes')),
            'memory': units.size(s.get('memory_bytes')),
            'dirty_rate': units.rate(s.get('dirty_rate')),
            'memory_copy': units.duration(copy) if copy is not None
            else _('never converges'),
            'pause': _pause(pause) if pause is not None else '-',
            'converges': s.get('converges', True)})
    return rows
