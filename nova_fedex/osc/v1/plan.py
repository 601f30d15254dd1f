"""``openstack fedex plan create|list|show|delete``: ship or WAN, and from
how many VMs; fedex-api keeps every plan it computed until deleted."""

import json

from osc_lib.command import command
from osc_lib import exceptions

from nova_fedex.osc.v1 import common

FIELDS = ('size', 'allocated', 'write_rate', 'memory', 'dirty_rate',
          'count')


def parse_vm(text):
    """'50GB' or 'size=50GB,allocated=20GB,write_rate=1MB/s,count=100'."""
    vm = {}
    for part in text.split(','):
        key, sep, value = part.partition('=')
        if not sep:
            key, value = 'size', part
        key = key.strip().replace('-', '_')
        if key not in FIELDS:
            raise exceptions.CommandError(
                '--vm %r: %r is not one of %s' % (text, key,
                                                  ', '.join(FIELDS)))
        vm[key] = int(value) if key == 'count' else value.strip()
    if 'size' not in vm:
        raise exceptions.CommandError('--vm %r: size is needed' % text)
    return vm


def _d(seconds):
    if seconds is None:
        return '-'
    for unit, span in (('d', 86400), ('h', 3600), ('min', 60)):
        if seconds >= span:
            return '%.1f %s' % (seconds / span, unit)
    return '%.1f s' % seconds


class CreatePlan(command.ShowOne):
    """Compare FedEx with the WAN for these VMs (nothing is started)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument(
            '--vm', action='append', required=True, type=parse_vm,
            metavar='size=<s>[,allocated=<s>][,write_rate=<r>]'
                    '[,memory=<s>][,dirty_rate=<r>][,count=<n>]',
            help='A group of identical VMs; repeat for more groups. Sizes '
                 'like 50GB or 4GiB, rates like 1MB/s or 10Mbit/s.')
        parser.add_argument('--name', metavar='<name>',
                            help='A name to find the stored plan by.')
        parser.add_argument('--wan-bandwidth', required=True,
                            metavar='<rate>', help='e.g. 155Mbit/s')
        parser.add_argument('--device-write-rate', metavar='<rate>')
        parser.add_argument('--device-read-rate', metavar='<rate>')
        parser.add_argument('--device-capacity', metavar='<size>')
        parser.add_argument('--device-slots', type=int, metavar='<n>')
        parser.add_argument('--parity', type=int, metavar='<n>',
                            help='Extra devices a shipment may lose.')
        parser.add_argument('--transit-time', metavar='<duration>',
                            help='Courier door to door, e.g. 12h, 2d.')
        parser.add_argument('--downtime-budget', metavar='<seconds>')
        parser.add_argument('--cost-per-shipment', type=float)
        parser.add_argument('--cost-per-device', type=float)
        parser.add_argument('--wan-cost-per-gb', type=float)
        parser.add_argument('--plot', metavar='<file.png>',
                            help='Also draw total time vs number of VMs, '
                                 'both ways, into this PNG.')
        return parser

    def _body(self, args):
        body = {'vms': args.vm, 'wan_bandwidth': args.wan_bandwidth}
        for key in ('device_write_rate', 'device_read_rate',
                    'device_capacity', 'device_slots', 'parity',
                    'transit_time',
                    'downtime_budget', 'cost_per_shipment',
                    'cost_per_device', 'wan_cost_per_gb'):
            if getattr(args, key) is not None:
                body[key] = getattr(args, key)
        if args.plot:
            n = sum(vm.get('count', 1) for vm in args.vm)
            top = max(2 * n, 10)
            body['curve'] = sorted({max(1, top * i // 100)
                                    for i in range(0, 101, 2)})
        return body

    def take_action(self, args):
        body = self._body(args)
        if args.name:
            body['name'] = args.name
        plan = self.app.client_manager.fedex.plans.create(**body)
        if args.plot:
            plot(plan, args.plot)
        rows = plan_rows(plan)
        if args.plot:
            rows.append(('plot', args.plot))
        return tuple(r[0] for r in rows), tuple(r[1] for r in rows)


def plan_rows(plan):
    """(field, value) of a plan as ``create`` and ``show`` print it."""
    wan, fx = plan['wan'], plan['fedex']
    rows = [
        ('id', plan.get('id')),
        ('name', plan.get('name')),
        ('recommended', plan['recommended']),
        ('wan_total', _d(wan['total_time'])),
        ('fedex_total', _d(fx['total_time'])),
    ] + [('fedex_%s' % k, _d(v)) for k, v in fx['phases'].items()] + [
        ('wan_expected_pause', _d(wan['expected_pause'])),
        ('fedex_expected_pause', _d(fx['expected_pause'])),
        ('devices', fx['devices']),
        ('wan_bytes_wan_only', _n(wan['wan_bytes'], int)),
        ('wan_bytes_fedex', _n(fx['wan_bytes'], int)),
        # A forecast of a migration request has no prices, but warnings.
        ('cost_wan_only', _n(wan.get('cost'), lambda v: round(v, 2))),
        ('cost_fedex', _n(fx.get('cost'), lambda v: round(v, 2))),
        ('break_even_vms', plan.get('break_even_vms')),
        ('break_even_vms_cost', plan.get('break_even_vms_cost')),
    ]
    if plan.get('warnings'):
        rows.append(('warnings', '\n'.join(plan['warnings'])))
    return rows


def _n(value, fmt):
    return '-' if value is None else fmt(value)


class ListPlan(command.Lister):
    """List the stored plans (of your project; --all-projects: admins)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--all-projects', action='store_true')
        parser.add_argument('--project', metavar='<project-id>')
        parser.add_argument('--limit', type=int, metavar='<n>')
        return parser

    def take_action(self, args):
        items = self.app.client_manager.fedex.plans.list_all(
            limit=args.limit, all_projects=args.all_projects,
            project=args.project)
        columns = ('id', 'name', 'vms', 'recommended', 'wan_total_time',
                   'fedex_total_time', 'break_even_vms', 'created_at')
        return columns, [tuple(_d(p[c]) if c.endswith('_time') else p[c]
                               for c in columns) for p in items]


class ShowPlan(command.ShowOne):
    """Show a stored plan: what it was asked and what it answered."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('plan', metavar='<plan>', help='id or name')
        return parser

    def take_action(self, args):
        plan = self.app.client_manager.fedex.plans.get(args.plan)
        rows = plan_rows(plan) + [
            ('project_id', plan.get('project_id')),
            ('created_at', plan.get('created_at')),
            ('request', json.dumps(plan.get('request'), indent=2,
                                   sort_keys=True))]
        return tuple(r[0] for r in rows), tuple(r[1] for r in rows)


class DeletePlan(common.DeleteCommand):
    """Delete stored plans (nothing was started by them)."""

    collection = 'plans'
    noun = 'plan'


def plot(plan, path):
    """Total time vs number of VMs, both ways, with the break-even."""
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot

    curve = plan['curve']
    fig, ax = pyplot.subplots(figsize=(7, 4.2), dpi=100)
    xs = [c['vms'] for c in curve]
    for key, label in (('wan_seconds', 'WAN only'),
                       ('fedex_seconds', 'FedEx + WAN catch-up')):
        pts = [(c['vms'], c[key] / 3600.0) for c in curve
               if c[key] is not None]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label)
    if plan.get('break_even_vms') and plan['break_even_vms'] <= max(xs):
        ax.axvline(plan['break_even_vms'], linestyle=':', color='grey',
                   label='break-even: %d VMs' % plan['break_even_vms'])
    ax.set_xlabel('number of VMs')
    ax.set_ylabel('total time (hours)')
    ax.set_title('Migration over FedEx vs over the WAN')
    ax.legend()
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, format='png')
    pyplot.close(fig)
