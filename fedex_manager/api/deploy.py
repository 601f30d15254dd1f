"""Build fedex-api from its configuration (see :mod:`.wsgi`)."""

import os

from oslo_config import cfg
from oslo_log import log as logging

from fedex_manager.api import app as app_mod
from fedex_manager.api import opts as api_opts
from fedex_manager.conductor import jobboard
from fedex_manager.db import api as db
from fedex_manager import opts as manager_opts
from fedex_manager import policy

CONFIG_ENV = 'FEDEX_API_CONFIG'
DEFAULT_CONFIG = '/etc/fedex/fedex-api.conf'
LOG = logging.getLogger(__name__)


def init_application(conf=cfg.CONF, config_files=None):
    """Parse the configuration, set up logging, DB and policy; the app."""
    if config_files is None:
        config_files = [p for p in os.environ.get(
            CONFIG_ENV, DEFAULT_CONFIG).split(':') if p]
    api_opts.register_opts(conf)
    manager_opts.register_opts(conf)
    db.register_opts(conf)
    logging.register_options(conf)
    conf([], project='fedex', prog='fedex-api',
         default_config_files=config_files)
    logging.setup(conf, 'fedex-api')
    # The same default as fedex-manage: the manager's SQLite file.
    db.configure(conf.database.connection or 'sqlite:///%s/manager.sqlite'
                 % conf.manager.state_path)
    policy.reset()
    policy.init(conf)
    if conf.api.post_jobs:
        # NOTE: per worker (uwsgi --lazy-apps): ZooKeeper's client threads
        # would not survive a fork.
        jobboard.install_poster(conf)
    LOG.info('fedex-api ready (auth %s)', conf.api.auth_strategy)
    return app_mod.deploy(conf)
