"""fedex-api in process, on a fresh SQLite database, without Keystone.

The noauth middleware takes the roles and project from headers; the
functional tests do the same over HTTP with real Keystone tokens.
"""

import json

from oslo_config import cfg
from oslo_config import fixture as config_fixture
import webob

from fedex_manager.api import app as app_mod
from fedex_manager.api import opts as api_opts
from fedex_manager import policy
from tests.unit.fedex_manager import base


class APITestCase(base.DBTestCase):

    def setUp(self):
        super().setUp()
        conf = self.useFixture(config_fixture.Config(cfg.CONF)).conf
        api_opts.register_opts(conf)
        conf([], project='fedex', default_config_files=[])
        conf.set_override('auth_strategy', 'noauth', group='api')
        policy.reset()
        self.addCleanup(policy.reset)
        policy.init(conf)
        self.app = app_mod.deploy(conf)

    def call(self, method, path, body=None, roles='admin,member,reader',
             project='p1', user='u1', status=None, raw=None,
             content_type='application/json'):
        req = webob.Request.blank(path, method=method)
        if project is not None:
            req.headers['X-Project-Id'] = project
            req.headers['X-User-Id'] = user
            req.headers['X-Roles'] = roles
        if body is not None or raw is not None:
            req.body = raw if raw is not None else json.dumps(body).encode()
            req.content_type = content_type
        resp = req.get_response(self.app)
        if status is not None:
            self.assertEqual(status, resp.status_int, resp.text)
        return resp

    def errors(self, resp):
        return [e['detail'] for e in resp.json['errors']]
