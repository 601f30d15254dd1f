#!/usr/bin/env python3
"""fedex-api's cost per list and show, in process, on SQLite.

    python tests/benchmarks/api_profile.py [--migrations 100,1000]
        [--requests 300] [--profile list|show] [--top 25]

For each N of ``--migrations`` a fresh SQLite file is filled with N
migrations in mixed states as the scale bench leaves them (one server with
its memory-copy verdict, one image on a shipment of two devices, 80
events and 11 terminal operations with their results: the rows per
migration of ``scale_bench.py --migrations 1000``). The WSGI application
of fedex-api (``[api] auth_strategy = noauth``, as the API's unit tests
build it) is called in this process, without a server, for
``--requests`` pages of ``GET /v1/migrations?all_projects=1&limit=100``
at random markers and as many ``GET /v1/migrations/<random id>``. It
prints p50/p99 of each, the median CPU time of the request's thread, the
SQL statements each request ran (SQLAlchemy's ``before_cursor_execute``)
and the Python function calls it made (cProfile's count over 50 of them:
unlike times, the same whatever else the machine runs). ``--profile`` runs one of the
two again under cProfile and prints its ``--top`` functions by
cumulative time.

What it measures is fedex-api's own work (Python, SQLite in process); the
latency under a real server, MariaDB and a loaded machine is
``api_bench.py`` and ``scale_bench.py``'s.
"""

import argparse
import cProfile
import datetime
import os
import pstats
import random
import shutil
import statistics
import sys
import tempfile
import time
import uuid

from oslo_config import cfg
import sqlalchemy as sa
from sqlalchemy import event as sa_event
import webob

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', '..'))

from fedex_manager.api import app as app_mod  # noqa: E402
from fedex_manager.api import opts as api_opts  # noqa: E402
from fedex_manager.db import api as db  # noqa: E402
from fedex_manager.db import migration as db_migration  # noqa: E402
from fedex_manager.db import models  # noqa: E402
from fedex_manager import opts  # noqa: E402
from fedex_manager import policy  # noqa: E402
from tests.benchmarks import api_bench  # noqa: E402

# Rows of one migration at the end of the scale bench's 1,000 (79,961
# events, 10,999 operations).
EVENTS = 80
OPERATIONS = 11
STATES = ('REQUESTED', 'EXPORTING', 'SEALED', 'IN_TRANSIT', 'DELIVERED',
          'CATCHING_UP', 'READY_FOR_CUTOVER', 'CUTTING_OVER', 'COMPLETED',
          'CLEANED')
OP_KINDS = ('snapshot', 'export', 'seal', 'verify', 'import',
            'catchup_round', 'catchup_round', 'final_delta', 'erase',
            'remove_snapshots', 'remove_images')


def fill(n, seed=1):
    """N migrations and their rows; their ids."""
    rnd = random.Random(seed)
    now = datetime.datetime.utcnow().replace(microsecond=0)
    sites = [{'id': str(uuid.uuid4()), 'name': n_, 'created_at': now,
              'updated_at': now} for n_ in ('site-a', 'site-b')]
    terms = [{'id': str(uuid.uuid4()), 'name': 'term-%s' % s['name'][-1],
              'site_id': s['id'], 'rpc_topic': 't', 'state': 'UP',
              'created_at': now, 'updated_at': now} for s in sites]
    rows = {t: [] for t in ('m', 's', 'v', 'sh', 'd', 'e', 'o')}
    for i in range(n):
        mid = str(uuid.uuid4())
        sid = str(uuid.uuid4())
        when = now - datetime.timedelta(seconds=n - i)
        state = STATES[i % len(STATES)]
        rows['m'].append({
            'id': mid, 'name': 'm%05d' % i, 'project_id': 'p%d' % (i % 10),
            'user_id': 'u', 'state': state,
            'source_site_id': sites[0]['id'], 'dest_site_id': sites[1]['id'],
            'source_terminal_id': terms[0]['id'],
            'dest_terminal_id': terms[1]['id'],
            'options': {'parity': 0, 'cutover': 'automatic',
                        'shipment_group': 'g%d' % (i // 10)},
            'cutover_approved': False, 'bytes_total': 20 << 30,
            'bytes_done': rnd.randrange(20 << 30), 'rate': 2e8,
            'eta_seconds': 30.0, 'rounds': i % 3, 'generation': 3,
            'base_snapshot': 'fedex-base', 'job_id': str(uuid.uuid4()),
            'created_at': when, 'updated_at': when})
        rows['s'].append({'migration_id': mid, 'server_id': 'srv-%d' % i,
                          'state': 'LOCKED', 'convergence': {
                              'dirty_rate': 1.5e6, 'forecast_s': 0.4,
                              'verdict': 'converges'}})
        rows['sh'].append({'id': sid, 'name': 'ship-%05d' % i,
                           'state': 'DELIVERED', 'carrier': 'simulated',
                           'tracking_number': 'T%08d' % i, 'parity': 0,
                           'source_site_id': sites[0]['id'],
                           'dest_site_id': sites[1]['id'],
                           'created_at': when, 'updated_at': when})
        for k in range(2):
            rows['d'].append({'id': str(uuid.uuid4()),
                              'serial': 'D%05d-%d' % (i, k),
                              'state': 'RECEIVED', 'shipment_id': sid,
                              'capacity_bytes': 1 << 40, 'slot': k,
                              'index_in_set': k, 'created_at': when,
                              'updated_at': when})
        rows['v'].append({'migration_id': mid, 'server_id': 'srv-%d' % i,
                          'kind': 'disk', 'source_image': 'vms/%d_disk' % i,
                          'dest_image': 'vms/%d_disk' % i,
                          'size_bytes': 20 << 30, 'shipment_id': sid,
                          'digest': 'sha256:' + '0' * 64})
        for k in range(OPERATIONS):
            rows['o'].append({
                'id': '%s-%s-%d' % (mid, OP_KINDS[k], k),
                'migration_id': mid, 'terminal': 'term-a',
                'kind': OP_KINDS[k], 'state': 'DONE',
                'bytes_done': 20 << 30, 'bytes_total': 20 << 30,
                'rate': 2e8, 'attempts': 1,
                'result': {'images': {'vms/%d_disk' % i: {
                    'bytes': 20 << 30, 'digest': 'sha256:' + 'f' * 64}},
                    'devices': ['D%05d-0' % i, 'D%05d-1' % i]},
                'created_at': when, 'updated_at': when})
        for k in range(EVENTS):
            rows['e'].append({
                'resource_type': 'migration', 'resource_id': mid,
                'migration_id': mid, 'kind': 'progress',
                'message': 'round %d: %d bytes' % (k, k << 20),
                'actor': 'conductor', 'created_at': when,
                'occurred_at': when, 'details': {'bytes': k << 20}})
    engine = db.get_engine()
    # Events of all migrations interleaved, as they arrive in a real run.
    rnd.shuffle(rows['e'])
    with engine.begin() as conn:
        for model, batch in (
                (models.Site, sites), (models.Terminal, terms),
                (models.Migration, rows['m']),
                (models.MigrationServer, rows['s']),
                (models.Shipment, rows['sh']), (models.Device, rows['d']),
                (models.MigrationVolume, rows['v']),
                (models.Operation, rows['o']), (models.Event, rows['e'])):
            for k in range(0, len(batch), 5000):
                conn.execute(sa.insert(model.__table__), batch[k:k + 5000])
    return [m['id'] for m in rows['m']]


class Counter(object):
    """SQL statements run on ``engine`` since the last :meth:`take`."""

    def __init__(self, engine):
        self.n = 0
        sa_event.listen(engine, 'before_cursor_execute', self._count)

    def _count(self, *args):
        self.n += 1

    def take(self):
        n, self.n = self.n, 0
        return n


def build_app():
    conf = cfg.CONF
    opts.register_opts(conf)
    api_opts.register_opts(conf)
    conf([], project='fedex', default_config_files=[])
    conf.set_override('auth_strategy', 'noauth', group='api')
    policy.reset()
    policy.init(conf)
    return app_mod.deploy(conf)


def call(app, path):
    req = webob.Request.blank(path)
    req.headers.update({'X-Project-Id': 'p1', 'X-User-Id': 'u',
                        'X-Roles': 'admin,member,reader'})
    resp = req.get_response(app)
    assert resp.status_int == 200, (path, resp.status, resp.text[:300])
    return resp


def requests_of(ids, count, seed=2):
    rnd = random.Random(seed)
    lists = ['/v1/migrations?all_projects=1&limit=100&marker=%s'
             % rnd.choice(ids) for _ in range(count)]
    shows = ['/v1/migrations/%s' % rnd.choice(ids) for _ in range(count)]
    return {'list': lists, 'show': shows}


def timed(app, counter, paths):
    """Wall and CPU seconds, and statements, of each request."""
    times, cpu, stmts = [], [], []
    for p in paths:
        counter.take()
        t, c = time.perf_counter(), time.thread_time()
        call(app, p)
        cpu.append(time.thread_time() - c)
        times.append(time.perf_counter() - t)
        stmts.append(counter.take())
    return times, cpu, stmts


def calls_per_request(app, counter, paths):
    """Python function calls a request makes (cProfile's count).

    Unlike times, the same whatever else the machine runs.
    """
    prof = cProfile.Profile()
    prof.runcall(timed, app, counter, paths)
    return pstats.Stats(prof).total_calls / len(paths)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--migrations', default='100,1000')
    parser.add_argument('--requests', type=int, default=300)
    parser.add_argument('--profile', choices=('list', 'show'))
    parser.add_argument('--top', type=int, default=25)
    args = parser.parse_args()
    app = build_app()
    print('%6s %5s %8s %8s %8s %8s %6s' % (
        'N', 'req', 'p50 ms', 'p99 ms', 'mean ms', 'CPU p50', 'stmts')
        + '   calls')
    for n in [int(x) for x in args.migrations.split(',')]:
        tmp = tempfile.mkdtemp(prefix='fedex-api-profile-')
        try:
            db.configure('sqlite:///%s/manager.sqlite' % tmp)
            db_migration.upgrade()
            ids = fill(n)
            counter = Counter(db.get_engine())
            paths = requests_of(ids, args.requests)
            for kind in ('list', 'show'):
                timed(app, counter, paths[kind][:20])  # warm caches
                times, cpu, stmts = timed(app, counter, paths[kind])
                p50, p99 = api_bench.percentiles(times)
                calls = calls_per_request(app, counter, paths[kind][:50])
                print('%6d %5s %8.1f %8.1f %8.1f %8.2f %6s %7d' % (
                    n, kind, p50, p99, 1000 * statistics.mean(times),
                    1000 * statistics.median(cpu),
                    '/'.join(map(str, sorted(set(stmts)))), calls))
            if args.profile:
                prof = cProfile.Profile()
                prof.runcall(timed, app, counter, paths[args.profile])
                pstats.Stats(prof).sort_stats('cumulative').print_stats(
                    args.top)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == '__main__':
    main()
