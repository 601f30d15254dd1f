"""Build fedex-api from its configuration (see :mod:`.wsgi`).

``/healthcheck`` is oslo.middleware's healthcheck, in front of the API's
stack: a load balancer asks it without a token (``[healthcheck]`` options;
``backends = disable_by_file`` takes a fedex-api out of rotation by a
file). Then oslo.middleware's body size limit (``[oslo_middleware]
max_request_body_size``): a larger body is refused with 413 before anything
reads it.
"""

import os

from oslo_config import cfg
from oslo_log import log as logging
from oslo_middleware import healthcheck
from oslo_middleware import sizelimit
import webob.dec

from fedex_manager.api import app as app_mod
from fedex_manager.api import errors
from fedex_manager.api import opts as api_opts
from fedex_manager.conductor import jobboard
from fedex_manager.db import api as db
from fedex_manager import opts as manager_opts
from fedex_manager import policy

CONFIG_ENV = 'FEDEX_API_CONFIG'
DEFAULT_CONFIG = '/etc/fedex/fedex-api.conf'
HEALTHCHECK_PATH = '/healthcheck'
LOG = logging.getLogger(__name__)


class HealthcheckMount(object):
    """``/healthcheck`` to oslo.middleware's healthcheck, the rest to ``app``.

    Outside the API's stack (request id, auth, faults): the answer says
    only whether this process serves requests, and needs no token.
    """

    def __init__(self, app, conf):
        self.app = app
        # NOTE: mounted as an app (its paste app_factory does the same):
        # it answers every request it is given, whatever the path.
        self.healthcheck = healthcheck.Healthcheck(None, conf)

    def __call__(self, environ, start_response):
        if environ.get('PATH_INFO', '').rstrip('/') == HEALTHCHECK_PATH:
            return self.healthcheck(environ, start_response)
        return self.app(environ, start_response)


class BodySizeLimit(sizelimit.RequestBodySizeLimiter):
    """oslo.middleware's limit; its 413 in the API's error format.

    It refuses a Content-Length over the limit at once, and a body without
    one (chunked) when a handler reads past the limit.
    """

    @webob.dec.wsgify
    def __call__(self, req):
        resp = req.get_response(super().__call__)
        if resp.status_int != 413:
            return resp
        return errors.response(
            413, ['the body is larger than %d bytes ([oslo_middleware] '
                  'max_request_body_size)'
                  % self._conf_get('max_request_body_size')],
            'fedex.request_entity_too_large')


def build_app(conf):
    """The WSGI application of fedex-api for ``conf`` (already parsed)."""
    return HealthcheckMount(BodySizeLimit(app_mod.deploy(conf), conf), conf)


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
    return build_app(conf)
