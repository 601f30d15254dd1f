"""``fedex-sandbox``: the local two-site Ceph environment.

    fedex-sandbox up        start (or create) site-a and site-b, wait for health
                            (and MariaDB, RabbitMQ, ZooKeeper); --openstack:
                            also the two-site OpenStack mini-cloud
    fedex-sandbox status    health and daemons of each site
    fedex-sandbox env       shell exports of each site's conf and keyring
    fedex-sandbox down      stop the daemons we started (data is kept)
    fedex-sandbox destroy   down, then remove all state
    fedex-sandbox wan-up [--rate-mbit N] [--delay-ms N]   the emulated WAN
    fedex-sandbox wan-down
    fedex-sandbox demo      move a writing VM's disks from site-a to site-b
"""

import json
import shlex
import sys

from oslo_config import cfg
from oslo_log import log as logging

from lsrp import exception
from lsrp.sandbox import demo as demo_mod
from lsrp.sandbox import opts
from lsrp.sandbox import sandbox as sandbox_mod
from lsrp.sandbox import wan

CONF = cfg.CONF
LOG = logging.getLogger(__name__)


UP_RESULTS = {'healthy': 'already healthy',
              'started': 'daemons restarted, healthy',
              'waited': 'healthy',
              'created': 'created, healthy'}


def do_up(sb):
    sites = {s.name for s in sb.sites}
    for name, action in sb.up(openstack=CONF.command.openstack).items():
        print('%s: %s' % (name, UP_RESULTS[action] if name in sites
                          else action))
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
    for name, stopped in sb.down().items():
        print('%s: %s' % (name, ', '.join('%s (pid %d)' % x for x in stopped)
                          if stopped else 'nothing was running'))
    return 0


def do_destroy(sb):
    wan.Wan(sb.run_dir, sb.wan_number(0)).down()
    sb.destroy()
    print('removed %s' % sb.root)
    return 0


def do_wan_up(sb):
    args = CONF.command
    link = wan.Wan(sb.run_dir, sb.wan_number(0))
    host, port = link.up(args.rate_mbit, args.delay_ms, args.port)
    print('WAN: %d Mbit/s, %g ms one way; sources connect to %s:%d, which '
          'forwards to the destination terminal at %s:%d' % (
              args.rate_mbit, args.delay_ms, host, port, link.root_addr,
              port))
    return 0


def do_demo(sb):
    args = CONF.command
    do_up(sb)
    demo = demo_mod.Demo(sb, disk_mib=args.disk_mib,
                         write_rate=int(args.write_rate_mib * (1 << 20)),
                         rate_mbit=args.rate_mbit, delay_ms=args.delay_ms,
                         threshold_mib=args.threshold_mib)
    try:
        summary = demo.run()
    finally:
        if not args.keep:
            demo.cleanup()
    print(json.dumps(summary))
    return 0 if summary['destination_equals_source'] else 3


def do_wan_down(sb):
    wan.Wan(sb.run_dir, sb.wan_number(0)).down()
    print('WAN removed')
    return 0


COMMANDS = {'up': do_up, 'status': do_status, 'env': do_env,
            'down': do_down, 'destroy': do_destroy, 'wan-up': do_wan_up,
            'wan-down': do_wan_down, 'demo': do_demo}


def add_command_parsers(subparsers):
    for name, fn in COMMANDS.items():
        parser = subparsers.add_parser(name, help=fn.__doc__ or name)
        if name == 'demo':
            parser.add_argument('--disk-mib', type=int, default=256)
            parser.add_argument('--write-rate-mib', type=float, default=1,
                                help='MiB/s the VM writes during the move.')
            parser.add_argument('--rate-mbit', type=int, default=100)
            parser.add_argument('--delay-ms', type=float, default=10)
            parser.add_argument('--threshold-mib', type=float, default=2)
            parser.add_argument('--keep', action='store_true',
                                help='Keep the demo images and devices.')
        if name == 'up':
            parser.add_argument('--openstack', action='store_true',
                                help='Also bring up the mini-cloud: a '
                                     'two-site OpenStack on both sites.')
        if name == 'wan-up':
            parser.add_argument('--rate-mbit', type=int, default=100)
            parser.add_argument('--delay-ms', type=float, default=0)
            parser.add_argument('--port', type=int, default=15500)


def main(argv=None):
    logging.register_options(CONF)
    # stdout carries results (JSON with --progress json): logs go to stderr.
    CONF.set_default('use_stderr', True)
    CONF.register_cli_opt(cfg.SubCommandOpt(
        'command', title='Commands', handler=add_command_parsers,
        help='What to do with the sandbox.'))
    # The sandbox options are command-line options: --sandbox-dir etc.
    CONF.register_cli_opts(opts.sandbox_opts, group='sandbox')
    CONF(sys.argv[1:] if argv is None else argv, project='fedex',
         prog='fedex-sandbox', default_config_files=[])
    logging.setup(CONF, 'fedex-sandbox')
    sb = sandbox_mod.Sandbox.from_conf(CONF)
    try:
        return COMMANDS[CONF.command.name](sb)
    except exception.FedexException as e:
        print('fedex-sandbox %s: error: %s' % (CONF.command.name, e),
              file=sys.stderr)
        return 2


if __name__ == '__main__':
    sys.exit(main())
