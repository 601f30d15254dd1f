"""The API module (on fedexclient) against a real HTTP server on
127.0.0.1: the user's token goes out, the JSON comes back, errors become
FedexAPIError with fedex-api's reasons and advice."""

import http.server
import json
import threading
import unittest
from unittest import mock

from fedex_dashboard.api import fedex


class _Handler(http.server.BaseHTTPRequestHandler):
    seen = []

    def _reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self.seen.append(('GET', self.path, self.headers['X-Auth-Token'],
                          None))
        self._reply(200, {'migrations': [{'id': 'm-1'}]})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers[
            'Content-Length'])))
        self.seen.append(('POST', self.path, self.headers['X-Auth-Token'],
                          body))
        self._reply(409, {'errors': [
            {'status': 409, 'code': 'fedex.InvalidTransition',
             'detail': 'migration m-1 is CATCHING_UP: cutover is not '
                       'allowed'}]})

    def log_message(self, *args):
        pass


class APIModuleTests(unittest.TestCase):

    def setUp(self):
        _Handler.seen = []
        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                      _Handler)
        threading.Thread(target=self.server.serve_forever,
                         daemon=True).start()
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)
        url = 'http://127.0.0.1:%d/vm-shipping' % self.server.server_port
        patcher = mock.patch.object(fedex.base, 'url_for', return_value=url)
        patcher.start()
        self.addCleanup(patcher.stop)
        self.request = mock.Mock()
        self.request.user.token.id = 'user-token'

    def test_list_with_the_users_token(self):
        out = fedex.migration_list(self.request, all_projects=True,
                                   state='CATCHING_UP')
        self.assertEqual([{'id': 'm-1'}], out)
        method, path, token, _body = _Handler.seen[0]
        self.assertEqual('GET', method)
        self.assertTrue(path.startswith('/vm-shipping/v1/migrations?'))
        self.assertIn('all_projects=true', path)
        self.assertIn('state=CATCHING_UP', path)
        self.assertEqual('user-token', token)

    def test_refused_action_names_the_state_and_what_to_do(self):
        with self.assertRaises(fedex.FedexAPIError) as ctx:
            fedex.migration_action(self.request, 'm-1', 'approve_cutover')
        self.assertEqual(
            ('POST', '/vm-shipping/v1/migrations/m-1/action', 'user-token',
             {'cutover': {}}), _Handler.seen[0])
        self.assertEqual(409, ctx.exception.status)
        self.assertEqual(
            'Unable to approve cutover migration m-1: migration m-1 is '
            'CATCHING_UP: cutover is not allowed. Its state does not allow '
            'this now: reload the page to see its current state.',
            str(ctx.exception))

    def test_empty_fields_are_left_out(self):
        self.assertRaises(fedex.FedexAPIError, fedex.migration_create,
                          self.request, ['s1'], 'site-a', 'site-b', name='',
                          options={})
        self.assertEqual({'servers': ['s1'], 'source_site': 'site-a',
                          'dest_site': 'site-b'}, _Handler.seen[0][3])
        self.assertRaises(fedex.FedexAPIError, fedex.shipment_event,
                          self.request, 'sh-1', 'delivered', location='')
        self.assertEqual(('/vm-shipping/v1/shipments/sh-1/events',
                          {'event': 'delivered'}), (_Handler.seen[1][1],
                                                    _Handler.seen[1][3]))

    def test_unreachable_api_says_so(self):
        self.server.shutdown()
        self.server.server_close()
        with self.assertRaises(fedex.FedexAPIError) as ctx:
            fedex.site_list(self.request)
        self.assertIsNone(ctx.exception.status)
        self.assertIn('Unable to list sites', str(ctx.exception))
        self.assertIn('fedex-api did not answer', str(ctx.exception))
