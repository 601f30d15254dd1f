"""``openstack fedex wave create|list|show|cutover|abort``.

A wave moves servers together: one migration each, one shipment (their
common chunks stored once), each server's own cutover, final delta and
rollback; at most ``--max-parallel-cutovers`` of them cut over at once.
"""

import sys
import time

from osc_lib.command import command
from osc_lib import exceptions

from nova_fedex.osc.v1 import common
from nova_fedex.osc.v1 import migration

WAVE_COLUMNS = ('id', 'state', 'states', 'servers', 'progress',
                'eta_seconds', 'max_parallel_cutovers', 'cutover',
                'allowed_actions', 'shipments', 'device_bytes',
                'created_at', 'updated_at')
LIST_COLUMNS = ('id', 'state', 'states', 'servers', 'updated_at')
# A server needs nobody but the wave's cutover here, or is at its end.
_ENDED = ('COMPLETED', 'CLEANED', 'ABORTED', 'FAILED')


def _seconds(value):
    return '-' if value is None else '%ds' % round(value)


def server_line(s):
    """One server of a wave: state, progress, ETA, its cutovers."""
    p = s.get('progress') or {}
    parts = ['%s %s' % ((s.get('server_id') or '?')[:8], s['state'])]
    if p.get('percent') is not None:
        parts.append('%.1f%%' % p['percent'])
    if p.get('eta_seconds'):
        parts.append('ETA %s' % _seconds(p['eta_seconds']))
    runs = s.get('cutovers') or []
    if runs:
        last = runs[-1]
        parts.append('cutover %s %s' % (
            last['outcome'] or 'running since %s' % last['started_at'],
            _seconds(last['seconds']) if last['seconds'] is not None
            else ''))
    if s.get('waiting'):
        parts.append('waiting: %s' % s['waiting'])
    return '  ' + ' | '.join(x.strip() for x in parts)


def wave_lines(w):
    """The wave's line, then one per server."""
    p = w.get('progress') or {}
    head = 'wave %s %s | %s servers, %s completed, %s cutting over' % (
        w['id'], w['state'], p.get('servers'), p.get('completed'),
        p.get('cutting_over'))
    if p.get('percent') is not None:
        head += ' | %.1f%%' % p['percent']
    if p.get('eta_seconds'):
        head += ' | ETA %s' % _seconds(p['eta_seconds'])
    return [head] + [server_line(s) for s in w.get('servers') or []]


def _done(s, automatic):
    if s['state'] in _ENDED:
        return True
    if s['state'] != 'READY_FOR_CUTOVER':
        return False
    waiting = s.get('waiting') or ''
    # Waiting for someone: an approval (first, or again after rollbacks).
    return (not automatic and not s.get('cutover_approved')) or \
        'approve it again' in waiting or 'not approved' in waiting


def _wave_done(w):
    automatic = w.get('cutover') == 'automatic'
    if not all(_done(s, automatic) for s in w['servers']):
        return False
    bad = [s for s in w['servers'] if s['state'] in ('FAILED', 'ABORTED')]
    if bad:
        raise exceptions.CommandError('wave %s: %s' % (w['id'], '; '.join(
            'server %s %s: %s' % (s['server_id'], s['state'],
                                  s.get('last_error') or 'see its events')
            for s in bad)))
    return True


def follow(client, ident, interval=2.0, out=sys.stderr, clock=time):
    """Print the wave (per server) until each server waits or ended.

    Ends when every server is READY_FOR_CUTOVER waiting for an approval,
    or ended (COMPLETED, CLEANED, ABORTED, FAILED). Ctrl-C stops
    following only. A FAILED or ABORTED server is an error at the end.
    """
    return common.poll('wave', client.waves.get, ident,
                       lambda w: '\n'.join(wave_lines(w)), _wave_done,
                       interval, out, clock)


def wave_row(w, columns=WAVE_COLUMNS):
    p = w.get('progress') or {}
    flat = dict(w)
    states = w.get('states') or {}
    servers = w.get('servers')
    flat.update({
        'states': common.Column(states, ','.join(
            '%s %d' % kv for kv in sorted(states.items()))),
        'servers': common.Column(servers, '\n'.join(wave_lines(w)[1:]))
        if isinstance(servers, list) else servers,
        'progress': common.Column(
            {k: p.get(k) for k in ('percent', 'bytes_done', 'bytes_total')},
            '-' if p.get('percent') is None else '%.1f%% of %d bytes' % (
                p['percent'], p.get('bytes_total') or 0)),
        'eta_seconds': p.get('eta_seconds'),
        'allowed_actions': common.list_column(w.get('allowed_actions')),
        'shipments': common.Column(w.get('shipments'), ','.join(
            '%s(%s)' % (s['name'], s['state'])
            for s in w.get('shipments') or [])),
    })
    return tuple(flat.get(c) for c in columns)


class CreateWave(command.ShowOne):
    """Move servers together: one shipment, a cutover each, in turns."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--server', action='append', default=[],
                            metavar='<server>', dest='servers',
                            required=True,
                            help='Server (name or ID) to move; repeat.')
        parser.add_argument('--image', action='append', default=[],
                            metavar='<server>=<pool/image>',
                            help='An RBD image of a server (default: its '
                                 'Nova root disk and attached volumes).')
        parser.add_argument('--source-site', metavar='<site>')
        dest = parser.add_mutually_exclusive_group(required=True)
        dest.add_argument('--site', '--dest-site', dest='dest_site',
                          metavar='<site>', help='Destination site.')
        dest.add_argument('--host', dest='dest_host', metavar='<host>',
                          help='Destination compute host.')
        parser.add_argument('--name', metavar='<name>',
                            help='The wave\'s id (default: wave-<hex>).')
        parser.add_argument('--max-parallel-cutovers', type=int,
                            metavar='<n>',
                            help='Servers cutting over at once (default 2).')
        migration._option_args(parser)
        common.add_wait_args(
            parser, 'Follow the wave, server by server, until each waits '
                    'for its cutover\'s approval or ended. Ctrl-C stops '
                    'following only.')
        return parser

    def take_action(self, args):
        client = self.app.client_manager.fedex
        images = {}
        for spec in args.image:
            server, sep, image = spec.partition('=')
            if not sep or '/' not in image:
                raise exceptions.CommandError(
                    '--image %r: expected <server>=<pool/image>' % spec)
            images.setdefault(server, []).append(image)
        options = migration._options(args)
        if args.max_parallel_cutovers is not None:
            options['max_parallel_cutovers'] = args.max_parallel_cutovers
        compute = None
        if set(images) != set(args.servers) or not args.source_site:
            compute = self.app.client_manager.compute
        body = common.migration_request(
            client, compute, args.servers, images=images,
            source_site=args.source_site, dest_site=args.dest_site,
            dest_host=args.dest_host, name=args.name, options=options)
        w = common.waited(args, follow, client, client.waves.create(**body))
        return WAVE_COLUMNS, wave_row(w)


class ListWave(command.Lister):
    """List waves (of your project; --all-projects for admins)."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('--all-projects', action='store_true')
        return parser

    def take_action(self, args):
        items = self.app.client_manager.fedex.waves.list(
            all_projects=args.all_projects)
        return LIST_COLUMNS, [wave_row(w, LIST_COLUMNS) for w in items]


class ShowWave(command.ShowOne):
    """Show a wave: each server's state, progress, ETA and cutovers."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('wave', metavar='<wave>')
        common.add_wait_args(parser,
                             'Follow it, server by server (see create).')
        return parser

    def take_action(self, args):
        client = self.app.client_manager.fedex
        if args.wait:
            w = follow(client, args.wave, args.wait_interval)
        else:
            w = client.waves.get(args.wave)
        return WAVE_COLUMNS, wave_row(w)


class CutoverWave(command.ShowOne):
    """Approve the cutover of every server of a wave.

    The conductor starts each once it is ready (and in the cutover
    window), at most max_parallel_cutovers at a time; a server whose
    cutover fails rolls back alone.
    """

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('wave', metavar='<wave>')
        common.add_wait_args(parser, 'Follow the cutovers until every '
                                     'server ended or waits for you.')
        return parser

    def take_action(self, args):
        client = self.app.client_manager.fedex
        w = common.waited(args, follow, client, client.waves.cutover(args.wave))
        return WAVE_COLUMNS, wave_row(w)


class AbortWave(command.ShowOne):
    """Abort every server of a wave whose cutover has not started."""

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('wave', metavar='<wave>')
        parser.add_argument('--reason', metavar='<text>')
        return parser

    def take_action(self, args):
        w = self.app.client_manager.fedex.waves.abort(args.wave,
                                                      reason=args.reason)
        return WAVE_COLUMNS, wave_row(w)
