"""How the manager's daemons run: oslo.log, and oslo.service on threads.

``fedex-conductor`` and ``lsrp-agent`` alike: the launcher's master
process (cotyledon) runs the service in a worker process and starts it
again if it dies. ``SIGTERM`` stops it (``Service.stop``); ``SIGHUP``
mutates the mutable options and starts the worker again with them;
``SIGINT`` ends it at once.
"""

import sys

from oslo_log import log as logging
from oslo_service import backend as service_backend
from oslo_service import service

from lsrp import exception

# Library lines that tell a daemon's log nothing new at every start
# (oslo.service's backend and multiprocessing start method); shown with
# --debug. Their warnings and errors are kept.
QUIET_LOG_LEVELS = ['oslo_service=WARN']


def setup_logging(conf, prog):
    """``logging.setup`` with oslo.log's levels and ``QUIET_LOG_LEVELS``.

    A ``default_log_levels`` set in a configuration file wins.
    """
    if not conf.debug:
        conf.set_default('default_log_levels',
                         logging.get_default_log_levels() + QUIET_LOG_LEVELS)
    logging.setup(conf, prog)


def launch(prog, svc, conf):
    """Run ``svc`` (an oslo.service ``Service``) until it is stopped.

    :returns: the exit code: 0, or 2 after an error (one line on stderr).
    """
    service_backend.init_backend(service_backend.BackendType.THREADING)
    try:
        service.launch(conf, svc, restart_method='mutate').wait()
    except exception.FedexException as e:
        print('%s: error: %s' % (prog, e), file=sys.stderr)
        return 2
    return 0
