"""``openstack fedex migration create|list|show|set|abort|retry|cutover|
delete`` and ``openstack fedex migration event list``."""

from osc_lib.command import command
from osc_lib import exceptions

from nova_fedex.osc.v1 import common


def _option_args(parser):
    parser.add_argument('--rate-cap', type=int, metavar='<bytes/s>',
                        help='Cap of export reads and catch-up (0: none).')
    parser.add_argument('--downtime-budget', type=int, metavar='<seconds>',
                        help='Longest acceptable pause at cutover.')
    parser.add_argument('--cutover', choices=['automatic', 'approved'],
                        help='Cut over when ready, or wait for "openstack '
                             'fedex migration cutover" (default).')
    parser.add_argument('--cutover-window', metavar='<HH:MM-HH:MM>',
                        help='Daily UTC window for the cutover.')
    parser.add_argument('--convergence', choices=['auto-converge', 'refuse'],
                        help='A guest whose memory copy would not fit the '
                             'downtime budget: cut over with its vCPUs '
                             'throttled (default), or refuse its cutover '
                             'before the pause.')


def _options(args):
    out = {}
    for key in ('rate_cap', 'downtime_budget', 'cutover', 'convergence'):
        if getattr(args, key, None) is not None:
            out[key] = getattr(args, key)
    if getattr(args, 'cutover_window', None):
        try:
            start, end = args.cutover_window.split('-')
        except ValueError:
            raise exceptions.CommandError(
                '--cutover-window %r: expected HH:MM-HH:MM'
                % args.cutover_window)
        out['cutover_window'] = {'start': start, 'end': end}
    return out


class CreateMigration(command.ShowOne):
    """Move servers to another site: seed by courier, catch up by WAN."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--server', action='append', default=[],
                            metavar='<server>', dest='servers',
                            help='Server (name or ID) to move; repeat for a '
                                 'wave.')
        parser.add_argument('--volume', action='append', default=[],
                            metavar='<volume>', dest='volumes',
                            help='A detached Cinder volume (name or ID) to '
                                 'move on its own; repeat for more. It ends '
                                 'as a volume of the destination site.')
        parser.add_argument('--image', action='append', default=[],
                            metavar='<server>=<pool/image>',
                            help='An RBD image of a server (default: its '
                                 'Nova root disk and attached volumes).')
        parser.add_argument('--source-site', metavar='<site>',
                            help='Default: the site of the server\'s '
                                 'availability zone.')
        dest = parser.add_mutually_exclusive_group(required=True)
        dest.add_argument('--site', '--dest-site', dest='dest_site',
                          metavar='<site>', help='Destination site.')
        dest.add_argument('--host', dest='dest_host', metavar='<host>',
                          help='Destination compute host (its site is '
                               'found from its availability zone).')
        parser.add_argument('--name', metavar='<name>')
        _option_args(parser)
        common.add_wait_args(
            parser, 'Follow the migration until it is ready for its cutover '
                    '(or completed when the cutover is automatic). Ctrl-C '
                    'stops following only.')
        return parser

    def _volume_ids(self, refs):
        from osc_lib import utils
        from oslo_utils import uuidutils

        if all(uuidutils.is_uuid_like(r) for r in refs):
            return list(refs)
        volumes = self.app.client_manager.volume.volumes
        return [r if uuidutils.is_uuid_like(r) else
                utils.find_resource(volumes, r).id for r in refs]

    def take_action(self, args):
        client = self.app.client_manager.fedex
        if not args.servers and not args.volumes:
            raise exceptions.CommandError('give --server or --volume')
        if args.volumes and not args.servers:
            if not args.dest_site:
                raise exceptions.CommandError(
                    'volumes moved on their own need --site')
            # The source site: the volumes' availability zone (fedex-api
            # asks Cinder) unless given.
            m = client.migrations.create(
                args.dest_site, volumes=[{'volume_id': v} for v in
                                         self._volume_ids(args.volumes)],
                source_site=args.source_site or None,
                name=args.name or None, options=_options(args) or None)
            m = common.waited(args, common.follow, client, m)
            return common.MIGRATION_COLUMNS, common.migration_row(m)
        if args.volumes:
            raise exceptions.CommandError(
                '--volume moves detached volumes on their own: a server\'s '
                'attached volumes go with it (give either, not both)')
        images = {}
        for spec in args.image:
            server, sep, image = spec.partition('=')
            if not sep or '/' not in image:
                raise exceptions.CommandError(
                    '--image %r: expected <server>=<pool/image>' % spec)
            images.setdefault(server, []).append(image)
        unknown = set(images) - set(args.servers)
        if unknown:
            raise exceptions.CommandError(
                '--image names server(s) not given with --server: %s'
                % ', '.join(sorted(unknown)))
        compute = None
        if set(images) != set(args.servers) or not args.source_site:
            compute = self.app.client_manager.compute
        body = common.migration_request(
            client, compute, args.servers, images=images,
            source_site=args.source_site, dest_site=args.dest_site,
            dest_host=args.dest_host, name=args.name,
            options=_options(args))
        m = common.waited(args, common.follow, client,
                          client.migrations.create(**body))
        return common.MIGRATION_COLUMNS, common.migration_row(m)


class ListMigration(command.Lister):
    """List migrations (of your project; --all-projects for admins)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--state', metavar='<state>')
        parser.add_argument('--server', metavar='<server-id>')
        parser.add_argument('--project', metavar='<project-id>')
        parser.add_argument('--all-projects', action='store_true')
        parser.add_argument('--limit', type=int, metavar='<n>')
        parser.add_argument('--marker', metavar='<migration-id>')
        parser.add_argument('--sort-key', metavar='<key>')
        parser.add_argument('--sort-dir', choices=['asc', 'desc'])
        parser.add_argument('--long', action='store_true')
        return parser

    def take_action(self, args):
        client = self.app.client_manager.fedex
        params = {'state': args.state, 'server': args.server,
                  'project': args.project,
                  'all_projects': args.all_projects,
                  'sort_key': args.sort_key, 'sort_dir': args.sort_dir}
        if args.marker or args.limit:
            items = client.migrations.list(limit=args.limit,
                                           marker=args.marker, **params)
        else:
            items = client.migrations.list_all(**params)
        columns = common.MIGRATION_COLUMNS if args.long else \
            common.LIST_COLUMNS
        return columns, [common.migration_row(m, columns) for m in items]


class ShowMigration(command.ShowOne):
    """Show a migration: state, progress, rounds, shipments, last events."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('migration', metavar='<migration>')
        parser.add_argument('--events', action='store_true',
                            help='Add the latest events.')
        return parser

    def take_action(self, args):
        m = self.app.client_manager.fedex.migrations.get(args.migration)
        columns = common.MIGRATION_COLUMNS
        row = common.migration_row(m)
        if args.events:
            columns += ('events',)
            row += (common.events_column(m.get('events')),)
        return columns, row


def _rate_schedule(spec):
    """'[DAYS@]HH:MM-HH:MM=BYTES/S', e.g. 'mon-fri@08:00-18:00=10485760'."""
    when, sep, cap = spec.rpartition('=')
    days, _, hours = when.rpartition('@')
    start, dash, end = hours.partition('-')
    try:
        if not (sep and dash):
            raise ValueError(spec)
        item = {'start': start, 'end': end, 'rate_cap': int(cap)}
    except ValueError:
        raise exceptions.CommandError(
            '--rate-schedule %r: expected [DAYS@]HH:MM-HH:MM=BYTES/S, e.g. '
            'mon-fri@08:00-18:00=10485760' % spec)
    if days:
        item['days'] = days
    return item


class SetMigration(command.Command):
    """Change a running migration's name or options (fedex-api checks them).

    Its rate cap, rate schedule, downtime budget, cutover mode and window;
    the shipment group and carrier are fixed once it exists.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('migration', metavar='<migration>')
        parser.add_argument('--name', metavar='<name>')
        _option_args(parser)
        parser.add_argument('--no-cutover-window', action='store_true',
                            help='Cut over at any time of the day.')
        schedule = parser.add_mutually_exclusive_group()
        schedule.add_argument(
            '--rate-schedule', action='append', type=_rate_schedule,
            metavar='<[days@]HH:MM-HH:MM=bytes/s>',
            help='A lower rate cap at times of the week (UTC), e.g. '
                 'mon-fri@08:00-18:00=10485760; repeat for more. Replaces '
                 'the schedule.')
        schedule.add_argument('--no-rate-schedule', action='store_true',
                              help='Remove the rate schedule.')
        return parser

    def take_action(self, args):
        if args.cutover_window and args.no_cutover_window:
            raise exceptions.CommandError(
                'give --cutover-window or --no-cutover-window, not both')
        fields = _options(args)
        if args.rate_schedule or args.no_rate_schedule:
            fields['rate_schedule'] = args.rate_schedule or []
        if args.name:
            fields['name'] = args.name
        clear = ('cutover_window',) if args.no_cutover_window else ()
        if not fields and not clear:
            raise exceptions.CommandError('nothing to set: give --name or '
                                          'an option (see --help)')
        self.app.client_manager.fedex.migrations.update(
            args.migration, clear=clear, **fields)


EVENT_COLUMNS = ('id', 'created_at', 'resource_type', 'kind', 'from_state',
                 'to_state', 'message')
EVENT_LONG_COLUMNS = EVENT_COLUMNS + ('occurred_at', 'resource_id', 'actor',
                                      'location', 'details')


class ListMigrationEvent(command.Lister):
    """List a migration's events: its audit trail, oldest first."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('migration', metavar='<migration>')
        parser.add_argument('--type', metavar='<kind>',
                            help='Only events of this kind (state, '
                                 'progress, key, config, note, ...).')
        parser.add_argument('--since', metavar='<time>',
                            help='Only events from this ISO 8601 time on.')
        parser.add_argument('--until', metavar='<time>',
                            help='Only events before this ISO 8601 time.')
        parser.add_argument('--limit', type=int, metavar='<n>')
        parser.add_argument('--marker', metavar='<event-id>')
        parser.add_argument('--sort-dir', choices=['asc', 'desc'])
        parser.add_argument('--long', action='store_true',
                            help='Add when it happened, who did it, where, '
                                 'and its details.')
        return parser

    def take_action(self, args):
        events = self.app.client_manager.fedex.events
        params = {'migration': args.migration, 'type': args.type,
                  'since': args.since, 'until': args.until,
                  'sort_dir': args.sort_dir}
        if args.marker or args.limit:
            items = events.list(limit=args.limit, marker=args.marker,
                                **params)
        else:
            items = events.list_all(**params)
        columns = EVENT_LONG_COLUMNS if args.long else EVENT_COLUMNS
        return columns, [common.event_row(e, columns) for e in items]


class _Action(command.ShowOne):
    verb = None

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('migration', metavar='<migration>')
        return parser

    def _args(self, args):
        return {}

    def take_action(self, args):
        m = self.app.client_manager.fedex.migrations.action(
            args.migration, self.verb, **self._args(args))
        return common.MIGRATION_COLUMNS, common.migration_row(m)


class AbortMigration(_Action):
    """Abort a migration before its cutover (the source keeps running)."""

    verb = 'abort'

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--reason', metavar='<text>')
        return parser

    def _args(self, args):
        return {'reason': args.reason} if args.reason else {}


class RetryMigration(_Action):
    """Retry the phase a migration failed in."""

    verb = 'retry'


class CutoverMigration(_Action):
    """Approve the cutover of a migration (it runs once ready)."""

    verb = 'cutover'


class DeleteMigration(common.DeleteCommand):
    """Delete finished migrations."""

    collection = 'migrations'
    noun = 'migration'
