"""What the fedex commands share: columns, ``--wait`` and following a
migration, and turning servers into a migration request (with Nova's
help)."""

import argparse
import json
import sys
import time

from cliff import columns as cliff_columns
from osc_lib.command import command
from osc_lib import exceptions

from fedexclient import exceptions as fedex_exc

MIGRATION_COLUMNS = ('id', 'name', 'state', 'project_id', 'source_site',
                     'dest_site', 'dest_host', 'servers', 'images',
                     'progress', 'rounds', 'rate', 'eta_seconds',
                     'cutover', 'cutover_approved', 'allowed_actions',
                     'last_error', 'shipments', 'convergence', 'created_at',
                     'updated_at')
LIST_COLUMNS = ('id', 'name', 'state', 'servers', 'progress', 'updated_at')
DONE = ('READY_FOR_CUTOVER', 'COMPLETED', 'CLEANED')
AUTOMATIC_DONE = ('COMPLETED', 'CLEANED')
BAD_END = ('FAILED', 'ABORTED')
# Nova's RBD naming: a server's root disk, a Cinder volume.
NOVA_DISK = 'vms/%s_disk'
CINDER_VOLUME = 'volumes/volume-%s'


class DeleteCommand(command.Command):
    """Delete each named resource; report every failure, not only the first.

    A subclass names its ``collection`` (the client's attribute, as the
    API's path) and ``noun``.
    """

    collection = None
    noun = None

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        parser.add_argument('idents', metavar='<%s>' % self.noun, nargs='+',
                            help='id or name')
        return parser

    def take_action(self, args):
        collection = getattr(self.app.client_manager.fedex, self.collection)
        failed = []
        for ident in args.idents:
            try:
                collection.delete(ident)
            except fedex_exc.ClientException as e:
                failed.append(str(e))
        if failed:
            raise exceptions.CommandError('; '.join(failed))


class Column(cliff_columns.FormattableColumn):
    """A value as the API typed it, shown as ``text`` in a table.

    cliff's formatters ask each cell: a table or ``-f value`` prints
    :meth:`human_readable`, ``-f json`` and ``-f yaml`` write
    :meth:`machine_readable` (numbers stay numbers, lists lists).
    """

    def __init__(self, value, text):
        super().__init__(value)
        self._text = text

    def human_readable(self):
        return self._text

    def machine_readable(self):
        return self._value


def list_column(items):
    """A list, comma-separated in a table."""
    items = list(items or [])
    return Column(items, ','.join(str(i) for i in items))


def _percent(m):
    p = m.get('progress') or {}
    if p.get('percent') is None:
        return '-'
    return '%.1f%% of %d bytes' % (p['percent'], p.get('bytes_total') or 0)


def progress_column(m):
    """percent, bytes_done and bytes_total; "41.0% of N bytes" in a table."""
    p = m.get('progress') or {}
    return Column({k: p.get(k) for k in ('percent', 'bytes_done',
                                         'bytes_total')}, _percent(m))


def events_column(events):
    """Events as the API gave them; a line "<created_at> <message>" each."""
    events = list(events or [])
    return Column(events, '\n'.join('%s %s' % (e['created_at'], e['message'])
                                    for e in events))


def event_row(e, columns):
    """An event's row; its details (a JSON object) typed for ``-f json``."""
    flat = dict(e)
    details = e.get('details')
    flat['details'] = Column(details, json.dumps(details, sort_keys=True)
                             if details else '')
    return tuple(flat.get(c) for c in columns)


def migration_row(m, columns=MIGRATION_COLUMNS):
    """A flat row; names of sites instead of ids when the API gave them.

    Lists and the progress are :class:`Column` cells: typed for ``-f
    json``, as before in a table.
    """
    p = m.get('progress') or {}
    flat = dict(m)
    shipments = m.get('shipments') or []
    flat.update({
        'servers': list_column(s['server_id'] for s in m.get('servers', [])),
        # A list counts a migration's images, a show lists them.
        'images': list_column(v['source_image'] for v in m['volumes'])
        if 'volumes' in m else m.get('image_count'),
        'progress': progress_column(m),
        'rounds': p.get('rounds', m.get('rounds')),
        'rate': p.get('rate'), 'eta_seconds': p.get('eta_seconds'),
        'cutover': (m.get('options') or {}).get('cutover'),
        'allowed_actions': list_column(m.get('allowed_actions')),
        'shipments': Column(
            [{'name': s['name'], 'state': s['state']} for s in shipments],
            ','.join('%s(%s)' % (s['name'], s['state'])
                     for s in shipments)),
        'source_site': m.get('source_site_id'),
        'dest_site': m.get('dest_site_id'),
        'convergence': convergence_column(m.get('servers', [])),
    })
    return tuple(flat.get(c) for c in columns)


def convergence_column(servers):
    """Each server's measured dirty rate and the verdict on its memory copy.

    Typed for ``-f json`` ({server: verdict}); in a table one line per
    measured server.
    """
    found = {s['server_id']: s['convergence'] for s in servers
             if s.get('convergence')}
    lines = []
    for sid, v in sorted(found.items()):
        f = v.get('forecast') or {}
        line = '%s: dirty %.1f MiB/s, link %.1f MiB/s, ' % (
            sid, (v.get('measured') or {}).get('dirty_rate', 0) / 2.0 ** 20,
            (v.get('link_rate') or 0) / 2.0 ** 20)
        if v.get('means'):
            line += '%s, copy %.1f s, pause %.2f s' % (
                v['means'], f.get('copy_seconds') or 0,
                f.get('pause_seconds') or 0)
        else:
            line += 'refused: %s' % v.get('reason')
        lines.append(line)
    return Column(found, '\n'.join(lines))


def progress_line(m):
    p = m.get('progress') or {}
    parts = ['%s %s' % (m['id'][:8], m['state']), _percent(m)]
    if p.get('rate'):
        parts.append('%.1f MB/s' % (p['rate'] / 1e6))
    if p.get('eta_seconds'):
        parts.append('ETA %ds' % p['eta_seconds'])
    if p.get('rounds'):
        parts.append('round %d' % p['rounds'])
    return ' | '.join(parts)


def add_wait_args(parser, help):
    """``--wait`` (``help`` says what it follows) and ``--wait-interval``."""
    parser.add_argument('--wait', action='store_true', help=help)
    add_wait_interval(parser)


def add_wait_interval(parser):
    # Hidden: the seconds between two looks, for the tests.
    parser.add_argument('--wait-interval', type=float, default=2.0,
                        metavar='<seconds>', help=argparse.SUPPRESS)


def waited(args, follow, client, resource):
    """``resource`` followed with ``follow`` if ``--wait``, else as is."""
    if args.wait:
        return follow(client, resource['id'], args.wait_interval)
    return resource


def poll(noun, get, ident, render, done, interval, out, clock):
    """Print ``render(get(ident))`` when it changes, until ``done``.

    ``done`` may raise for a bad end. Ctrl-C stops following only: the
    migration or wave goes on. Returns the last one seen.
    """
    last = None
    try:
        while True:
            item = get(ident)
            text = render(item)
            if text != last:
                print(text, file=out, flush=True)
                last = text
            if done(item):
                return item
            clock.sleep(interval)
    except KeyboardInterrupt:
        print('stopped following %s %s; it goes on (openstack fedex %s '
              'show %s)' % (noun, ident, noun, ident), file=out, flush=True)
        return get(ident)


def _migration_done(m):
    automatic = (m.get('options') or {}).get('cutover') == 'automatic'
    if m['state'] in (AUTOMATIC_DONE if automatic else DONE):
        return True
    if m['state'] in BAD_END:
        raise exceptions.CommandError(
            'migration %s is %s: %s' % (m['id'], m['state'],
                                        m.get('last_error') or
                                        'see its events'))
    return False


def follow(client, ident, interval=2.0, out=sys.stderr, clock=time):
    """Print progress until the migration is ready for its cutover.

    Or until it is done when the cutover is automatic. Ctrl-C stops
    following only: the migration goes on. Returns the last migration seen.
    """
    return poll('migration', client.migrations.get, ident, progress_line,
                _migration_done, interval, out, clock)


def _site_of_zone(client, zone, what):
    sites = client.sites.list()
    for s in sites:
        if s.get('availability_zone') == zone or s['name'] == zone:
            return s['name']
    raise exceptions.CommandError(
        '%s is in availability zone %s, which no fedex site has (sites: %s);'
        ' give --source-site/--site' % (what, zone, ', '.join(
            '%s (zone %s)' % (s['name'], s.get('availability_zone'))
            for s in sites) or 'none'))


def nova_facts(compute, server_ref):
    """The server as the cutover needs it; refuses what it cannot move."""
    server = compute.find_server(server_ref, ignore_missing=False)
    reasons = []
    if server.status != 'ACTIVE':
        reasons.append('server %s is %s, not ACTIVE' % (server.id,
                                                        server.status))
    if server.task_state:
        reasons.append('server %s is busy (%s)' % (server.id,
                                                   server.task_state))
    return server, reasons


def migration_request(client, compute, servers, images=None,
                      source_site=None, dest_site=None, dest_host=None,
                      name=None, options=None):
    """The POST /v1/migrations body for ``servers``.

    The body is the keyword arguments of ``client.migrations.create``.
    Images come from ``images`` ({server: [POOL/IMAGE]}) or from Nova (the
    root disk and the attached volumes); the source site from the server's
    availability zone, the destination from ``dest_host``'s.
    """
    images = images or {}
    body_servers, reasons, zone = [], [], None
    for ref in servers:
        vols = images.get(ref)
        server_id = ref
        if vols is None or source_site is None:
            server, why = nova_facts(compute, ref)
            reasons += why
            server_id = server.id
            zone = zone or server.availability_zone
            if vols is None:
                # The volume ids: Cinder marks and moves those volumes.
                vols = [{'source_image': NOVA_DISK % server.id,
                         'kind': 'disk'}] + [
                    {'source_image': CINDER_VOLUME % v['id'],
                     'volume_id': v['id'], 'kind': 'volume'}
                    for v in server.attached_volumes or []]
        body_servers.append({'server_id': server_id, 'volumes': vols})
    if reasons:
        raise exceptions.CommandError('cannot migrate: ' + '; '.join(reasons))
    if source_site is None:
        source_site = _site_of_zone(client, zone, 'the server')
    if dest_site is None:
        if not dest_host:
            raise exceptions.CommandError('give --site or --host')
        hosts = [s for s in compute.services(binary='nova-compute')
                 if s.host == dest_host]
        if not hosts:
            raise exceptions.CommandError('no nova-compute on host %s'
                                          % dest_host)
        dest_site = _site_of_zone(client, hosts[0].availability_zone,
                                  'host %s' % dest_host)
    body = {'servers': body_servers, 'source_site': source_site,
            'dest_site': dest_site}
    if dest_host:
        body['dest_host'] = dest_host
    if name:
        body['name'] = name
    if options:
        body['options'] = options
    return body
