"""``fedex-sandbox``: the local two-site Ceph environment.

    fedex-sandbox up        start (or create) site-a and site-b, the shared
                            services, a conductor and a terminal agent per
                            site; wait for health; --openstack: also the
                            two-site OpenStack mini-cloud
    fedex-sandbox status    health and daemons of each site
    fedex-sandbox env       shell exports of each site's conf and keyring
    fedex-sandbox down      stop the daemons we started (data is kept)
    fedex-sandbox destroy   down, then remove all state
    fedex-sandbox wan-up [--rate-mbit N] [--delay-ms N]   the emulated WAN
    fedex-sandbox wan-down
    fedex-sandbox demo      with the OpenStack part installed: bring up the
                            mini-cloud and move a real Nova server with an
                            attached Cinder volume from site-a to site-b
                            (openstack server migrate --live-migration
                            --fedex); --ceph-only: move a writing VM's
                            disks through the shipment manager alone
                            (--direct: the engine's steps one by one)
"""

import json
import os
import shlex
import sys

from oslo_config import cfg
from oslo_log import log as logging

from fedex_sandbox import demo as demo_mod
from fedex_sandbox import layers as layers_mod
from fedex_sandbox import opts
from fedex_sandbox import sandbox as sandbox_mod
from fedex_sandbox import wan
from lsrp import cmdline
from lsrp import exception

CONF = cfg.CONF
LOG = logging.getLogger(__name__)
USAGE = ('Two real, independent Ceph clusters on this machine, all state in '
         '--sandbox-dir (or $FEDEX_SANDBOX_DIR), ports from --sandbox-base_port '
         '(or $FEDEX_SANDBOX_BASE_PORT).')


UP_RESULTS = {'healthy': 'already healthy',
              'started': 'daemons restarted, healthy',
              'waited': 'healthy',
              'created': 'created, healthy'}


def do_up(sb, openstack=None):
    sites = {s.name for s in sb.sites}
    if openstack is None:
        openstack = getattr(CONF.command, 'openstack', False)
    for name, action in sb.up(openstack=openstack).items():
        print('%s: %s' % (name, UP_RESULTS[action] if name in sites
                          else action))
    # What runs on top (the shipment manager: a conductor and one terminal
    # agent per site), registered by entry point.
    for _, layer in layers_mod.layers(sb):
        for name, action in layer.up().items():
            print('%s: %s' % (name, action))
    return 0


def do_status(sb):
    healthy = True
    for entry in sb.status():
        print('%s: %s  fsid=%s' % (entry['site'], entry['health'],
                                   entry['fsid'] or '-'))
        print('  conf: %s' % entry['conf'])
        for check, text in sorted(entry['checks'].items()):
            print('  ! %s: %s' % (check, text))
        for d in entry['daemons']:
            where = ('pid %d' % d['pid']) if d['pid'] else d['state'].upper()
            print('  %-6s %-8s %s' % (d['name'], where, 'log: ' + d['log']))
        healthy &= entry['healthy']
    print('services:')
    for svc in sb.shared.status():
        print_service(svc)
        healthy &= svc['state'] == 'running'
    for name, layer in layers_mod.layers(sb):
        if layer.configured():
            print('%s:' % name)
            for svc in layer.status():
                print_service(svc)
                healthy &= svc['state'] == 'running'
        else:
            print('%s: not set up (fedex-sandbox up starts it)' % name)
    cloud = sb.cloud()
    if cloud.exists():
        print('openstack: (clouds.yaml: %s)' % cloud.clouds_yaml)
        for svc in cloud.status():
            print_service(svc)
            healthy &= svc['state'] == 'running'
    return 0 if healthy else 1


def print_service(svc):
    where = ('pid %d' % svc['pid']) if svc['pid'] else svc['state'].upper()
    port = (':%d' % svc['port']) if svc['port'] else ''
    rss = ('%d MiB' % svc['rss_mib']) if svc['rss_mib'] is not None else ''
    print('  %-16s %-10s %-7s %8s  log: %s' % (svc['name'], where, port, rss,
                                               svc['log']))


def do_env(sb):
    print('export %s=%s' % (opts.DIR_ENV, shlex.quote(sb.root)))
    print('export %s=%d' % (opts.BASE_PORT_ENV, sb.base_port))
    print('export FEDEX_PKI_DIR=%s' % shlex.quote(sb.pki))
    for s in sb.sites:
        for key, value in s.env():
            print('export %s=%s' % (key, shlex.quote(value)))
        # lsrp --config-file $FEDEX_SITE_A_LSRP_CONF ...: that terminal's
        # name, TLS files, port, Ceph site, state and key directories.
        print('export FEDEX_%s_LSRP_CONF=%s' % (
            s.name.upper().replace('-', '_'),
            shlex.quote(sb.terminal_conf(s.name))))
    shared = sb.shared
    for key, value in (('FEDEX_TRANSPORT_URL', shared.transport_url()),
                       ('FEDEX_DATABASE_URL', shared.database_url('fedex')),
                       ('FEDEX_ZOOKEEPER_HOSTS', shared.zookeeper_hosts())):
        print('export %s=%s' % (key, shlex.quote(value)))
    cloud = sb.cloud()
    if cloud.exists():
        for key, value in sorted(cloud.client_env().items()):
            print('export %s=%s' % (key, shlex.quote(value)))
    return 0


def do_down(sb):
    # Top down: what runs on the sites stops before them.
    stopped = {name: layer.down() for name, layer in layers_mod.layers(sb)}
    stopped.update(sb.down())
    for name, stopped in stopped.items():
        print('%s: %s' % (name, ', '.join('%s (pid %d)' % x for x in stopped)
                          if stopped else 'nothing was running'))
    return 0


def do_destroy(sb):
    for _, layer in layers_mod.layers(sb):
        layer.down()
    wan.Wan(sb.run_dir, sb.wan_number(0)).down()
    sb.destroy()
    print('removed %s' % sb.root)
    return 0


def do_wan_up(sb):
    args = CONF.command
    link = wan.Wan(sb.run_dir, sb.wan_number(0))
    host, port = link.up(args.rate_mbit, args.delay_ms,
                         args.port or sb.terminal_port('site-b'))
    print('WAN: %d Mbit/s, %g ms one way; sources connect to %s:%d, which '
          'forwards to the destination terminal at %s:%d' % (
              args.rate_mbit, args.delay_ms, host, port, link.root_addr,
              port))
    return 0


def cloud_installed():
    """True when tools/install.sh --openstack made the cloud's virtualenv."""
    from fedex_sandbox.services import cloud as cloud_mod
    return os.path.exists(os.path.join(cloud_mod.default_venv(), 'bin',
                                       'nova-compute'))


def do_demo(sb):
    args = CONF.command
    ceph_only = args.ceph_only or args.direct
    if not ceph_only and not cloud_installed():
        print('fedex-sandbox demo: the OpenStack part is not installed '
              '(tools/install.sh --openstack): the Ceph-only demo',
              file=sys.stderr)
        ceph_only = True
    # The Ceph-only demo runs in a sandbox with the mini-cloud too (its
    # images have no server: no Nova at the cutover).
    do_up(sb, openstack=not ceph_only)
    if not ceph_only:
        demo = layers_mod.demo_class('cloud')(sb)
    elif args.direct:
        demo = demo_mod.Demo(sb, disk_mib=args.disk_mib,
                             write_rate=int(args.write_rate_mib * (1 << 20)),
                             rate_mbit=args.rate_mbit,
                             delay_ms=args.delay_ms,
                             threshold_mib=args.threshold_mib)
    else:
        # Through the shipment manager: one request, the conductor and the
        # terminal agents do the steps.
        demo = layers_mod.demo_class('manager')(
            sb, disk_mib=args.disk_mib,
            write_rate=int(args.write_rate_mib * (1 << 20)),
            threshold_mib=args.threshold_mib)
    try:
        summary = demo.run()
    finally:
        if not args.keep:
            demo.cleanup()
    print(json.dumps(summary))
    return 0 if summary.get('ok', summary['destination_equals_source']) \
        else 3


def do_wan_down(sb):
    wan.Wan(sb.run_dir, sb.wan_number(0)).down()
    print('WAN removed')
    return 0


COMMANDS = {'up': do_up, 'status': do_status, 'env': do_env,
            'down': do_down, 'destroy': do_destroy, 'wan-up': do_wan_up,
            'wan-down': do_wan_down, 'demo': do_demo}
COMMAND_LIST = [
    cmdline.Command('up', 'Start (or create) site-a and site-b and wait '
                    'until both are healthy.', 'fedex-sandbox up'),
    cmdline.Command('status', 'Health, daemons and logs of each site; exit '
                    'code 1 if one is unhealthy.', 'fedex-sandbox status'),
    cmdline.Command('env', 'Shell exports of each site\'s conf, keyring and '
                    'terminal config.', 'eval "$(fedex-sandbox env)"'),
    cmdline.Command('down', 'Stop the daemons the sandbox started; the data '
                    'is kept.', 'fedex-sandbox down'),
    cmdline.Command('destroy', 'Stop everything and remove all state of the '
                    'sandbox.', 'fedex-sandbox destroy'),
    cmdline.Command('wan-up', 'Emulate the WAN between the terminals: a '
                    'rate-capped, delayed link.',
                    'fedex-sandbox wan-up --rate-mbit 100 --delay-ms 10'),
    cmdline.Command('wan-down', 'Remove the emulated WAN.',
                    'fedex-sandbox wan-down'),
    cmdline.Command('demo', 'Move a real Nova server with an attached '
                    'volume from site-a to site-b on the mini-cloud '
                    '(--ceph-only: a writing VM\'s disks, no OpenStack).',
                    'fedex-sandbox demo'),
]


def _wan_flags(parser, delay_ms):
    parser.add_argument('--rate-mbit', type=int, default=100,
                        help='Rate of the emulated WAN in Mbit/s '
                        '(default: %(default)s).')
    parser.add_argument('--delay-ms', type=float, default=delay_ms,
                        help='One-way delay of the emulated WAN in ms '
                        '(default: %(default)s).')


def add_command_parsers(subparsers):
    for command in COMMAND_LIST:
        parser = cmdline.add_command(subparsers, 'fedex-sandbox', command)
        if command.name == 'demo':
            parser.add_argument('--disk-mib', type=int, default=256,
                                help='Size of the VM\'s first disk in MiB; '
                                'the second has half (default: %(default)s).')
            parser.add_argument('--write-rate-mib', type=float, default=1,
                                help='MiB/s the VM writes during the move '
                                '(default: %(default)s).')
            _wan_flags(parser, delay_ms=10)
            parser.add_argument('--threshold-mib', type=float, default=2,
                                help='Catch-up stops when the next round '
                                'would send at most this many MiB '
                                '(default: %(default)s).')
            parser.add_argument('--keep', action='store_true',
                                help='Keep the demo images and devices.')
            parser.add_argument('--ceph-only', action='store_true',
                                help='No OpenStack: the shipment manager '
                                'moves a writing "VM" (two images); the '
                                'options above are for this demo.')
            parser.add_argument('--direct', action='store_true',
                                help='Call the engine\'s steps directly '
                                'instead of going through the manager.')
        if command.name == 'up':
            parser.add_argument('--openstack', action='store_true',
                                help='Also bring up the mini-cloud: a '
                                     'two-site OpenStack on both sites.')
        if command.name == 'wan-up':
            _wan_flags(parser, delay_ms=0)
            parser.add_argument('--port', type=int,
                                help='Port of the destination terminal the '
                                'link forwards to (default: the sandbox\'s '
                                'site-b terminal port, base port + %d).'
                                % sandbox_mod.TERMINAL_PORTS['site-b'])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    cmdline.register_logging(CONF, argv)
    # stdout carries results (JSON with --progress json): logs go to stderr.
    CONF.set_default('use_stderr', True)
    CONF.register_cli_opt(cmdline.subcommand_opt(add_command_parsers))
    # The sandbox options are command-line options: --sandbox-dir etc.
    CONF.register_cli_opts(opts.sandbox_opts, group='sandbox')
    CONF(cmdline.argv_for_oslo(argv), project='fedex', prog='fedex-sandbox',
         usage=cmdline.usage('fedex-sandbox', '[OPTIONS] COMMAND [ARGS]',
                             COMMAND_LIST, USAGE),
         default_config_files=[])
    # The sandbox's progress lines ("sandbox up in ..."); the manager's and
    # the engine's warnings (the demos run them in this process).
    cmdline.setup_logging(CONF, 'fedex-sandbox', [
        'fedex_sandbox=INFO', 'fedex_manager=WARN', 'lsrp=WARN'])
    sb = sandbox_mod.Sandbox.from_conf(CONF)
    try:
        return COMMANDS[CONF.command.name](sb)
    except exception.FedexException as e:
        print('fedex-sandbox %s: error: %s' % (CONF.command.name, e),
              file=sys.stderr)
        return 2


if __name__ == '__main__':
    sys.exit(main())
