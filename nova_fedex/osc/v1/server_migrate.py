"""``openstack server migrate --live-migration --fedex [--host H | --site S]``.

Replaces OSC's built-in ``server migrate`` with a subclass: without
``--fedex`` it is the built-in command, untouched. With ``--fedex`` it
creates a fedex migration of the server instead of asking Nova to copy its
disks over the WAN; the cutover itself is a Nova live migration the manager
starts when the destination is in sync.
"""

import argparse

from openstackclient.compute.v2 import server as osc_server
from osc_lib import exceptions

from nova_fedex.osc.v1 import common


class FedexMigrateServer(osc_server.MigrateServer):
    __doc__ = osc_server.MigrateServer.__doc__

    def get_parser(self, prog_name):
        parser = super().get_parser(prog_name)
        group = parser.add_argument_group(
            'Migration over FedEx',
            'Seed the disks by courier and catch up over the WAN (needs '
            '--live-migration).')
        group.add_argument('--fedex', action='store_true',
                           help='Migrate over FedEx to another site.')
        group.add_argument('--site', metavar='<site>',
                           help='Destination site (with --fedex; else '
                                'found from --host).')
        group.add_argument('--source-site', metavar='<site>',
                           help=argparse.SUPPRESS)
        group.add_argument('--fedex-image', action='append', default=[],
                           metavar='<pool/image>', help=argparse.SUPPRESS)
        group.add_argument('--cutover', choices=['automatic', 'approved'],
                           help='With --fedex: cut over when ready, or wait '
                                'for approval (default).')
        # --wait is the built-in command's.
        common.add_wait_interval(group)
        return parser

    def take_action(self, parsed_args):
        if not parsed_args.fedex:
            if parsed_args.site or parsed_args.cutover:
                raise exceptions.CommandError(
                    '--site and --cutover go with --fedex')
            return super().take_action(parsed_args)
        if not parsed_args.live_migration:
            raise exceptions.CommandError(
                '--fedex moves a running server: add --live-migration')
        if bool(parsed_args.site) == bool(parsed_args.host):
            raise exceptions.CommandError('--fedex needs --host or --site')
        client = self.app.client_manager.fedex
        images = None
        if parsed_args.fedex_image:
            images = {parsed_args.server: parsed_args.fedex_image}
        options = {'cutover': parsed_args.cutover} if parsed_args.cutover \
            else None
        body = common.migration_request(
            client, self.app.client_manager.compute, [parsed_args.server],
            images=images, source_site=parsed_args.source_site,
            dest_site=parsed_args.site, dest_host=parsed_args.host,
            options=options)
        m = client.migrations.create(**body)
        print('fedex migration %s created (%s)' % (m['id'], m['state']),
              file=self.app.stdout)
        if parsed_args.wait:
            m = common.follow(client, m['id'], parsed_args.wait_interval)
            print(common.progress_line(m), file=self.app.stdout)
