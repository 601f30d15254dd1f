"""``openstack fedex shipment|device|terminal ...``."""

from osc_lib.command import command

SHIPMENT_COLUMNS = ('id', 'name', 'state', 'carrier', 'tracking_number',
                    'updated_at')
DEVICE_COLUMNS = ('id', 'serial', 'state', 'capacity_bytes', 'terminal_id',
                  'shipment_id', 'updated_at')
TERMINAL_COLUMNS = ('id', 'name', 'site_id', 'health', 'heartbeat_age',
                    'slots', 'capacity_bytes')


def _row(item, columns):
    return tuple(item.get(c) for c in columns)


def _events(item):
    return '\n'.join('%s %s' % (e.get('occurred_at') or e['created_at'],
                                e['message']) for e in item.get('events', []))


class ListShipment(command.Lister):
    """List shipments."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--state', metavar='<state>')
        parser.add_argument('--tracking-number', metavar='<number>')
        return parser

    def take_action(self, args):
        items = self.app.client_manager.fedex.shipments.list_all(
            state=args.state, tracking_number=args.tracking_number)
        return SHIPMENT_COLUMNS, [_row(s, SHIPMENT_COLUMNS) for s in items]


class ShowShipment(command.ShowOne):
    """Show a shipment: devices, migrations, carrier events."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('shipment', metavar='<shipment>')
        return parser

    def take_action(self, args):
        s = self.app.client_manager.fedex.shipments.get(args.shipment)
        columns = SHIPMENT_COLUMNS + ('devices', 'migrations', 'events')
        return columns, _row(s, SHIPMENT_COLUMNS) + (
            ','.join(d['serial'] for d in s.get('devices', [])),
            ','.join(s.get('migrations', [])), _events(s))


class ShipmentEvent(command.ShowOne):
    """Record a carrier event of a shipment."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('shipment', metavar='<shipment>')
        parser.add_argument(
            '--event', required=True,
            choices=['handed_to_carrier', 'in_transit', 'delivered', 'lost',
                     'damaged'])
        parser.add_argument('--tracking-number', metavar='<number>',
                            help='Required with handed_to_carrier.')
        parser.add_argument('--location', metavar='<place>')
        parser.add_argument('--seq', type=int, metavar='<n>',
                            help="The carrier's event number (duplicates "
                                 'are ignored).')
        parser.add_argument('--missing-device', action='append',
                            metavar='<serial>', dest='missing',
                            help='A device that did not arrive.')
        return parser

    def take_action(self, args):
        s = self.app.client_manager.fedex.shipments.event(
            args.shipment, args.event, tracking_number=args.tracking_number,
            location=args.location, seq=args.seq,
            devices_missing=args.missing or None)
        return SHIPMENT_COLUMNS, _row(s, SHIPMENT_COLUMNS)


class ListDevice(command.Lister):
    """List devices."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--state', metavar='<state>')
        parser.add_argument('--terminal', metavar='<terminal>')
        return parser

    def take_action(self, args):
        items = self.app.client_manager.fedex.devices.list_all(
            state=args.state, terminal=args.terminal)
        return DEVICE_COLUMNS, [_row(d, DEVICE_COLUMNS) for d in items]


class ShowDevice(command.ShowOne):
    """Show a device and its chain of custody."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('device', metavar='<device>',
                            help='ID or serial.')
        return parser

    def take_action(self, args):
        d = self.app.client_manager.fedex.devices.get(args.device)
        return DEVICE_COLUMNS + ('events',), _row(d, DEVICE_COLUMNS) + (
            _events(d),)


class ListTerminal(command.Lister):
    """List terminals and their health."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--site', metavar='<site>')
        return parser

    def take_action(self, args):
        items = self.app.client_manager.fedex.terminals.list(site=args.site)
        return TERMINAL_COLUMNS, [_row(t, TERMINAL_COLUMNS) for t in items]
