"""HTTP errors become fedexclient exceptions with fedex-api's reasons."""

import requests

from fedexclient import exceptions
from fedexclient import http
from tests.unit.fedexclient import base


def _errors(status, *details):
    return {'errors': [{'status': status, 'code': 'fedex.x',
                        'title': 'T', 'detail': d} for d in details]}


class TestErrors(base.TestCase):

    def test_every_reason_of_a_refusal(self):
        self.requests.post(
            base.API + '/migrations', status_code=409,
            json=_errors(409, 'dest_site: no site nowhere', 'vm1 is busy'),
            headers={'X-OpenStack-Request-Id': 'req-1'})
        e = self.assertRaises(exceptions.Conflict,
                              self.client.migrations.create, 'nowhere',
                              servers=['vm1'])
        self.assertEqual(409, e.status)
        self.assertEqual(['dest_site: no site nowhere', 'vm1 is busy'],
                         e.details)
        self.assertEqual(['fedex.x', 'fedex.x'], e.codes)
        self.assertEqual('req-1', e.request_id)
        self.assertEqual('fedex-api: HTTP 409: dest_site: no site nowhere; '
                         'vm1 is busy', str(e))
        self.assertEqual('HTTP 409: dest_site: no site nowhere; vm1 is busy',
                         e.summary)

    def test_one_class_per_status(self):
        for status, cls in ((400, exceptions.BadRequest),
                            (401, exceptions.Unauthorized),
                            (403, exceptions.Forbidden),
                            (404, exceptions.NotFound),
                            (405, exceptions.MethodNotAllowed),
                            (409, exceptions.Conflict),
                            (415, exceptions.UnsupportedMediaType),
                            (500, exceptions.ServerError),
                            (502, exceptions.ServerError),
                            (503, exceptions.ServiceUnavailable),
                            (418, exceptions.HttpError)):
            self.requests.get(base.API + '/sites', status_code=status,
                              json=_errors(status, 'why'))
            e = self.assertRaises(cls, self.client.sites.list)
            self.assertIsInstance(e, exceptions.ClientException)
            self.assertEqual((status, ['why']), (e.status, e.details))

    def test_a_body_that_is_not_json(self):
        self.requests.get(base.API + '/sites', status_code=503,
                          text='down for maintenance ' + 'x' * 500)
        e = self.assertRaises(exceptions.ServiceUnavailable,
                              self.client.sites.list)
        self.assertEqual(exceptions.TEXT_LIMIT, len(e.details[0]))
        self.assertTrue(str(e).startswith(
            'fedex-api: HTTP 503: down for maintenance x'))

    def test_no_body_gives_the_reason(self):
        self.requests.get(base.API + '/sites', status_code=502,
                          reason='Bad Gateway')
        e = self.assertRaises(exceptions.ServerError, self.client.sites.list)
        self.assertEqual([], e.details)
        self.assertEqual('fedex-api: HTTP 502: Bad Gateway', str(e))

    def test_unreachable(self):
        self.requests.get(base.API + '/sites',
                          exc=requests.exceptions.ConnectionError('refused'))
        e = self.assertRaises(exceptions.CommunicationError,
                              self.client.sites.list)
        self.assertIn('Unable to establish connection', str(e))
        self.assertNotIsInstance(e, exceptions.HttpError)

    def test_success_that_is_not_json(self):
        self.requests.get(base.API + '/sites', text='<html>')
        e = self.assertRaises(exceptions.InvalidResponse,
                              self.client.sites.list)
        self.assertIn('GET /v1/sites: HTTP 200', str(e))

    def test_no_content(self):
        self.requests.delete(base.API + '/plans/p1', status_code=204)
        self.assertIsNone(self.client.plans.delete('p1'))


class TestQuery(base.TestCase):

    def test_none_and_false_are_not_asked(self):
        self.assertEqual({'all_projects': 'true', 'limit': 5, 'state': 'X'},
                         http.query({'all_projects': True, 'limit': 5,
                                     'state': 'X', 'marker': None,
                                     'server': False}))
        self.assertEqual({}, http.query(None))
