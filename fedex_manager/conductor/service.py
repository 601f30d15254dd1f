"""The ``fedex-conductor`` service: its parts, started and stopped.

    fedex-conductor --config-file fedex.conf
"""

import os
import socket
import sys
import threading

from oslo_config import cfg
from oslo_log import log as logging
from oslo_service import backend as service_backend

from fedex_manager.cmd import launcher
from fedex_manager.conductor import endpoint
from fedex_manager.conductor import jobboard
from fedex_manager.conductor import notifications
from fedex_manager.conductor import periodics
from fedex_manager.db import api as db
from fedex_manager.flows import legacy
from fedex_manager import jobs
from fedex_manager import opts
from fedex_manager import rpc

CONF = cfg.CONF
LOG = logging.getLogger(__name__)


class Conductor(object):
    """The taskflow conductor, the terminals' RPC server, the sweeper.

    And, with Nova, the listener of its notifications of deleted servers.
    """

    def __init__(self, conf=CONF):
        self.conf = conf
        self.name = conf.conductor.name or 'conductor-%s-%d' % (
            socket.gethostname(), os.getpid())
        conf.set_override('name', self.name, group='conductor')

    def start(self):
        db.configure(self.conf.database.connection)
        # Jobs posted before the package's move name lsrp.manager's flows.
        legacy.install()
        self.backend = jobboard.persistence(self.conf)
        self.zk = jobboard.zk_client(self.conf)
        self.board = jobboard.jobboard(self.backend, client=self.zk,
                                       conf=self.conf)
        jobs.set_poster(jobboard.Poster(self.backend, self.board, self.zk,
                                        self.conf))
        # Every state change is also an oslo.messaging notification.
        notifier = rpc.Notifier(self.conf)
        db.on_transition(notifier.state)
        self.conductor = jobboard.OneRunConductor(
            self.zk, self.conf, self.name, self.board,
            persistence=self.backend, engine='serial',
            max_simultaneous_jobs=self.conf.conductor.max_jobs,
            # Between looks at the jobboard's list (kept fresh by ZooKeeper
            # watches, so a look costs nothing): a new phase's job waits
            # at most this long to be claimed.
            wait_timeout=0.2)
        self.rpc_server = rpc.server(
            [endpoint.ManagerEndpoint()], rpc.manager_topic(self.conf),
            self.name, self.conf)
        self.rpc_server.start()
        # Nova's notifications of deleted servers (with compute_driver
        # nova): their migrations aborted at once, not at the sweeper's
        # next look.
        self.nova_notifications = notifications.Listening(self.conf)
        self.nova_notifications.start()
        self.sweeper = periodics.Sweeper(self.board, self.zk, self.name)
        self.periodic_worker = periodics.worker(self.sweeper, self.conf)
        self.threads = [
            threading.Thread(target=self.conductor.run, daemon=True,
                             name='conductor'),
            threading.Thread(target=self.periodic_worker.start, daemon=True,
                             name='sweeper')]
        for t in self.threads:
            t.start()
        print('fedex-conductor %s: running (jobboard %s%s)' % (
            self.name, ','.join(self.conf.jobboard.hosts),
            self.conf.jobboard.path), flush=True)

    def stop(self):
        # No job starts after this; one running is not waited for.
        self.periodic_worker.stop()
        # Running engines are suspended and their jobs abandoned, not
        # consumed: another conductor takes them over.
        self.conductor.stop()
        self.conductor.wait(30)
        self.nova_notifications.stop()
        self.rpc_server.stop()
        self.rpc_server.wait()
        self.board.close()
        self.zk.stop()


def _service_class():
    from oslo_service import service

    class ConductorService(service.Service):

        def __init__(self):
            super().__init__()
            self.conductor = Conductor()

        def start(self):
            super().start()
            self.conductor.start()

        def stop(self, graceful=False):
            self.conductor.stop()
            super().stop(graceful)

    return service, ConductorService


def main(argv=None):
    logging.register_options(CONF)
    CONF.set_default('use_stderr', True)
    opts.register_opts(CONF)
    CONF(sys.argv[1:] if argv is None else argv, project='fedex',
         prog='fedex-conductor')
    launcher.setup_logging(CONF, 'fedex-conductor')
    if not CONF.database.connection:
        CONF.set_override('connection', 'sqlite:///%s/manager.sqlite'
                          % CONF.manager.state_path, group='database')
    service_backend.init_backend(service_backend.BackendType.THREADING)
    _service, cls = _service_class()
    return launcher.launch('fedex-conductor', cls(), CONF)


if __name__ == '__main__':
    sys.exit(main())
