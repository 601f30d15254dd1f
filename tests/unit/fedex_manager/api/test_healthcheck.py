"""``/healthcheck``: oslo.middleware's healthcheck in front of fedex-api."""

import os

import fixtures
from oslo_config import cfg
import webob

from fedex_manager.api import deploy
from fedex_manager import policy
from tests.unit.fedex_manager.api import base


def get(app, path, method='GET', **headers):
    req = webob.Request.blank(path, method=method)
    req.headers.update(headers)
    return req.get_response(app)


class TestHealthcheck(base.APITestCase):

    def test_answers_without_a_token_with_keystone_auth(self):
        # The real auth_token middleware: a request without a token is
        # refused by the API, not by the healthcheck.
        cfg.CONF.set_override('auth_strategy', 'keystone', group='api')
        self.addCleanup(cfg.CONF.clear_override, 'auth_strategy',
                        group='api')
        cfg.CONF.set_override('www_authenticate_uri',
                              'http://keystone.example/identity',
                              group='keystone_authtoken')
        self.addCleanup(cfg.CONF.clear_override, 'www_authenticate_uri',
                        group='keystone_authtoken')
        app = deploy.build_app(cfg.CONF)
        # No backend configured: 200, and no reason to give.
        self.assertEqual(200, get(app, '/healthcheck').status_int)
        self.assertEqual(200, get(app, '/healthcheck/').status_int)
        self.assertEqual(204, get(app, '/healthcheck', 'HEAD').status_int)
        self.assertEqual({'detailed': False, 'reasons': []}, get(
            app, '/healthcheck', Accept='application/json').json)
        self.assertEqual(401, get(app, '/v1/migrations').status_int)
        # The version documents are still served by the API.
        self.assertEqual(200, get(app, '/').status_int)

    def test_disabled_by_file_answers_503(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                            'fedex-api-disabled')
        cfg.CONF.set_override('backends', ['disable_by_file'],
                              group='healthcheck')
        self.addCleanup(cfg.CONF.clear_override, 'backends',
                        group='healthcheck')
        app = deploy.build_app(cfg.CONF)
        cfg.CONF.set_override('disable_by_file_path', path,
                              group='healthcheck')
        self.addCleanup(cfg.CONF.clear_override, 'disable_by_file_path',
                        group='healthcheck')
        resp = get(app, '/healthcheck')
        self.assertEqual((200, 'OK'), (resp.status_int, resp.text))
        open(path, 'w').close()
        resp = get(app, '/healthcheck')
        self.assertEqual((503, 'DISABLED BY FILE'),
                         (resp.status_int, resp.text))


class TestInitApplication(base.APITestCase):
    """What uwsgi loads (fedex_manager.api.wsgi) has the healthcheck."""

    def test_wsgi_application_from_its_config_file(self):
        conf_file = os.path.join(self.tmp, 'fedex-api.conf')
        with open(conf_file, 'w') as f:
            f.write('[api]\nauth_strategy = noauth\npost_jobs = false\n'
                    '[database]\nconnection = sqlite:///%s/manager.sqlite\n'
                    % self.tmp)
        # NOTE: oslo.log's setup would reconfigure this process's logging.
        self.useFixture(fixtures.MockPatch(
            'fedex_manager.api.deploy.logging.setup'))
        self.addCleanup(policy.reset)
        conf = cfg.ConfigOpts()
        app = deploy.init_application(conf, [conf_file])
        self.assertEqual(200, get(app, '/healthcheck').status_int)
        resp = get(app, '/v1/sites', **{'X-Project-Id': 'p1',
                                        'X-Roles': 'admin'})
        self.assertEqual((200, []), (resp.status_int, resp.json['sites']))
