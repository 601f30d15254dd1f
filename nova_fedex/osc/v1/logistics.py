"""``openstack fedex shipment|device|terminal|site ...``.

An operator's hardware: devices registered, sent home and retired,
terminals and sites registered. Values keep their types (``-f json``).
"""

from osc_lib.command import command
from osc_lib import exceptions

from fedexclient import exceptions as fedex_exc
from nova_fedex.osc.v1 import common

SHIPMENT_COLUMNS = ('id', 'name', 'state', 'carrier', 'tracking_number',
                    'updated_at')
DEVICE_COLUMNS = ('id', 'serial', 'state', 'capacity_bytes', 'terminal_id',
                  'shipment_id', 'updated_at')
# A device's home and its trip there (fedex-api gives the names).
DEVICE_HOME_COLUMNS = ('home_terminal', 'return_trip')
TERMINAL_COLUMNS = ('id', 'name', 'site_id', 'health', 'heartbeat_age',
                    'slots', 'capacity_bytes')
SITE_COLUMNS = ('id', 'name', 'availability_zone', 'aggregate')


def _row(item, columns):
    return tuple(item.get(c) for c in columns)


def return_trip(trip):
    """A device's return consignment: a line in a table, an object in JSON."""
    if not trip:
        return None
    return common.Column(trip, '%s %s %s -> %s%s' % (
        trip.get('name'), trip.get('state'), trip.get('from'),
        trip.get('to'), ' (%s %s)' % (trip['carrier'],
                                      trip['tracking_number'])
        if trip.get('tracking_number') else ''))


def _device_row(d):
    return _row(d, DEVICE_COLUMNS) + (d.get('home_terminal'),
                                      return_trip(d.get('return_trip')))


def _events(item):
    return '\n'.join('%s %s' % (e.get('occurred_at') or e['created_at'],
                                e['message']) for e in item.get('events', []))


class ListShipment(command.Lister):
    """List shipments (migrations' seeds and devices going home)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--state', metavar='<state>')
        parser.add_argument('--tracking-number', metavar='<number>')
        parser.add_argument('--kind', choices=['seed', 'return'],
                            help='seed: a migration\'s devices; return: '
                                 'wiped devices going home.')
        return parser

    def take_action(self, args):
        items = self.app.client_manager.fedex.shipments.list_all(
            state=args.state, tracking_number=args.tracking_number,
            kind=args.kind)
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
    """List devices: where they are, their home, their trip home."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--state', metavar='<state>')
        parser.add_argument('--terminal', metavar='<terminal>',
                            help='Devices plugged in at this terminal.')
        parser.add_argument('--home-terminal', metavar='<terminal>',
                            help='Devices whose home is this terminal.')
        return parser

    def take_action(self, args):
        items = self.app.client_manager.fedex.devices.list_all(
            state=args.state, terminal=args.terminal,
            home_terminal=args.home_terminal)
        return DEVICE_COLUMNS + DEVICE_HOME_COLUMNS, [
            _device_row(d) for d in items]


class ShowDevice(command.ShowOne):
    """Show a device and its chain of custody."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('device', metavar='<device>',
                            help='ID or serial.')
        return parser

    def take_action(self, args):
        d = self.app.client_manager.fedex.devices.get(args.device)
        return DEVICE_COLUMNS + DEVICE_HOME_COLUMNS + ('events',), \
            _device_row(d) + (_events(d),)


class CreateDevice(command.ShowOne):
    """Register a blank device plugged in at a terminal (its home)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('serial', metavar='<serial>')
        parser.add_argument('--terminal', required=True,
                            metavar='<terminal>',
                            help='Where it is plugged in: its home, where '
                                 'the courier brings it back once wiped.')
        parser.add_argument('--capacity', dest='capacity_bytes', type=int,
                            required=True, metavar='<bytes>')
        parser.add_argument('--slot', type=int, metavar='<n>')
        parser.add_argument('--path', metavar='<path>',
                            help='Where the terminal sees it (mount point).')
        return parser

    def take_action(self, args):
        d = self.app.client_manager.fedex.devices.create(
            args.serial, args.capacity_bytes, args.terminal, slot=args.slot,
            path=args.path)
        return DEVICE_COLUMNS + DEVICE_HOME_COLUMNS, _device_row(d)


class DeleteDevice(common.DeleteCommand):
    """Retire devices (BLANK, ERASED or LOST, and unplugged)."""

    collection = 'devices'
    noun = 'device'


class ReturnDevice(command.Lister):
    """Send wiped devices home: the courier takes them back.

    Each goes back to the terminal it was registered at; the conductor
    packs them into a return consignment (openstack fedex shipment list
    --kind return).
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('devices', metavar='<device>', nargs='+',
                            help='ID or serial.')
        parser.add_argument('--reason', metavar='<text>',
                            help='Recorded in each device\'s events.')
        return parser

    def take_action(self, args):
        fedex = self.app.client_manager.fedex
        rows, failed = [], []
        for ident in args.devices:
            try:
                rows.append(_device_row(fedex.devices.return_home(
                    ident, reason=args.reason)))
            except fedex_exc.ClientException as e:
                failed.append(str(e))
        if failed:
            raise exceptions.CommandError('; '.join(failed))
        return DEVICE_COLUMNS + DEVICE_HOME_COLUMNS, rows


class ListTerminal(command.Lister):
    """List terminals and their health."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--site', metavar='<site>')
        return parser

    def take_action(self, args):
        items = self.app.client_manager.fedex.terminals.list(site=args.site)
        return TERMINAL_COLUMNS, [_row(t, TERMINAL_COLUMNS) for t in items]


class ShowTerminal(command.ShowOne):
    """Show a terminal and its health."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('terminal', metavar='<terminal>',
                            help='ID or name.')
        return parser

    def take_action(self, args):
        t = self.app.client_manager.fedex.terminals.get(args.terminal)
        columns = TERMINAL_COLUMNS + ('state', 'lsrp_address', 'rpc_topic',
                                      'last_heartbeat')
        return columns, _row(t, columns)


class CreateTerminal(command.ShowOne):
    """Register a terminal at a site (a terminal's agent does it too)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='<name>',
                            help='The name its lsrp-agent runs as.')
        parser.add_argument('--site', required=True, metavar='<site>')
        parser.add_argument('--lsrp-address', metavar='<host:port>',
                            help='Its lsrp-server (catch-up rounds).')
        parser.add_argument('--rpc-topic', metavar='<topic>',
                            help='Default: the one its name gives.')
        parser.add_argument('--slots', type=int, metavar='<n>')
        parser.add_argument('--capacity', dest='capacity_bytes', type=int,
                            metavar='<bytes>')
        return parser

    def take_action(self, args):
        t = self.app.client_manager.fedex.terminals.register(
            args.name, args.site, lsrp_address=args.lsrp_address,
            rpc_topic=args.rpc_topic, slots=args.slots,
            capacity_bytes=args.capacity_bytes)
        return TERMINAL_COLUMNS, _row(t, TERMINAL_COLUMNS)


class ListSite(command.Lister):
    """List sites."""

    def take_action(self, args):
        items = self.app.client_manager.fedex.sites.list_all()
        return SITE_COLUMNS, [_row(s, SITE_COLUMNS) for s in items]


class ShowSite(command.ShowOne):
    """Show a site (an admin sees its Ceph settings too)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('site', metavar='<site>', help='ID or name.')
        return parser

    def take_action(self, args):
        s = self.app.client_manager.fedex.sites.get(args.site)
        columns = SITE_COLUMNS + tuple(sorted(
            k for k in s if k.startswith('ceph_'))) + ('created_at',)
        return columns, _row(s, columns)


class CreateSite(command.ShowOne):
    """Register a site: a Ceph cluster and where its hosts are in Nova."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('name', metavar='<name>')
        parser.add_argument('--availability-zone', metavar='<zone>')
        parser.add_argument('--aggregate', metavar='<aggregate>',
                            help='Nova host aggregate of its hosts.')
        parser.add_argument('--ceph-conf', metavar='<path>')
        parser.add_argument('--ceph-keyring', metavar='<path>')
        parser.add_argument('--ceph-client', metavar='<name>')
        return parser

    def take_action(self, args):
        s = self.app.client_manager.fedex.sites.register(
            args.name, availability_zone=args.availability_zone,
            aggregate=args.aggregate, ceph_conf=args.ceph_conf,
            ceph_keyring=args.ceph_keyring, ceph_client=args.ceph_client)
        return SITE_COLUMNS, _row(s, SITE_COLUMNS)
