"""``fedex-sandbox``: the local two-site Ceph environment.

    fedex-sandbox up        start (or create) site-a and site-b, the shared
                            services, a conductor and a terminal agent per
                            site; wait for health; --openstack: also the
                            two-site OpenStack mini-cloud;
                            --terminals-per-site N: N terminals per site
    fedex-sandbox status    health and daemons of each site
    fedex-sandbox env       shell exports of each site's conf and keyring
    fedex-sandbox down      stop the daemons we started (data is kept)
    fedex-sandbox destroy   down, then remove all state
    fedex-sandbox wan-up [--rate-mbit N] [--delay-ms N]   the emulated WAN
                            between the sites (or reshape it while it runs)
    fedex-sandbox wan-cut | wan-restore   the link down / up again
    fedex-sandbox wan-stats bytes over the link, per path
    fedex-sandbox wan-down
    fedex-sandbox demo      with the OpenStack part installed: bring up the
                            mini-cloud and move a real Nova server with an
                            attached Cinder volume from site-a to site-b
                            (openstack server migrate --live-migration
                            --fedex); --ceph-only: move a writing VM's
                            disks through the shipment manager alone
                            (--direct: the engine's steps one by one)
"""

import argparse
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
from fedex_sandbox.services import ports
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
    # What runs on top (the shipment manager: a conductor and terminal
    # agents at each site), registered by entry point.
    per_site = getattr(CONF.command, 'terminals_per_site', None)
    settings = {} if per_site is None else {'terminals_per_site': per_site}
    for _, layer in layers_mod.layers(sb):
        for name, action in layer.up(**settings).items():
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
    wan.SandboxWan(sb).down(keep_guard=False)
    sb.destroy()
    print('removed %s' % sb.root)
    return 0


def do_wan_up(sb):
    args = CONF.command
    link = wan.SandboxWan(sb)
    before = (link.settings() or {}).get('every_migration_to') or []
    every = args.every_migration_to
    if every is not None:
        every = [h for h in every.split(',') if h]
    done, rate, delay = link.up(args.rate_mbit, args.delay_ms, every)
    print('WAN %s: %g Mbit/s, %g ms one way (%s); faces: catch-up %s, '
          'final delta %s, compute host i %s' % (
              link.link.namespace, rate, delay, done, link.catchup_face(),
              link.final_delta_face(), link.host_face(0)[:-2] + '(10+i)'))
    if every is not None and sorted(every) != sorted(before):
        print('every live migration to %s crosses the link once '
              'fedex-sandbox up --openstack has restarted its nova-compute'
              % (', '.join(every) or 'no host'))
    if sb.cloud().exists() or link.link.running():
        print('terminals and computes reach the other site through it '
              '(after fedex-sandbox up for a sandbox that did not use it)')
    return 0


def do_wan_cut(sb):
    wan.SandboxWan(sb).link.cut()
    print('WAN cut: packets are lost until fedex-sandbox wan-restore')
    return 0


def do_wan_restore(sb):
    wan.SandboxWan(sb).link.restore()
    print('WAN restored')
    return 0


def do_wan_stats(sb):
    link = wan.SandboxWan(sb)
    if getattr(CONF.command, 'json', False):
        stats = link.stats()
        print(json.dumps({'by_path': wan.by_path(stats), 'relay': stats}))
        return 0
    for line in link.describe():
        print(line)
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
    wan.SandboxWan(sb).down()
    print('WAN removed; the mini-cloud\'s computes still name its faces: '
          'fedex-sandbox up --openstack brings it back (wan-cut for an '
          'outage)' if sb.cloud().exists() else 'WAN removed')
    return 0


COMMANDS = {'up': do_up, 'status': do_status, 'env': do_env,
            'down': do_down, 'destroy': do_destroy, 'wan-up': do_wan_up,
            'wan-down': do_wan_down, 'wan-cut': do_wan_cut,
            'wan-restore': do_wan_restore, 'wan-stats': do_wan_stats,
            'demo': do_demo}
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
    cmdline.Command('wan-up', 'Emulate the WAN between the sites: a '
                    'rate-capped, delayed link that carries the memory '
                    'copy, libvirt\'s control, the final delta and the '
                    'catch-up; on a running link, reshape it.',
                    'fedex-sandbox wan-up --rate-mbit 100 --delay-ms 20'),
    cmdline.Command('wan-cut', 'Cut the emulated WAN (its veth goes down): '
                    'connections stall, as in an outage.',
                    'fedex-sandbox wan-cut'),
    cmdline.Command('wan-restore', 'Bring a cut WAN back.',
                    'fedex-sandbox wan-restore'),
    cmdline.Command('wan-stats', 'Bytes over the emulated WAN per path '
                    '(memory, control, final delta, catch-up).',
                    'fedex-sandbox wan-stats'),
    cmdline.Command('wan-down', 'Remove the emulated WAN.',
                    'fedex-sandbox wan-down'),
    cmdline.Command('demo', 'Move a real Nova server with an attached '
                    'volume from site-a to site-b on the mini-cloud '
                    '(--ceph-only: a writing VM\'s disks, no OpenStack).',
                    'fedex-sandbox demo'),
]


def _wan_flags(parser, delay_ms, rate_mbit=100):
    parser.add_argument('--rate-mbit', type=int, default=rate_mbit,
                        help='Rate of the emulated WAN in Mbit/s '
                        '(default: %(default)s).')
    parser.add_argument('--delay-ms', type=float, default=delay_ms,
                        help='One-way delay of the emulated WAN in ms '
                        '(default: %(default)s).')


def do_tempest_conf(sb):
    """tempest.conf for the mini-cloud (fedex_sandbox/services/tempest_conf)."""
    from fedex_sandbox.services import tempest_conf
    path = CONF.command.path or os.path.join(sb.root, 'tempest', 'etc',
                                             'tempest.conf')
    print(tempest_conf.write(sb, path))
    return 0


def _tempest_conf_args(command, parser):
    if command.name == 'tempest-conf':
        parser.add_argument('path', nargs='?',
                            help='Where to write it (default: '
                            '<sandbox>/tempest/etc/tempest.conf).')


COMMANDS['tempest-conf'] = do_tempest_conf
COMMAND_LIST.append(cmdline.Command(
    'tempest-conf', 'Write tempest.conf for the mini-cloud (the fedex '
    'tempest plugin: tox -e tempest).',
    'fedex-sandbox tempest-conf ws/etc/tempest.conf'))


def _terminals_per_site(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= ports.MAX_TERMINALS_PER_SITE:
        raise argparse.ArgumentTypeError(
            '%r: a number of terminals from 1 to %d'
            % (text, ports.MAX_TERMINALS_PER_SITE))
    return value


def add_command_parsers(subparsers):
    for command in COMMAND_LIST:
        parser = cmdline.add_command(subparsers, 'fedex-sandbox', command)
        _tempest_conf_args(command, parser)
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
            parser.add_argument('--terminals-per-site', metavar='N',
                                type=_terminals_per_site,
                                help='Run N terminals (lsrp-server and '
                                'agent) at each site, remembered for the '
                                'later commands; the manager spreads '
                                'migrations over them (default: as last '
                                'asked, else 1; at most %d).'
                                % ports.MAX_TERMINALS_PER_SITE)
        if command.name == 'wan-up':
            # Unset: as last asked (run/wan.json), else 1000 Mbit/s, 1 ms.
            _wan_flags(parser, delay_ms=None, rate_mbit=None)
            parser.add_argument('--every-migration-to', metavar='HOSTS',
                                help='Comma-separated compute hosts whose '
                                'every incoming live migration crosses the '
                                'link, also from their own site (the '
                                'benchmarks\' reference); empty: none.')
        if command.name == 'wan-stats':
            parser.add_argument('--json', action='store_true',
                                help='The relay\'s counters as JSON.')


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
    except BrokenPipeError:
        return cmdline.stdout_closed()
    except exception.FedexException as e:
        print('fedex-sandbox %s: error: %s' % (CONF.command.name, e),
              file=sys.stderr)
        return 2


if __name__ == '__main__':
    sys.exit(main())
