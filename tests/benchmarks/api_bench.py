#!/usr/bin/env python3
"""fedex-api latency (p50/p99) of list and show, on a loaded database.

    python tests/benchmarks/api_bench.py [--database-url URL]
        [--migrations 1000] [--events 100000] [--requests 300]
        [--keystone-url URL --keystone-password PW]
        [--driver mysqldb|pymysql] [--processes 1] [--threads 4] [--skip-fill]

Fills the database (MariaDB of the sandbox's shared services by default)
with ``--migrations`` migrations of 2 servers and 3 images each and
``--events`` events spread over them, serves fedex-api with the project's
own ``fedex-api`` command (uwsgi: 1 process, 4 threads), and times, from
one client, ``GET /v1/migrations?limit=100`` at random markers and
``GET /v1/migrations/<id>`` (state, progress, the 20 latest events,
operations). With ``--keystone-url`` the calls carry a real token through
keystonemiddleware (validated once, then cached in the process); without,
``[api] auth_strategy = noauth`` isolates fedex-api's own time.
Target: p99 <= 100 ms. Also printed: the CPU time fedex-api's uwsgi
processes spent per request (from /proc, so independent of how loaded the
machine is), the CPU time the sandbox's MariaDB spent per request, and the
machine's load average.
"""

import argparse
import datetime
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
import uuid

import psutil
import requests
import sqlalchemy as sa

from fedex_manager.db import api as db
from fedex_manager.db import migration as db_migration
from fedex_manager.db import models
from fedex_sandbox import opts as sandbox_opts
from fedex_sandbox import sandbox as sandbox_mod

PORT_OFFSET = 690


def default_database():
    """The bench database on the sandbox's MariaDB, and MariaDB's pid."""
    from fedex_sandbox.services import shared
    services = shared.SharedServices.from_env()
    services.create_database('fedex_bench')
    return (services.database_url('fedex_bench'),
            services.mariadb().pid())


def fill(url, n_migrations, n_events):
    db.configure(url)
    engine = db.get_engine()
    models.Base.metadata.drop_all(engine)
    with engine.begin() as conn:
        conn.execute(sa.text('DROP TABLE IF EXISTS fedex_alembic_version'))
    db_migration.upgrade()
    now = datetime.datetime.utcnow()
    sites = [{'id': str(uuid.uuid4()), 'name': n, 'created_at': now,
              'updated_at': now} for n in ('site-a', 'site-b')]
    terms = [{'id': str(uuid.uuid4()), 'name': 'term-%s' % s['name'][-1],
              'site_id': s['id'], 'rpc_topic': 't', 'state': 'UP',
              'created_at': now, 'updated_at': now} for s in sites]
    migs, servers, vols = [], [], []
    states = ('EXPORTING', 'IN_TRANSIT', 'CATCHING_UP', 'READY_FOR_CUTOVER',
              'COMPLETED')
    for i in range(n_migrations):
        mid = str(uuid.uuid4())
        when = now - datetime.timedelta(seconds=n_migrations - i)
        migs.append({'id': mid, 'name': 'm%05d' % i,
                     'project_id': 'p%d' % (i % 10), 'user_id': 'u',
                     'state': states[i % len(states)],
                     'source_site_id': sites[0]['id'],
                     'dest_site_id': sites[1]['id'],
                     'source_terminal_id': terms[0]['id'],
                     'dest_terminal_id': terms[1]['id'], 'options': {},
                     'cutover_approved': False, 'bytes_total': 3 << 30,
                     'bytes_done': i << 20, 'rounds': i % 7,
                     'generation': 1, 'created_at': when,
                     'updated_at': when})
        for s in range(2):
            servers.append({'migration_id': mid, 'server_id': 'srv-%d-%d'
                            % (i, s), 'state': 'LOCKED'})
        for v in range(3):
            vols.append({'migration_id': mid, 'server_id': 'srv-%d-0' % i,
                         'kind': 'volume', 'source_image': 'vms/i%d-%d'
                         % (i, v), 'dest_image': 'vms/i%d-%d' % (i, v),
                         'size_bytes': 1 << 30})
    events = [{'resource_type': 'migration',
               'resource_id': migs[k % n_migrations]['id'],
               'migration_id': migs[k % n_migrations]['id'],
               'kind': 'progress', 'message': 'round %d: %d bytes' % (k, k),
               'actor': 'bench', 'created_at': now, 'occurred_at': now}
              for k in range(n_events)]
    with engine.begin() as conn:
        for table, rows in ((models.Site, sites), (models.Terminal, terms),
                            (models.Migration, migs),
                            (models.MigrationServer, servers),
                            (models.MigrationVolume, vols),
                            (models.Event, events)):
            for k in range(0, len(rows), 5000):
                conn.execute(sa.insert(table.__table__), rows[k:k + 5000])
    return [m['id'] for m in migs], [m['project_id'] for m in migs]


def serve(conf_dir, url, port, keystone, processes, threads):
    shutil.rmtree(conf_dir, ignore_errors=True)
    os.makedirs(conf_dir)
    conf = os.path.join(conf_dir, 'fedex-api.conf')
    with open(conf, 'w') as f:
        f.write('[DEFAULT]\nlog_file = %s/api.log\n[database]\n'
                'connection = %s\n' % (conf_dir, url))
        if keystone:
            f.write('[api]\nauth_strategy = keystone\npost_jobs = false\n'
                    '[keystone_authtoken]\n'
                    'www_authenticate_uri = %(u)s\nauth_url = %(u)s\n'
                    'auth_type = password\nusername = admin\n'
                    'password = %(p)s\nproject_name = admin\n'
                    'user_domain_id = default\nproject_domain_id = default\n'
                    % {'u': keystone[0], 'p': keystone[1]})
        else:
            f.write('[api]\nauth_strategy = noauth\npost_jobs = false\n')
    exe = os.path.join(os.path.dirname(sys.executable), 'fedex-api')
    proc = subprocess.Popen(
        [exe, '--config-file', conf, '--bind', '127.0.0.1:%d' % port,
         '--processes', str(processes), '--threads', str(threads),
         '--logfile',
         os.path.join(conf_dir, 'uwsgi.log')], start_new_session=True)
    for _ in range(300):
        try:
            socket.create_connection(('127.0.0.1', port), timeout=1).close()
            return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit('fedex-api did not start; see %s' % conf_dir)


def token(keystone):
    body = {'auth': {'identity': {'methods': ['password'], 'password': {
        'user': {'name': 'admin', 'domain': {'id': 'default'},
                 'password': keystone[1]}}},
        'scope': {'project': {'name': 'admin',
                              'domain': {'id': 'default'}}}}}
    resp = requests.post(keystone[0] + '/auth/tokens', json=body, timeout=60)
    resp.raise_for_status()
    return resp.headers['X-Subject-Token']


def cpu_seconds(pid):
    """User + system CPU of process ``pid`` and its children so far."""
    if pid is None:
        return 0.0
    total = 0.0
    procs = [psutil.Process(pid)]
    procs += procs[0].children(recursive=True)
    for p in procs:
        t = p.cpu_times()
        total += t.user + t.system
    return total


def percentiles(samples):
    s = sorted(samples)
    return (statistics.median(s) * 1000,
            s[min(len(s) - 1, int(round(0.99 * len(s))) - 1)] * 1000)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--database-url')
    parser.add_argument('--migrations', type=int, default=1000)
    parser.add_argument('--events', type=int, default=100000)
    parser.add_argument('--requests', type=int, default=300)
    parser.add_argument('--keystone-url')
    parser.add_argument('--keystone-password')
    parser.add_argument('--driver', choices=('mysqldb', 'pymysql'),
                        default='mysqldb',
                        help='The MySQL driver of fedex-api: mysqldb is '
                             'mysqlclient (C, the default), pymysql pure '
                             'Python.')
    parser.add_argument('--skip-fill', action='store_true',
                        help='Reuse the rows a previous run left.')
    parser.add_argument('--processes', type=int, default=1)
    parser.add_argument('--threads', type=int, default=4)
    args = parser.parse_args()
    mariadb_pid = None
    url = args.database_url
    if not url:
        url, mariadb_pid = default_database()
    if args.driver:
        url = sa.engine.make_url(url).set(
            drivername='mysql+' + args.driver).render_as_string(
            hide_password=False)
    t0 = time.monotonic()
    if args.skip_fill:
        with sa.create_engine(url).connect() as conn:
            ids = [r[0] for r in conn.execute(sa.text(
                'SELECT id FROM migrations'))]
            events = conn.execute(sa.text(
                'SELECT COUNT(*) FROM events')).scalar()
        print('reusing %d migrations, %d events (%s)' % (
            len(ids), events, url.split('@')[-1]))
    else:
        ids, _projects = fill(url, args.migrations, args.events)
        print('filled %d migrations, %d events in %.1f s (%s)' % (
            len(ids), args.events, time.monotonic() - t0,
            url.split('@')[-1]))
    root = os.environ.get(sandbox_opts.DIR_ENV, sandbox_opts.DEFAULT_DIR)
    sb = sandbox_mod.Sandbox(root)
    port = sb.port(PORT_OFFSET)
    keystone = (args.keystone_url, args.keystone_password) \
        if args.keystone_url else None
    proc = serve(os.path.join(sb.root, 'api-bench'), url, port, keystone,
                 args.processes, args.threads)
    try:
        s = requests.Session()
        base = 'http://127.0.0.1:%d/v1' % port
        if keystone:
            s.headers['X-Auth-Token'] = token(keystone)
        else:
            s.headers.update({'X-Project-Id': 'p1', 'X-Roles': 'admin',
                              'X-User-Id': 'bench'})
        rng = random.Random(1)
        # Warm up: the token's validation, connections, caches.
        s.get(base + '/migrations?all_projects=1&limit=1').raise_for_status()
        results = {}
        for name, make in (
                ('list (limit=100, all projects)', lambda: (
                    base + '/migrations?all_projects=1&limit=100&marker=%s'
                    % rng.choice(ids))),
                ('show (with 20 latest events)', lambda: (
                    base + '/migrations/%s' % rng.choice(ids)))):
            times = []
            cpu = cpu_seconds(proc.pid)
            db_cpu = cpu_seconds(mariadb_pid)
            for _ in range(args.requests):
                u = make()
                t = time.perf_counter()
                resp = s.get(u)
                times.append(time.perf_counter() - t)
                resp.raise_for_status()
            cpu = (cpu_seconds(proc.pid) - cpu) / args.requests * 1000
            db_cpu = (cpu_seconds(mariadb_pid) - db_cpu) / args.requests \
                * 1000
            results[name] = percentiles(times) + (cpu, db_cpu)
        print('fedex-api, %s, %s, uwsgi %d process(es) x %d threads, %d '
              'requests each:' % (
                  'keystone auth_token' if keystone else 'noauth',
                  sa.engine.make_url(url).drivername, args.processes,
                  args.threads, args.requests))
        for name, (p50, p99, cpu, db_cpu) in results.items():
            print('  %-32s p50 %6.1f ms   p99 %6.1f ms   CPU/request: '
                  'fedex-api %4.1f ms, MariaDB %s' % (
                      name, p50, p99, cpu, '%4.1f ms' % db_cpu
                      if mariadb_pid else '(not ours)'))
        print('  load average: %s' % ' '.join(
            '%.1f' % x for x in os.getloadavg()))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)


if __name__ == '__main__':
    main()
