"""Create a migration, with a plan preview from POST /v1/plans first."""

from django.utils.translation import gettext_lazy as _

from horizon import exceptions
from horizon import forms
from horizon import messages

from fedex_dashboard.api import fedex
from fedex_dashboard.content import units

GIB = 1024 ** 3
MIB = 1024 ** 2


def _server_ids(text):
    return [s for s in text.replace(',', ' ').split() if s]


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
    # Inputs of the plan preview only (the migration itself reads the real
    # sizes and write rates from the source cluster).
    disk_gib = forms.FloatField(
        label=_('Disk size per server (GiB), for the preview'),
        required=False, min_value=0.001, initial=50)
    write_mib = forms.FloatField(
        label=_('Write rate per server (MiB/s), for the preview'),
        required=False, min_value=0, initial=0.1)
    wan_mbit = forms.FloatField(
        label=_('WAN bandwidth (Mbit/s), for the preview'), required=False,
        min_value=0.001, initial=100)

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
        """POST /v1/plans for these servers; kept in self.plan."""
        count = len(_server_ids(data['servers']))
        vm = {'size': int((data.get('disk_gib') or 50) * GIB),
              'write_rate': int((data.get('write_mib') or 0) * MIB),
              'count': count}
        wan = (data.get('wan_mbit') or 100) * 1e6 / 8
        try:
            plan = fedex.plan_create(request, [vm], wan)
        except fedex.FedexAPIError as e:
            exceptions.handle(request, str(e))
            return False
        self.plan = plan
        return False        # show the form again, with the plan

    def handle(self, request, data):
        if 'preview' in request.POST:
            return self.preview(request, data)
        options = {'cutover': data['cutover']}
        if data.get('downtime_budget'):
            options['downtime_budget'] = data['downtime_budget']
        if data.get('rate_cap'):
            options['rate_cap'] = int(data['rate_cap'] * MIB)
        if data.get('threshold_mib') is not None:
            options['threshold_bytes'] = int(data['threshold_mib'] * MIB)
        if data.get('max_rounds'):
            options['max_rounds'] = data['max_rounds']
        try:
            m = fedex.migration_create(
                request, _server_ids(data['servers']), data['source_site'],
                data['dest_site'], name=data.get('name'), options=options)
        except fedex.FedexAPIError as e:
            exceptions.handle(request, str(e))
            return False
        messages.success(request, _('Migration %(name)s created: '
                                    '%(state)s.') % {
            'name': m.get('name') or m['id'], 'state': m['state']})
        return m


def plan_rows(plan):
    """The preview as (label, WAN, FedEx) rows for the template."""
    if not plan:
        return []
    rows = []
    wan, ship = plan.get('wan') or {}, plan.get('fedex') or {}
    for key, label, fmt in (
            ('total_time', _('Total time'), units.duration),
            ('expected_pause', _('Expected pause'), units.duration),
            ('wan_bytes', _('Bytes over the WAN'), units.size),
            ('devices', _('Devices'), str),
            ('shipments', _('Shipments'), str),
            ('cost', _('Cost'), lambda v: '%.2f' % v)):
        if key in wan or key in ship:
            rows.append((label,
                         fmt(wan[key]) if wan.get(key) is not None else '-',
                         fmt(ship[key]) if ship.get(key) is not None
                         else '-'))
    return rows
