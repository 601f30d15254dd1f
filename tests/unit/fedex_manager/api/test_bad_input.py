"""What test_fuzz found, one case each: bad input answered with a 4xx that
names the problem, and nothing written."""

import datetime
import io
import json
import os

from oslo_config import cfg
import webob

from fedex_manager.api import deploy
from fedex_manager.db import api as db
from fedex_manager import states
from tests.unit.fedex_manager.api import test_api

ADMIN = test_api.ADMIN
SERVICE = test_api.SERVICE


def _nested(depth):
    value = []
    for _ in range(depth):
        value = [value]
    return value


class TestBadInput(test_api.Fixture):

    def setUp(self):
        super().setUp()
        self.terminals()
        self.devices()
        self.m = self.create()

    def detail(self, method, path, body=None, status=400, **kw):
        resp = self.call(method, path, body, status=status, **kw)
        self.assertEqual('application/json', resp.content_type)
        return ' | '.join(self.errors(resp))

    def count(self, kind):
        return len(db.list_(self.ctx, kind))

    def test_path_and_query_not_utf8(self):
        self.assertIn('the path is not UTF-8', self.detail(
            'GET', '/v1/migrations/%FF'))
        # A lone surrogate, encoded: not UTF-8 either.
        self.assertIn('the path is not UTF-8', self.detail(
            'GET', '/v1/sites/%ED%A0%80'))
        self.assertIn('the query string is not UTF-8', self.detail(
            'GET', '/v1/migrations?name=%FF'))
        # Before authentication: the request cannot be read at all.
        self.assertIn('not UTF-8', self.detail(
            'GET', '/v1/migrations?state=%FF', project=None))

    def test_event_markers_are_ids(self):
        for marker, word in (('abc', 'is not an integer'),
                             (str(2 ** 64), 'is not an event id'),
                             ('-1', 'is not an event id')):
            self.assertIn('query parameter marker: ', self.detail(
                'GET', '/v1/events?marker=' + marker))
            self.assertIn(word, self.detail(
                'GET', '/v1/events?marker=' + marker))

    def test_times_are_checked_and_converted_to_utc(self):
        s = db.create(self.ctx, 'shipment', {
            'name': 'ship-1', 'state': states.S_SEALED, 'carrier': 'manual'})
        for path, body in (
                ('/v1/devices/SN-0/custody', {'holder': 'alice'}),
                ('/v1/shipments/%s/events' % s['id'], {'event': 'depart'})):
            for bad in ('not-a-time-at-all', '0001-01-01T00:00:00+05:00',
                        '1800-01-01T00:00:00'):
                events = self.count('event')
                self.assertIn('invalid body field occurred_at', self.detail(
                    'POST', path, dict(body, occurred_at=bad)))
                self.assertEqual(events, self.count('event'))
        d = self.call('POST', '/v1/devices/SN-0/custody', {
            'holder': 'alice', 'occurred_at': '2026-01-02T03:04:05+01:00'},
            status=201).json['device']
        said, = [e for e in d['events'] if e['kind'] == 'custody']
        self.assertEqual('2026-01-02T02:04:05Z', said['occurred_at'])

    def test_events_until_and_since_with_a_zone_page_backwards(self):
        for i in range(3):
            db.add_event(self.ctx, 'migration', self.m['id'], 'note',
                         'n%d' % i, migration_id=self.m['id'])
        first = db.events(self.ctx, {'migration_id': self.m['id']})[0]
        # The instant of the first event, two hours east of UTC.
        east = (db.utcfromiso(first['created_at']) + datetime.timedelta(
            hours=2)).isoformat() + '+02:00'
        path = '/v1/events?migration=%s&sort_dir=desc&limit=1' % self.m['id']
        got = self.call('GET', path + '&until=' + east.replace('+', '%2B'),
                        status=200).json['events']
        # Newer events (the three notes) are not on the page, and they did
        # not leave it empty: the bound is in the query, not after it.
        self.assertEqual(1, len(got))
        self.assertLessEqual(got[0]['id'], first['id'])
        self.assertIn('query parameter until', self.detail(
            'GET', '/v1/events?migration=%s&until=tomorrow' % self.m['id']))

    def test_json_that_cannot_be_kept(self):
        sites = self.count('site')
        for raw, word in (
                (b'{"name": "\\ud800"}', 'invalid body field name: '),
                (b'{"name": NaN}', 'NaN is not a JSON value'),
                (b'{"name": "x", "availability_zone": 1e400}',
                 'out of the range of a number'),
                (b'{"name": ' + b'9' * 5000 + b'}', 'more than 40 digits'),
                (b'[' * 100000, 'nested deeper than 32 levels'),
                (json.dumps({'name': 'x', 'ceph_conf': _nested(40)}).encode(),
                 'invalid body field ceph_conf: nested')):
            self.assertIn(word, self.detail('POST', '/v1/sites', raw=raw))
        self.assertEqual(sites, self.count('site'))

    def test_integers_out_of_their_columns(self):
        devices = self.count('device')
        body = {'serial': 'SN-9', 'terminal': 'term-a', 'capacity_bytes': 1}
        for field, value, word in (
                ('capacity_bytes', 2 ** 64, 'out of range'),
                ('slot', 2 ** 31, 'is greater than the maximum'),
                ('slot', 1.0, "is not of type 'integer'"),
                ('capacity_bytes', 1.5, "is not of type 'integer'")):
            self.assertIn('invalid body field %s: ' % field, self.detail(
                'POST', '/v1/devices', dict(body, **{field: value})))
            self.assertIn(word, self.detail(
                'POST', '/v1/devices', dict(body, **{field: value})))
        self.assertEqual(devices, self.count('device'))

    def test_names_images_and_serials_end_where_they_end(self):
        for path, body, field in (
                ('/v1/sites', {'name': 'site-c\n'}, 'name'),
                ('/v1/sites', {'name': 'site\x00c'}, 'name'),
                ('/v1/devices', {'serial': 'SN-9\n', 'terminal': 'term-a',
                                 'capacity_bytes': 1}, 'serial'),
                ('/v1/migrations', self.body(servers=[{
                    'server_id': 'vm3', 'volumes': ['vms/vm3_disk\n']}]),
                 'servers/0'),
                ('/v1/migrations', self.body(servers=[{
                    'server_id': 'vm3', 'volumes': ['vms/' + 'x' * 600]}]),
                 'servers/0'),
                ('/v1/migrations', self.body(pool_map={'vms': 'a/b'}),
                 'pool_map/vms: ')):
            self.assertIn('invalid body field %s' % field, self.detail(
                'POST', path, body))
        self.assertIn("'site-c\\n' is not a name without control",
                      self.detail('POST', '/v1/sites', {'name': 'site-c\n'}))
        self.assertEqual(1, self.count('migration'))

    def test_messages_say_which_fields_and_cut_long_values(self):
        path = '/v1/migrations/%s' % self.m['id']
        self.assertIn('give at least 1 of abort, cutover, reship, retry',
                      self.detail('POST', path + '/action', {}))
        self.assertIn('give at most 1 of abort', self.detail(
            'POST', path + '/action', {'abort': {}, 'retry': {}}))
        text = self.detail('POST', '/v1/sites', {'name': 'x' * 70000})
        self.assertIn('is too long', text)
        self.assertLess(len(text), 200)

    def test_media_type_in_any_case(self):
        self.call('POST', '/v1/sites', {'name': 'site-c'}, status=201,
                  content_type='Application/JSON')


class TestCutoverPlanOfASiteWithoutCeph(test_api.Fixture):

    def test_409_names_the_site_and_its_file(self):
        self.terminals()
        self.devices()
        self.create()
        site = db.get(self.ctx, 'site', 'site-b')
        resp = self.call('GET', '/v1/servers/vm1/cutover', roles=SERVICE,
                         status=409)
        self.assertIn('site site-b: registered without ceph_conf',
                      self.errors(resp)[0])
        conf = os.path.join(self.tmp, 'b.conf')
        for text, word in (('fsid = 1\n', 'File contains no section'),
                           ('[client]\nkeyring = k\n', 'no [global]')):
            with open(conf, 'w') as f:
                f.write(text)
            db.update(self.ctx, 'site', site['id'], {'ceph_conf': conf})
            detail = self.errors(self.call(
                'GET', '/v1/servers/vm1/cutover', roles=SERVICE,
                status=409))[0]
            self.assertIn('site site-b: cannot read the monitors of its '
                          'cluster from its ceph.conf %s' % conf, detail)
            self.assertIn(word, detail)


class TestBodySizeLimit(test_api.Fixture):
    """[oslo_middleware] max_request_body_size, in deploy.build_app."""

    def setUp(self):
        super().setUp()
        self.app = deploy.build_app(cfg.CONF)

    def post(self, body, chunked=False):
        req = webob.Request.blank('/v1/sites', method='POST')
        req.headers.update({'X-Project-Id': 'p1', 'X-Roles': ADMIN,
                            'Content-Type': 'application/json'})
        if chunked:
            req.body_file = io.BytesIO(body)
            req.environ.pop('CONTENT_LENGTH', None)
            req.environ['HTTP_TRANSFER_ENCODING'] = 'chunked'
        else:
            req.body = body
        return req.get_response(self.app)

    def test_413_over_the_limit(self):
        big = json.dumps({'name': 'site-c', 'aggregate': 'x' * (1 << 20)})
        for chunked in (False, True):
            resp = self.post(big.encode(), chunked=chunked)
            self.assertEqual(413, resp.status_int, resp.text)
            error, = resp.json['errors']
            self.assertEqual('fedex.request_entity_too_large', error['code'])
            self.assertEqual('the body is larger than 114688 bytes '
                             '([oslo_middleware] max_request_body_size)',
                             error['detail'])
        self.assertEqual(['site-a', 'site-b'], sorted(
            s['name'] for s in db.list_(self.ctx, 'site')))
        # Under the limit, chunked or not: served.
        self.assertEqual(201, self.post(b'{"name": "site-c"}').status_int)
        self.assertEqual(201, self.post(b'{"name": "site-d"}',
                                        chunked=True).status_int)

    def test_the_limit_is_configured(self):
        cfg.CONF.set_override('max_request_body_size', 100,
                              group='oslo_middleware')
        self.addCleanup(cfg.CONF.clear_override, 'max_request_body_size',
                        group='oslo_middleware')
        resp = self.post(json.dumps({'name': 'x' * 100}).encode())
        self.assertEqual(413, resp.status_int)
        self.assertIn('larger than 100 bytes', resp.json['errors'][0]['detail'])
        self.assertEqual(201, self.post(b'{"name": "site-c"}').status_int)
