"""fedex-api fuzzed in process: bad input at every door (issue 25).

Hypothesis sends malformed, oversized and mistyped requests to every route
of :data:`fedex_manager.api.app.ROUTES` (iterated: a new route is fuzzed
too) through the application uwsgi serves
(:func:`fedex_manager.api.deploy.build_app`: body size limit, request id,
auth context, faults, router) on SQLite, as an admin and as members of two
projects. Whatever it sends:

* no answer is a 5xx;
* every 4xx is the API-WG JSON error, a sentence per problem; a body field
  that breaks the schema is named;
* a refused request changes nothing in the database (the audit events of
  refused carrier events excepted: they are recorded on purpose);
* no request takes more than :data:`SLOW` seconds of CPU.

Each example starts from the same database (two sites, their terminals,
devices, a migration, a shipment, a plan). The budget and the seed are
fixed for CI; ``FEDEX_FUZZ_EXAMPLES=3000 tox -e py3 --
tests.unit.fedex_manager.api.test_fuzz`` runs more examples per test.
"""

import contextlib
import copy
import json
import os
import sqlite3
import time
import urllib.parse

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
from oslo_config import cfg
import webob

from fedex_manager.api import app as app_mod
from fedex_manager.api import deploy
from fedex_manager.db import api as db
from fedex_manager.db import models
from fedex_manager import states
from tests.unit.fedex_manager.api import base

# Per test: about 15 s for the module here (2 busy cores).
EXAMPLES = int(os.environ.get('FEDEX_FUZZ_EXAMPLES') or 600)
FUZZ = settings(derandomize=True, database=None, deadline=None,
                max_examples=EXAMPLES,
                suppress_health_check=[HealthCheck.too_slow,
                                       HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much,
                                       HealthCheck.large_base_example])
# CPU seconds one request may take (a pathological regex or loop).
SLOW = 2.0
ADMIN, MEMBER = 'admin,member,reader', 'member,reader'
# Admins twice as often: most routes with a body are theirs.
CALLERS = [(ADMIN, 'p1'), (ADMIN, 'p1'), (MEMBER, 'p1'), (MEMBER, 'p2')]
BODY_METHODS = ('POST', 'PUT', 'PATCH')
# A valid body per route (ids of the fixture as {placeholders}): the fuzz
# breaks one field of it at a time. A new route with a body needs one.
BODIES = {
    ('POST', '/v1/migrations'): {
        'name': 'w1', 'servers': ['vm7', {'server_id': 'vm8', 'volumes': [
            'vms/vm8_disk']}], 'source_site': 'site-a', 'dest_site': 'site-b',
        'options': {'rate_cap': 1, 'cutover_window': {
            'start': '01:00', 'end': '05:00'}}},
    ('PATCH', '/v1/migrations/{migration_id}'): {
        'name': 'n', 'rate_cap': 5, 'downtime_budget': 3},
    ('POST', '/v1/migrations/{migration_id}/action'): {
        'abort': {'reason': 'why'}},
    ('POST', '/v1/shipments/{shipment_id}/events'): {
        'event': 'handed_to_carrier', 'tracking_number': '7946 1',
        'location': 'dock', 'occurred_at': '2026-01-02T03:04:05Z',
        'seq': 1, 'devices_missing': [], 'details': {'by': 'x'}},
    ('POST', '/v1/devices'): {'serial': 'SN-9', 'capacity_bytes': 1 << 30,
                              'terminal': 'term-a', 'slot': 4,
                              'path': '/dev/sdz'},
    ('POST', '/v1/devices/{device_id}/return'): {'reason': 'why'},
    ('POST', '/v1/devices/{device_id}/custody'): {
        'holder': 'alice', 'location': 'dock',
        'occurred_at': '2026-01-02T03:04:05+01:00', 'message': 'm'},
    ('POST', '/v1/terminals'): {'name': 'term-c', 'site': 'site-a',
                                'rpc_topic': 't', 'lsrp_address': 'h:1',
                                'capacity_bytes': 1, 'slots': 2},
    ('PUT', '/v1/terminals/{terminal_id}/health'): {
        'state': 'UP', 'info': {'slots': 2}},
    ('POST', '/v1/sites'): {'name': 'site-c', 'availability_zone': 'az-c',
                            'aggregate': 'ag', 'ceph_conf': '/etc/c.conf',
                            'ceph_keyring': '/etc/c.keyring',
                            'ceph_client': 'admin'},
    ('POST', '/v1/plans'): {'name': 'p', 'vms': [{'size': '50GB',
                                                  'count': 10}],
                            'wan_bandwidth': '44.76Mbit/s',
                            'transit_time': '12h'},
    ('POST', '/v1/events'): {'migration': '{migration_id}', 'message': 'm',
                             'kind': 'note', 'details': {}},
    ('POST', '/v1/migrations/{migration_id}/cutover-events'): {
        'event': 'migrating', 'host': 'h1', 'details': {'dest': 'h2'}},
    ('POST', '/v1/waves'): {
        'name': 'rack-9', 'servers': ['vm5', {'server_id': 'vm6',
                                              'volumes': ['vms/vm6_disk']}],
        'source_site': 'site-a', 'dest_site': 'site-b',
        'options': {'max_parallel_cutovers': 1}},
    ('POST', '/v1/waves/{wave_id}/action'): {'cutover': {}},
}
# More valid bodies of a route that takes several kinds.
MORE_BODIES = {
    ('POST', '/v1/plans'): [{'name': 'f', 'migration': {
        'servers': ['vm7'], 'source_site': 'site-a', 'dest_site': 'site-b'},
        'dirty_rate': '1MB/s', 'write_rate': '100KB/s'}],
}
QUERY_PARAMS = ['limit', 'marker', 'sort_key', 'sort_dir', 'state',
                'project', 'all_projects', 'name', 'server', 'events_limit',
                'migration', 'shipment', 'device', 'type', 'since', 'until',
                'terminal', 'home_terminal', 'site', 'kind',
                'tracking_number']


def _nested(depth, leaf=1):
    for i in range(depth):
        leaf = [leaf] if i % 2 else {'a': leaf}
    return leaf


def _long(spec):
    char, n = spec
    return char * n


def _quoted(text, most=300):
    return urllib.parse.quote(text.encode('utf-8', 'surrogatepass')[:most],
                              safe='')


# Strings: any unicode (control characters, lone surrogates) and the
# lengths around every maxLength of the schemas (built, not listed: the
# strategies' reprs stay short in a failure's report).
TEXT = st.one_of(
    st.text(st.characters(codec=None), max_size=20),
    st.sampled_from(['', ' ', '\x00', 'a\nb', '\u202e', '\ud800x',
                     '\U0001f4e6', '../..']),
    st.sampled_from([('x', 65), ('x', 129), ('x', 256), ('y', 513),
                     ('z', 1025), ('\u00e9', 4097), ('w', 70000)]).map(_long))
NUMBERS = st.one_of(
    st.integers(), st.floats(),
    st.sampled_from([-1, 0, 1.0, 1e400, 2 ** 31, 2 ** 63, -2 ** 63 - 1,
                     10 ** 40, float('nan')]))
SCALARS = st.one_of(st.none(), st.booleans(), NUMBERS, TEXT)
JSON = st.one_of(
    st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) |
                 st.dictionaries(TEXT, inner, max_size=3), max_leaves=8),
    st.integers(30, 600).map(_nested))
RAW = st.one_of(
    st.binary(max_size=40),
    st.sampled_from([b'', b'{', b'{"a":}', b'\xff\xfe{}', b'\xef\xbb\xbf{}',
                     b'null', b'NaN', b'{"name": "\\ud800"}', b'{} {}',
                     b'{"a": 1, "a": 2}']),
    st.sampled_from([(b'[', 50000), (b'{"a":', 5000), (b'9', 5000),
                     (b' ', 1 << 20)]).map(_long))
CONTENT_TYPES = st.one_of(
    st.just('application/json'), st.just('application/json'),
    st.just('application/json'),
    st.sampled_from(['application/json; charset=utf-8', 'APPLICATION/JSON',
                     'text/plain', '', 'application/x-www-form-urlencoded',
                     'multipart/form-data; boundary=x', 'application/json;;',
                     'application/json-patch+json', '\u00e9/\u00e9']))
QUERY_VALUES = st.one_of(
    st.sampled_from(['-1', '0', '1', '1' * 40, 'abc', '', '1e3', '%205',
                     'true', 'maybe', 'asc', 'desc', 'name', 'id', 'colour',
                     'REQUESTED', 'FLYING', 'seed', '2026-01-01',
                     '2026-01-01T00:00:00%2B05:00', 'yesterday', '%FF',
                     '%00', '%ED%A0%80', 'site-a', 'term-a', 'SN-0',
                     'a,b,']),
    TEXT.map(lambda t: _quoted(t, 200)))
NASTY_IDS = st.one_of(
    st.sampled_from(['%FF', '%ED%A0%80', '%00', '%2F', '%25', '..', '%20',
                     '0' * 32, '-1', '%C3%A9']),
    TEXT.map(_quoted).filter(bool))


def _not_json(constant):
    raise ValueError('%s in the answer: not JSON' % constant)


def _paths(value, prefix=()):
    """Every place in a JSON document: a tuple of keys and indexes."""
    yield prefix
    items = value.items() if isinstance(value, dict) else (
        enumerate(value) if isinstance(value, list) else ())
    for k, v in items:
        yield from _paths(v, prefix + (k,))


@st.composite
def broken(draw, seed):
    """``seed`` with one place replaced, dropped, or a field added there."""
    body = copy.deepcopy(seed)
    path = draw(st.sampled_from(list(_paths(body))))
    how = draw(st.sampled_from(['replace', 'drop', 'add']))
    if not path:
        return draw(JSON), path
    parent = body
    for k in path[:-1]:
        parent = parent[k]
    if how == 'drop':
        del parent[path[-1]]
    elif how == 'add' and isinstance(parent, dict):
        key = draw(TEXT)
        parent[key] = draw(JSON)
        path = path[:-1] + (key,)
    else:
        parent[path[-1]] = draw(JSON)
    return body, path


@contextlib.contextmanager
def _sqlite():
    """The sqlite3 connection under the engine's pool, checked out."""
    conn = db.get_engine().raw_connection()
    try:
        yield conn.driver_connection
    finally:
        conn.close()


class FuzzTestCase(base.APITestCase):
    """The fixture, a snapshot of it, and the invariants of every answer."""

    def setUp(self):
        super().setUp()
        self.app = deploy.build_app(cfg.CONF)
        # No ceph_conf: the preflight of a migration would connect to
        # the cluster (the cutover plan answers 409 without it).
        for site in ('site-a', 'site-b'):
            self.request('POST', '/v1/sites', {'name': site}, status=201)
            self.request('POST', '/v1/terminals', {
                'name': 'term-' + site[-1], 'site': site, 'slots': 2},
                status=201)
            self.request('PUT', '/v1/terminals/term-%s/health' % site[-1],
                         {'state': 'UP'}, status=200)
        for i in range(3):
            self.request('POST', '/v1/devices', {
                'serial': 'SN-%d' % i, 'capacity_bytes': 1 << 30,
                'terminal': 'term-a', 'slot': i}, status=201)
        m = self.request('POST', '/v1/migrations', {
            'servers': ['vm1'], 'source_site': 'site-a',
            'dest_site': 'site-b'}, roles=MEMBER, status=201)
        s = db.create(self.ctx, 'shipment', {
            'name': 'ship-1', 'state': states.S_SEALED, 'carrier': 'manual'})
        plan = self.request('POST', '/v1/plans', BODIES[
            ('POST', '/v1/plans')], roles=MEMBER, status=201)
        w = self.request('POST', '/v1/waves', {
            'servers': ['vm2', 'vm3'], 'source_site': 'site-a',
            'dest_site': 'site-b'}, roles=MEMBER, status=201)
        self.ids = {'migration_id': m.json['migration']['id'],
                    'shipment_id': s['id'], 'device_id': 'SN-0',
                    'terminal_id': 'term-a', 'site_id': 'site-a',
                    'server_id': 'vm1', 'plan_id': plan.json['plan']['id'],
                    'wave_id': w.json['wave']['id']}
        self.saved = sqlite3.connect(':memory:')
        self.addCleanup(self.saved.close)
        with _sqlite() as conn:
            conn.backup(self.saved)

    def restore(self):
        with _sqlite() as conn:
            self.saved.backup(conn)

    def snapshot(self):
        """Every row of every table; refused carrier events left out."""
        out = {}
        with _sqlite() as conn:
            for table in sorted(models.Base.metadata.tables):
                rows = conn.execute('SELECT * FROM %s' % table).fetchall()
                out[table] = sorted(repr(r) for r in rows if not (
                    table == 'events' and '"refused": true' in repr(r)))
        return out

    def request(self, method, path, body=None, roles=ADMIN, project='p1',
                raw=None, content_type='application/json', status=None):
        req = webob.Request.blank(path, method=method)
        req.headers.update({'X-Project-Id': project, 'X-User-Id': 'u1',
                            'X-Roles': roles})
        if body is not None or raw is not None:
            req.body = raw if raw is not None else json.dumps(body).encode()
            req.environ['CONTENT_TYPE'] = content_type
        # The request's own CPU time, not the wall clock: CI runs other
        # test groups beside this one on two cores.
        start = time.thread_time()
        resp = req.get_response(self.app)
        took = time.thread_time() - start
        what = '%s %s as %s of %s (%r...): %d %s' % (
            method, path[:200], roles, project, (req.body or b'')[:200],
            resp.status_int, resp.text[:500])
        self.assertLess(took, SLOW, 'slow: %.2f s: %s' % (took, what))
        self.assertLess(resp.status_int, 500, what)
        if status is not None:
            self.assertEqual(status, resp.status_int, what)
        if resp.content_type == 'application/json' and method != 'HEAD':
            # RFC 8259: no NaN nor Infinity (Python would read them).
            try:
                json.loads(resp.body, parse_constant=_not_json)
            except ValueError as e:
                self.fail('%s: %s' % (e, what))
        # (A HEAD's answer has no body.)
        if resp.status_int >= 400 and method != 'HEAD':
            self.assertEqual('application/json', resp.content_type, what)
            errors = resp.json['errors']
            self.assertTrue(errors, what)
            for e in errors:
                self.assertEqual(resp.status_int, e['status'], what)
                self.assertTrue(e['code'].startswith('fedex.'), what)
                self.assertIsInstance(e['detail'], str, what)
                self.assertGreater(len(e['detail']), 10, what)
                self.assertNotIn('Traceback', e['detail'], what)
        return resp

    def send(self, method, path, **kw):
        """A request from the fixture's state; its response.

        If it was refused, nothing changed.
        """
        self.restore()
        before = self.snapshot()
        resp = self.request(method, path, **kw)
        if resp.status_int >= 400:
            self.assertEqual(before, self.snapshot(),
                             '%s %s changed the database but answered %d %s'
                             % (method, path[:200], resp.status_int,
                                resp.text[:500]))
        return resp

    def url(self, template, ids=None):
        """``template`` with its {placeholders} replaced by ids."""
        for k, v in dict(self.ids, **(ids or {})).items():
            template = template.replace('{%s}' % k, v)
        return template


def _body_routes():
    return [(m, p) for p, methods in sorted(app_mod.ROUTES.items())
            for m in sorted(methods) if m in BODY_METHODS]


class TestFuzzBodies(FuzzTestCase):

    def test_every_route_with_a_body_has_a_valid_one_here(self):
        self.assertEqual(set(), set(_body_routes()) - set(BODIES))

    @FUZZ
    @given(data=st.data())
    def test_broken_bodies(self, data):
        method, path = data.draw(st.sampled_from(_body_routes()))
        roles, project = data.draw(st.sampled_from(CALLERS))
        seed = json.loads(self.url(json.dumps(data.draw(st.sampled_from(
            [BODIES.get((method, path), {})] +
            MORE_BODIES.get((method, path), []))))))
        kind = data.draw(st.sampled_from(['broken', 'json', 'raw']))
        field = None
        if kind == 'broken':
            body, field = data.draw(broken(seed))
            raw = json.dumps(body).encode('utf-8', 'surrogatepass')
        elif kind == 'json':
            raw = json.dumps(data.draw(JSON)).encode('utf-8',
                                                     'surrogatepass')
        else:
            raw = data.draw(RAW)
        resp = self.send(method, self.url(path), raw=raw, roles=roles,
                         project=project,
                         content_type=data.draw(CONTENT_TYPES))
        if resp.status_int == 400 and field and \
                resp.json['errors'][0]['code'] == 'fedex.invalid_body':
            # As it is, or as a repr, the start of a long one.
            names = [n for k in field if isinstance(k, str)
                     for n in (k[:30], repr(k)[1:31])]
            details = ' '.join(e['detail'] for e in resp.json['errors'])
            self.assertTrue(not names or any(n in details for n in names),
                            '%s: %s' % (field, details))


class TestFuzzQueries(FuzzTestCase):

    @FUZZ
    @given(data=st.data())
    def test_bad_queries(self, data):
        path = data.draw(st.sampled_from(sorted(
            p for p, methods in app_mod.ROUTES.items() if 'GET' in methods)))
        roles, project = data.draw(st.sampled_from(CALLERS))
        params = data.draw(st.lists(st.tuples(
            st.one_of(st.sampled_from(QUERY_PARAMS), TEXT.map(_quoted)),
            QUERY_VALUES), max_size=4))
        query = '&'.join('%s=%s' % kv for kv in params)
        self.send('GET', self.url(path) + '?' + query, roles=roles,
                  project=project)


class TestFuzzPathsAndMethods(FuzzTestCase):

    @FUZZ
    @given(data=st.data())
    def test_bad_ids_and_methods(self, data):
        path = data.draw(st.sampled_from(sorted(app_mod.ROUTES)))
        method = data.draw(st.sampled_from(
            ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS',
             'TRACE', 'FOO']))
        roles, project = data.draw(st.sampled_from(CALLERS))
        ids = {k: data.draw(NASTY_IDS) for k in self.ids}
        url = self.url(path, ids) + data.draw(st.sampled_from(
            ['', '/', '//', '/extra', '/%FF', '?', '?limit=1']))
        body = BODIES.get((method, path))
        self.send(method, url, roles=roles, project=project,
                  body=json.loads(self.url(json.dumps(body), ids))
                  if body else None)
