#!/usr/bin/env python3
"""A simulated Nova for the scale benchmark: the compute API the manager
calls, and nova_fedex's side of the cutover.

    python tests/benchmarks/simulated_nova.py --port P --fedex-api URL
        [--time-scale 0.05] [--live-migration-seconds 20]

The manager with ``[conductor] compute_driver = nova`` talks to Nova over
HTTP only (:mod:`fedex_manager.nova`, :mod:`fedex_manager.nova_lock`):
``GET /servers/{id}`` (2.73: locked, locked_reason), ``POST
/servers/{id}/action`` with ``lock``, ``unlock`` or ``os-migrateLive``,
``GET /os-migrations?instance_uuid=`` and the instance actions (the
read-back of a cutover nobody ended). This server answers those for any
server id (servers exist once asked about), in memory.

A live migration then does what nova_fedex does from the source compute
(:mod:`nova_fedex.manager_client`): after ``--live-migration-seconds``
(times ``--time-scale``) it reads the server's cutover plan from fedex-api
(``GET /v1/servers/{id}/cutover``) and reports ``migrating``,
``paused_at_destination``, ``delta_applied``, ``resumed`` and
``completed`` (``POST /v1/migrations/{id}/cutover-events``), with the
server on the destination host at the end. fedex-api runs with
``auth_strategy = noauth``: the reports carry the service's roles as
headers.

Prints the number of requests it served and their kinds at SIGTERM.
"""

import argparse
import collections
import datetime
from http import server as http_server
import json
import random
import re
import signal
import sys
import threading
import time
import uuid

import requests

SERVICE_HEADERS = {'X-Roles': 'admin,service', 'X-Project-Id': 'service',
                   'X-User-Id': 'nova'}


def _now():
    return datetime.datetime.utcnow().replace(microsecond=0).isoformat()


class Nova(object):

    def __init__(self, fedex_api, scale, seconds, source_host):
        self.fedex_api = fedex_api.rstrip('/')
        self.scale, self.seconds = scale, seconds
        self.source_host = source_host
        self.lock = threading.Lock()
        self.servers = {}
        self.migrations = collections.defaultdict(list)
        self.counts = collections.Counter()
        self.errors = collections.Counter()
        self.http = threading.local()

    def server(self, sid):
        with self.lock:
            if sid not in self.servers:
                self.servers[sid] = {
                    'id': sid, 'name': sid, 'status': 'ACTIVE',
                    'locked': False, 'locked_reason': None,
                    'OS-EXT-SRV-ATTR:host': self.source_host,
                    'OS-EXT-STS:task_state': None}
            return self.servers[sid]

    def session(self):
        if not hasattr(self.http, 's'):
            self.http.s = requests.Session()
            self.http.s.headers.update(SERVICE_HEADERS)
        return self.http.s

    def live_migrate(self, sid, host, request_id):
        s = self.server(sid)
        record = {'id': len(self.migrations[sid]) + 1, 'status': 'queued',
                  'instance_uuid': sid, 'created_at': _now(),
                  'source_compute': s['OS-EXT-SRV-ATTR:host'],
                  'dest_compute': host, 'migration_type': 'live-migration',
                  'request_id': request_id}
        with self.lock:
            self.migrations[sid].append(record)
            s['OS-EXT-STS:task_state'] = 'migrating'
        threading.Thread(target=self._run, args=(sid, host, record),
                         daemon=True).start()

    def _report(self, mid, event, **details):
        resp = self.session().post(
            '%s/v1/migrations/%s/cutover-events' % (self.fedex_api, mid),
            json={'event': event, 'host': self.source_host,
                  'details': details}, timeout=60)
        self.counts['fedex-api %s' % event] += 1
        if resp.status_code != 202:
            self.errors['cutover-event %s: HTTP %d' % (
                event, resp.status_code)] += 1
        return resp

    def _run(self, sid, host, record):
        # nova_fedex's steps, spread over the live migration's time.
        step = self.seconds * self.scale * random.uniform(0.8, 1.2) / 4
        s = self.server(sid)
        try:
            time.sleep(step)
            resp = self.session().get('%s/v1/servers/%s/cutover' % (
                self.fedex_api, sid), timeout=60)
            self.counts['fedex-api cutover plan'] += 1
            resp.raise_for_status()
            mid = resp.json()['cutover']['id']
            record['status'] = 'running'
            self._report(mid, 'migrating')
            time.sleep(step)
            self._report(mid, 'paused_at_destination')
            time.sleep(step)
            self._report(mid, 'delta_applied')
            self._report(mid, 'resumed')
            time.sleep(step)
            with self.lock:
                s['OS-EXT-SRV-ATTR:host'] = host
                s['OS-EXT-STS:task_state'] = None
                record['status'] = 'completed'
            # No final-state check simulated (nova_fedex's [fedex]
            # final_state_check_timeout = 0): the cleanup waits for none.
            self._report(mid, 'completed', dest=host,
                         final_state_check_timeout=0)
        except Exception as e:  # noqa: counted, and the read-back ends it
            self.errors['cutover: %s' % type(e).__name__] += 1
            with self.lock:
                s['OS-EXT-STS:task_state'] = None
                record['status'] = 'error'


class Handler(http_server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    nova = None

    def log_message(self, *args):
        pass

    def _send(self, code, body=None, headers=None):
        data = json.dumps(body).encode() if body is not None else b''
        self.send_response(code)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        nova = self.nova
        path, _, query = self.path.partition('?')
        path = re.sub('^/v2.1', '', path)
        m = re.fullmatch(r'/servers/([^/]+)', path)
        if m:
            nova.counts['GET server'] += 1
            return self._send(200, {'server': dict(nova.server(m.group(1)))})
        if path == '/os-migrations':
            nova.counts['GET os-migrations'] += 1
            q = dict(p.split('=', 1) for p in query.split('&') if '=' in p)
            sid = q.get('instance_uuid')
            return self._send(200, {'migrations': list(
                nova.migrations.get(sid, []))})
        m = re.fullmatch(r'/servers/([^/]+)/os-instance-actions(/.+)?',
                         path)
        if m:
            nova.counts['GET instance actions'] += 1
            if m.group(2):
                return self._send(200, {'instanceAction': {
                    'action': 'live-migration', 'events': [],
                    'message': None}})
            return self._send(200, {'instanceActions': [
                {'action': 'live-migration',
                 'request_id': r['request_id']}
                for r in nova.migrations.get(m.group(1), [])]})
        self._send(404, {'itemNotFound': {'message': path}})

    def do_POST(self):
        nova = self.nova
        length = int(self.headers.get('Content-Length') or 0)
        body = json.loads(self.rfile.read(length) or b'{}')
        path = re.sub('^/v2.1', '', self.path)
        m = re.fullmatch(r'/servers/([^/]+)/action', path)
        if not m:
            return self._send(404, {'itemNotFound': {'message': path}})
        sid = m.group(1)
        s = nova.server(sid)
        action = next(iter(body))
        nova.counts['POST %s' % action] += 1
        if action == 'lock':
            s['locked'] = True
            s['locked_reason'] = (body['lock'] or {}).get('locked_reason')
            return self._send(202)
        if action == 'unlock':
            s['locked'], s['locked_reason'] = False, None
            return self._send(202)
        if action == 'os-migrateLive':
            request_id = 'req-%s' % uuid.uuid4()
            nova.live_migrate(sid, body[action]['host'], request_id)
            return self._send(202, headers={
                'x-openstack-request-id': request_id})
        self._send(400, {'badRequest': {'message': 'unknown action %s'
                                                   % action}})


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--port', type=int, required=True)
    p.add_argument('--fedex-api', required=True)
    p.add_argument('--time-scale', type=float, default=0.05)
    p.add_argument('--live-migration-seconds', type=float, default=20)
    p.add_argument('--source-host', default='sim-compute-a')
    args = p.parse_args()
    nova = Nova(args.fedex_api, args.time_scale,
                args.live_migration_seconds, args.source_host)
    Handler.nova = nova
    httpd = http_server.ThreadingHTTPServer(('127.0.0.1', args.port),
                                            Handler)
    httpd.daemon_threads = True

    def stop(*_):
        threading.Thread(target=httpd.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    print('simulated nova on 127.0.0.1:%d' % args.port, flush=True)
    httpd.serve_forever()
    print(json.dumps({'requests': dict(nova.counts),
                      'errors': dict(nova.errors)}), flush=True)


if __name__ == '__main__':
    sys.exit(main())
