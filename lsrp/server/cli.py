"""``lsrp-server``: the terminal daemon.

    lsrp-server --config-file /etc/lsrp/lsrp.conf

Serves LSRP over mutual TLS ([server] options) into the local cluster
([ceph]) for the shipments imported on this terminal ([shipment] state_dir),
and onto the devices of shipments declared here to be received
(``lsrp authorize --device``; keys in [shipment] key_dir).
Stops cleanly on SIGTERM: it stops accepting, rolls back rounds that did not
complete, and exits 0.
"""

import asyncio
import contextlib
import signal
import sys

from oslo_config import cfg
from oslo_log import log as logging

from lsrp import cmdline
from lsrp.device import keystore
from lsrp import exception
from lsrp import memory
from lsrp import opts
from lsrp.rbd import Cluster
from lsrp.server import service
from lsrp import tls

CONF = cfg.CONF
LOG = logging.getLogger(__name__)
USAGE = ('The terminal daemon: serves LSRP over mutual TLS into the local '
         'cluster and onto the devices of shipments declared here (lsrp '
         'authorize). Options come from /etc/lsrp/lsrp.conf (or '
         '--config-file), the flags below override them. Stops cleanly on '
         'SIGTERM. Example: lsrp-server --config-file /etc/lsrp/lsrp.conf '
         '--name terminal-site-b --server-host 10.0.0.2')


async def serve(conf):
    s, c, sh = conf.server, conf.ceph, conf.shipment
    context = tls.server_context(s.tls_ca, s.tls_cert, s.tls_key)
    with contextlib.ExitStack() as stack:
        cluster = None
        if s.rbd_sink:
            cluster = stack.enter_context(Cluster(
                c.conf_file, c.keyring, client=c.client_name,
                site=c.site_name, connect_timeout=c.connect_timeout,
                op_timeout=c.op_timeout, options={'rbd_cache': 'false'}))
        server = service.TerminalServer(
            s.name, cluster, sh.state_dir, context, s.host, s.port,
            frame_timeout=s.frame_timeout, resume_timeout=s.resume_timeout,
            key_store=keystore.FileKeyStore(sh.key_dir),
            device_options={'shard_size': sh.shard_size,
                            'zstd_level': sh.zstd_level,
                            'compression': sh.compression,
                            'lz4_acceleration': sh.lz4_acceleration,
                            'workers': sh.workers,
                            'checkpoint_bytes': sh.checkpoint_mib << 20})
        await server.start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        print('lsrp-server %s listening on %s:%d' % (s.name, s.host,
                                                     server.port),
              flush=True)
        await stop.wait()
        LOG.info('%s: stopping', s.name)
        await server.stop()


def main(argv=None):
    memory.tune()
    argv = sys.argv[1:] if argv is None else argv
    cmdline.register_logging(CONF, argv)
    CONF.set_default('use_stderr', True)
    # Settings lsrp takes too have lsrp's spelling (--ceph-conf, --tls-ca,
    # --name...); the others are --server-port, --shipment-state_dir...
    spelled = {(f.group, f.option) for f in cmdline.SETTING_FLAGS}
    for group, group_opts in (('server', opts.server_opts),
                              ('ceph', opts.ceph_opts),
                              ('shipment', opts.shipment_opts)):
        CONF.register_opts([o for o in group_opts
                            if (group, o.name) in spelled], group=group)
        # (oslo.config's --server-norbd_sink would say "The inverse of
        # --rbd_sink", a flag that does not exist: --devices-only instead.)
        cli = [o for o in group_opts if (group, o.name) not in spelled
               and group != 'ceph' and o.name != 'rbd_sink']
        CONF.register_cli_opts(cli, group=group)
        CONF.register_opts([o for o in group_opts if o not in cli
                            and (group, o.name) not in spelled], group=group)
    CONF.register_cli_opts(cmdline.setting_cli_opts(cmdline.SETTING_FLAGS))
    CONF.register_cli_opt(cfg.BoolOpt(
        'devices-only', dest='cli_devices_only', default=False,
        help='Write only the devices plugged into this terminal; no Ceph '
        'cluster is needed (sets [server] rbd_sink false).'))
    CONF(cmdline.argv_for_oslo(argv), project='lsrp', prog='lsrp-server',
         usage=cmdline.usage('lsrp-server', '[OPTIONS]', epilog=USAGE),
         default_config_files=cfg.find_config_files('lsrp'))
    cmdline.apply_cli_settings(CONF, cmdline.SETTING_FLAGS)
    if CONF.cli_devices_only:
        CONF.set_override('rbd_sink', False, group='server')
    logging.setup(CONF, 'lsrp-server')
    try:
        asyncio.run(serve(CONF))
    except exception.FedexException as e:
        print('lsrp-server: error: %s' % e, file=sys.stderr)
        return 2
    except OSError as e:
        print('lsrp-server: error: cannot listen on %s:%d: %s' % (
            CONF.server.host, CONF.server.port, e), file=sys.stderr)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main())
