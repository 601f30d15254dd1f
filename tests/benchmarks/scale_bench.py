#!/usr/bin/env python3
"""The manager at scale: N concurrent migrations through the real manager.

    FEDEX_SANDBOX_DIR=/var/tmp/fedex-scale FEDEX_SANDBOX_BASE_PORT=26000 \\
    python tests/benchmarks/scale_bench.py --migrations 1000 --conductors 2
        [--api-workers 1] [--max-jobs 8] [--time-scale 0.05]
        [--curve 100,300,1000,3000] [--plot PATH] [--json PATH]

What runs for real: MariaDB, RabbitMQ and ZooKeeper (the sandbox's shared
services, started here in the directory and ports of the environment: no
Ceph), ``--conductors`` fedex-conductor processes, fedex-api under uwsgi
(``--api-workers`` processes x 4 threads, ``[api] auth_strategy =
noauth``: the sandbox's Keystone is not part of what is measured), and
in this process the facade that creates the migrations
(``migration_create``, what fedex-api's create calls after its preflight,
which would read the images' sizes from Ceph) with the jobboard poster.

What is simulated: the terminals' data plane (two agents per site,
:mod:`simulated_agent`: the real lsrp-agent with each operation replaced
by a scaled sleep and a real-looking result) and Nova
(:mod:`simulated_nova`: the compute API the manager calls with
``compute_driver = nova``, and nova_fedex's reports of each cutover to
fedex-api). The simulated courier (the product's) carries the device
directories on its timetable.

Each migration: one server, one 20 GiB image (simulated), parity 0 (two
devices, one shipment of its own), automatic cutover, no retention; it
ends CLEANED. Reported while it runs and at the end: migrations per state,
time spent in each state (p50/p99 over the migrations), conductor CPU and
RSS (every 5 s), the ZooKeeper jobboard (jobs and lock znodes), database
rows per table, fedex-api ``GET /v1/migrations?limit=100&marker=`` and
``GET /v1/migrations/{id}`` p50/p99 sampled at ``--api-rate`` requests/s
by a separate process. ``--curve`` runs each N in turn (a fresh manager
each) and ``--plot`` draws the curve (matplotlib: the ``[plot]`` extra).

Uses ports +900..+949 of the sandbox's range (``--ports``); the load average is printed
at the start and the end of each run.
"""

import argparse
import concurrent.futures
import json
import math
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid

import psutil
import requests
import sqlalchemy as sa

from oslo_config import cfg

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from fedex_manager.actions import migrations as migration_actions  # noqa
from fedex_manager.actions import sites  # noqa
from fedex_manager.conductor import jobboard  # noqa
from fedex_manager import context  # noqa
from fedex_manager.db import api as db  # noqa
from fedex_manager import jobs  # noqa
from fedex_manager import opts  # noqa
from fedex_manager import states  # noqa
from fedex_sandbox.manager import api_service  # noqa
from fedex_sandbox.manager import deploy  # noqa
from fedex_sandbox import opts as sandbox_opts  # noqa
from fedex_sandbox.services import shared  # noqa

CONF = cfg.CONF
BIN = os.path.dirname(sys.executable)
GiB = 1 << 30
PORTS = 900
DEFAULT_DIR = '/var/tmp/fedex-scale'
DEFAULT_BASE_PORT = 26000
TABLES = ('migrations', 'migration_volumes', 'operations', 'events',
          'shipments', 'devices', 'logbooks', 'flowdetails', 'atomdetails')
CEPH_CONF = '[global]\nfsid = %s\nmon_host = v1:127.0.0.1:6789\n'


def load():
    return '%.2f %.2f %.2f' % os.getloadavg()


def pct(values, q):
    if not values:
        return float('nan')
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(math.ceil(q * len(s))) - 1))]


def wait_port(port, proc, what, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not proc.alive():
            raise SystemExit('%s exited: %s' % (what, proc.tail()))
        try:
            socket.create_connection(('127.0.0.1', port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.3)
    raise SystemExit('%s did not listen on %d' % (what, port))


def tree(pid):
    try:
        p = psutil.Process(pid)
        return [p] + p.children(recursive=True)
    except psutil.Error:
        return []


def cpu_of(procs):
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def rss_mib(p):
    try:
        return p.memory_info().rss / float(1 << 20)
    except psutil.Error:
        return 0.0


# --- the API sampler (a process of its own) -----------------------------------

def sampler(args):
    """GET list and show at a steady rate until SIGTERM; JSON lines out."""
    import signal

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    s = requests.Session()
    s.headers.update({'X-Project-Id': 'bench', 'X-Roles': 'admin',
                      'X-User-Id': 'bench'})
    base = args.sample_api.rstrip('/') + '/v1'
    with open(args.sample_ids) as f:
        ids = json.load(f)
    rng = random.Random(1)
    out = open(args.sample_out, 'w')
    interval = 1.0 / args.api_rate
    nxt = time.monotonic()
    k = 0
    while not stop.is_set():
        if k % 2 == 0:
            kind = 'list'
            url = base + '/migrations?all_projects=1&limit=100&marker=%s' \
                % rng.choice(ids)
        else:
            kind = 'show'
            url = base + '/migrations/%s' % rng.choice(ids)
        t = time.perf_counter()
        try:
            code = s.get(url, timeout=60).status_code
        except requests.RequestException:
            code = 0
        out.write(json.dumps([time.time(), kind, time.perf_counter() - t,
                              code]) + '\n')
        out.flush()
        k += 1
        nxt += interval
        delay = nxt - time.monotonic()
        if delay > 0:
            stop.wait(delay)
        else:
            nxt = time.monotonic()      # behind: no burst to catch up
    out.close()


# --- one run -----------------------------------------------------------------------

class Run(object):

    def __init__(self, args, n, services):
        self.args, self.n = args, n
        self.services = services
        self.root = services.root
        self.tag = 'scale-%d-%s' % (n, uuid.uuid4().hex[:4])
        self.work = os.path.join(self.root, 'runs', self.tag)
        os.makedirs(self.work)
        self.base_port = services.base_port
        endpoints = services.endpoints()
        self.dep = deploy.Deployment(
            None, endpoints, self.tag, self.work, {}, database='mysql',
            session_timeout=10, timetable={
                k: v * args.time_scale for k, v in (
                    ('hand_over', 60), ('depart', 120), ('scan', 300),
                    ('deliver', 600))})
        self.dep.compute_driver = 'nova'
        self.nova_port = self.port(1)
        self.api_port = self.port(0)
        self.dep.nova = {'auth_type': 'none', 'endpoint':
                         'http://127.0.0.1:%d/v2.1' % self.nova_port}
        # The product's defaults, not the functional tests' quick ones
        # (op_poll_interval 1, sweep_interval 2, op_timeout 10), except
        # the sweeper's interval: it is also the delay of each automatic
        # cleanup, a fixed wait that says nothing of the manager.
        self.dep.conductor_options = {
            'max_jobs': args.max_jobs, 'op_poll_interval': 2,
            'sweep_interval': args.sweep_interval, 'op_timeout': 120,
            'server_check_interval': 30}
        self.samples = []
        self.stopping = threading.Event()
        self.result = {'migrations': n, 'conductors': args.conductors,
                       'max_jobs': args.max_jobs,
                       'api_workers': args.api_workers,
                       'time_scale': args.time_scale}

    def port(self, k):
        return self.base_port + self.args.ports + k

    # --- set-up ----------------------------------------------------------------

    def start(self):
        a = self.args
        conf = self.dep.db_sync()
        CONF.reset()
        CONF(['--config-file', conf], project='fedex-scale-bench')
        db.configure(self.dep.db_url)
        _, self.board = jobboard.install_poster(CONF)
        self.ctx = context.RequestContext(user_id='bench',
                                          project_id='bench',
                                          is_admin=True)
        for site in ('site-a', 'site-b'):
            path = os.path.join(self.work, '%s.ceph.conf' % site)
            with open(path, 'w') as f:
                f.write(CEPH_CONF % uuid.uuid4())
            sites.site_register(self.ctx, site, ceph_conf=path)
        self.start_api()
        self.start_nova()
        for i in range(a.conductors):
            self.start_conductor('conductor-%d' % (i + 1))
        self.terminals = {'site-a': [], 'site-b': []}
        per = a.terminals_per_site
        devices = 2 * int(math.ceil(self.n / float(per))) + 2
        for site in ('site-a', 'site-b'):
            for k in range(1, per + 1):
                name = 'sim-%s%d' % (site[-1], k)
                self.start_agent(site, name, devices if site == 'site-a'
                                 else 0)
                self.terminals[site].append(name)
        want = devices * per

        def ready():
            up = [t for t in sites.terminal_list(self.ctx)
                  if t['health'] == 'UP']
            blank = db.list_(self.ctx, 'device', {'state': states.D_BLANK})
            return len(up) == 2 * per and len(blank) >= want
        self.dep.wait(ready, 600, 'terminals and %d devices' % want)
        self.terminal_ids = {
            site: [db.get(self.ctx, 'terminal', n)['id'] for n in names]
            for site, names in self.terminals.items()}

    def start_conductor(self, name):
        if not self.args.profile:
            return self.dep.start_conductor(name)
        conf = self.dep.write_conf('%s.conf' % name,
                                   self.dep.manager_conf(name))
        proc = deploy.Process(name, [
            sys.executable, os.path.join(HERE, 'profiled_conductor.py'),
            os.path.join(self.work, 'profile-%s' % name),
            '--config-file', conf],
            os.path.join(self.work, '%s.log' % name)).start()
        self.dep.processes[name] = proc
        return proc

    def start_api(self):
        a = self.args
        sections = self.dep.common()
        conf = self.dep.manager_conf()
        sections['DEFAULT']['log_file'] = os.path.join(self.work,
                                                       'fedex-api.log')
        sections.update({
            'database': {'connection': api_service.c_driver(
                conf['database']['connection'], sys.executable)},
            'jobboard': conf['jobboard'],
            'manager': {'state_path': os.path.join(self.work, 'api')},
            'conductor': {'compute_driver': 'nova', 'courier': 'simulated'},
            'simulated_courier': conf['simulated_courier'],
            'api': {'auth_strategy': 'noauth', 'post_jobs': True}})
        path = self.dep.write_conf('fedex-api.conf', sections)
        proc = deploy.Process('fedex-api', [
            os.path.join(BIN, 'fedex-api'), '--config-file', path,
            '--bind', '127.0.0.1:%d' % self.api_port,
            '--processes', str(a.api_workers), '--threads', '4',
            '--logfile', os.path.join(self.work, 'uwsgi.log')],
            os.path.join(self.work, 'fedex-api.out')).start()
        self.dep.processes['fedex-api'] = proc
        wait_port(self.api_port, proc, 'fedex-api')

    def start_nova(self):
        proc = deploy.Process('simulated-nova', [
            sys.executable, os.path.join(HERE, 'simulated_nova.py'),
            '--port', str(self.nova_port), '--fedex-api',
            'http://127.0.0.1:%d' % self.api_port,
            '--time-scale', str(self.args.time_scale)],
            os.path.join(self.work, 'simulated-nova.log')).start()
        self.dep.processes['simulated-nova'] = proc
        wait_port(self.nova_port, proc, 'the simulated Nova')

    def start_agent(self, site, name, devices):
        a = self.args
        slots = os.path.join(self.work, 'slots-%s' % name)
        os.makedirs(slots)
        for _ in range(devices):
            os.makedirs(os.path.join(slots, 'usb-%s-%s' % (
                name, uuid.uuid4().hex[:10])))
        sections = self.dep.common()
        sections.update({
            'agent': {'name': name, 'site': site, 'slots_dir': slots,
                      'heartbeat_interval': a.heartbeat_interval,
                      'lsrp_address': '127.0.0.1:%d' % self.port(
                          10 + len(self.dep.processes)),
                      'serve_lsrp': False,
                      'device_capacity_mib': 4 << 20},
            'server': {'name': name},
            'shipment': {'state_dir': os.path.join(self.work,
                                                   'state-' + name),
                         'key_dir': os.path.join(self.work,
                                                 'lsrp-keys-' + name)},
            'simulated_agent': {'time_scale': a.time_scale,
                                'max_parallel': a.agent_parallel},
        })
        path = self.dep.write_conf('agent-%s.conf' % name, sections)
        proc = deploy.Process(name, [
            sys.executable, os.path.join(HERE, 'simulated_agent.py'),
            '--config-file', path],
            os.path.join(self.work, 'agent-%s.log' % name)).start()
        self.dep.processes[name] = proc

    # --- the run -------------------------------------------------------------------

    def create(self):
        src, dst = self.terminal_ids['site-a'], self.terminal_ids['site-b']

        def one(i):
            t = time.perf_counter()
            m = migration_actions.migration_create(
                self.ctx, [{'server_id': 'srv-%s-%05d' % (self.tag, i),
                            'volumes': [{'source_image': 'vms/disk-%05d' % i,
                                         'size_bytes': 20 * GiB}]}],
                'site-a', 'site-b', dest_host='sim-compute-b',
                # Named: each terminal has the devices of its share.
                source_terminal=src[i % len(src)],
                dest_terminal=dst[i % len(dst)],
                options={'cutover': 'automatic', 'retention_days': 0,
                         'parity': 0, 'max_rounds': 3})
            return m['id'], time.perf_counter() - t
        begin = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            made = list(pool.map(one, range(self.n)))
        took = time.monotonic() - begin
        self.ids = [m for m, _ in made]
        lat = [t for _, t in made]
        self.result['create'] = {
            'seconds': round(took, 1), 'p50_ms': round(pct(lat, .5) * 1e3, 1),
            'p99_ms': round(pct(lat, .99) * 1e3, 1)}
        print('created %d migrations in %.1f s (facade, 8 threads: p50 %.0f '
              'ms, p99 %.0f ms each)' % (self.n, took, pct(lat, .5) * 1e3,
                                         pct(lat, .99) * 1e3), flush=True)

    def watch(self):
        """Every 5 s: conductors' CPU and RSS, ZooKeeper, rows, states."""
        zk = jobboard.zk_client(CONF)
        engine = sa.create_engine(self.dep.db_url)
        conductors = [p for name, p in sorted(self.dep.processes.items())
                      if name.startswith('conductor')]
        others = {name: p for name, p in self.dep.processes.items()
                  if not name.startswith('conductor')}
        mariadb = self.services.mariadb().pid()
        path = CONF.jobboard.path
        begin = time.monotonic()
        k = 0
        while not self.stopping.is_set():
            sample = {'t': round(time.monotonic() - begin, 1),
                      'load': os.getloadavg()[0]}
            for p in conductors:
                procs = tree(p.pid)
                sample['cpu ' + p.name] = cpu_of(procs)
                # The worker (oslo.service forks it) holds the state.
                sample['rss ' + p.name] = max([rss_mib(x) for x in procs]
                                              or [0])
            for name, p in others.items():
                sample['cpu ' + name] = cpu_of(tree(p.pid))
                sample['rss ' + name] = sum(rss_mib(x) for x in tree(p.pid))
            sample['cpu mariadb'] = cpu_of(tree(mariadb)) if mariadb else 0
            try:
                sample['zk jobs'] = len(zk.get_children(path))
                sample['zk locks'] = len(zk.get_children(path + '-locks'))
            except Exception:
                pass
            if k % 3 == 0:
                with engine.connect() as conn:
                    for t in TABLES:
                        try:
                            sample['rows ' + t] = conn.execute(sa.text(
                                'SELECT COUNT(*) FROM %s' % t)).scalar()
                        except sa.exc.DBAPIError:
                            pass
                    sample['states'] = dict(conn.execute(sa.text(
                        'SELECT state, COUNT(*) FROM migrations '
                        'GROUP BY state')).fetchall())
            self.samples.append(sample)
            if self.args.profile:
                self.look_for_stalls(conductors, engine)
            k += 1
            self.stopping.wait(5)
        zk.stop()
        zk.close()
        engine.dispose()

    def look_for_stalls(self, conductors, engine):
        """A conductor whose log is silent for 30 s: its threads' stacks.

        (SIGUSR1: profiled_conductor.py's faulthandler writes them into
        the log) and what MariaDB runs at that moment, once per silence.
        """
        if not hasattr(self, '_silent'):
            self._silent = {}
        for p in conductors:
            try:
                quiet = time.time() - os.path.getmtime(p.log)
            except OSError:
                continue
            if quiet < 30:
                self._silent.pop(p.name, None)
                continue
            if self._silent.get(p.name):
                continue
            self._silent[p.name] = True
            for child in tree(p.pid)[1:]:
                os.kill(child.pid, 10)
            with engine.connect() as conn, open(os.path.join(
                    self.work, 'stall-%s-%d.txt' % (p.name, time.time())),
                    'w') as out:
                for q in ('SHOW FULL PROCESSLIST',
                          'SELECT * FROM information_schema.innodb_trx'):
                    out.write('== %s\n' % q)
                    for row in conn.execute(sa.text(q)):
                        out.write('%r\n' % (tuple(row),))
            print('%s silent for %.0f s: stacks in its log, MariaDB in '
                  'stall-*.txt' % (p.name, quiet), flush=True)

    def run(self):
        a = self.args
        print('--- %d migrations, %d conductors x max_jobs %d, fedex-api %d '
              'process(es) x 4 threads; load average at start: %s' % (
                  self.n, a.conductors, a.max_jobs, a.api_workers, load()),
              flush=True)
        self.result['load_start'] = load()
        self.start()
        watcher = threading.Thread(target=self.watch, daemon=True)
        watcher.start()
        t0 = time.monotonic()
        self.create()
        ids_file = os.path.join(self.work, 'ids.json')
        with open(ids_file, 'w') as f:
            json.dump(self.ids, f)
        api_out = os.path.join(self.work, 'api-samples.jsonl')
        sampler_proc = subprocess.Popen([
            sys.executable, os.path.abspath(__file__), '--sample-api',
            'http://127.0.0.1:%d' % self.api_port, '--sample-ids', ids_file,
            '--sample-out', api_out, '--api-rate', str(a.api_rate)])
        last = 0
        engine = sa.create_engine(self.dep.db_url)
        try:
            while True:
                with engine.connect() as conn:
                    counts = dict(conn.execute(sa.text(
                        'SELECT state, COUNT(*) FROM migrations '
                        'GROUP BY state')).fetchall())
                done = counts.get(states.CLEANED, 0)
                failed = counts.get(states.FAILED, 0)
                if time.monotonic() - last >= 30:
                    last = time.monotonic()
                    s = self.samples[-1] if self.samples else {}
                    print('%s +%5.0f s  %s  (load %s; conductor RSS %s MiB)'
                          % (time.strftime('%H:%M:%S'), time.monotonic() - t0,
                             ', '.join('%s %d' % kv for kv in
                                       sorted(counts.items())), load(),
                             '/'.join('%.0f' % v for k, v in
                                      sorted(s.items())
                                      if k.startswith('rss conductor'))),
                          flush=True)
                if done + failed >= self.n:
                    break
                if time.monotonic() - t0 > a.max_seconds:
                    print('gave up after %d s' % a.max_seconds, flush=True)
                    self.result['gave_up'] = True
                    break
                for name, p in self.dep.processes.items():
                    if not p.alive():
                        raise SystemExit('%s exited: %s' % (name, p.tail()))
                time.sleep(2)
        finally:
            sampler_proc.terminate()
            sampler_proc.wait(30)
        self.result['seconds'] = round(time.monotonic() - t0, 1)
        self.result['failed'] = failed
        self.result['cleaned'] = done
        time.sleep(6)               # one more sample after the end
        self.stopping.set()
        watcher.join(30)
        engine.dispose()
        self.report(api_out)
        self.result['load_end'] = load()
        print('load average at end: %s' % load(), flush=True)

    # --- the report ------------------------------------------------------------------

    def report(self, api_out):
        r = self.result
        print('%d migrations: %d CLEANED, %d FAILED in %.1f s (%.1f '
              'migrations/min)' % (self.n, r['cleaned'], r['failed'],
                                   r['seconds'], 60.0 * r['cleaned'] /
                                   max(r['seconds'], 1)))
        if r['failed']:
            for m in db.list_(self.ctx, 'migration',
                              {'state': states.FAILED})[:5]:
                print('  FAILED %s in %s: %s' % (m['id'], m['failed_in'],
                                                 (m['last_error'] or '')[:300]))
        # Time in each state, from the migrations' state-change events.
        engine = sa.create_engine(self.dep.db_url)
        with engine.connect() as conn:
            rows = conn.execute(sa.text(
                'SELECT resource_id, from_state, to_state, created_at '
                'FROM events WHERE resource_type = \'migration\' AND '
                'to_state IS NOT NULL ORDER BY resource_id, created_at, id'
            )).fetchall()
        engine.dispose()
        spans, last, ends, place, seen = {}, {}, [], {}, {}
        created = {}
        for mid, frm, to, at in rows:
            if mid in last:
                prev_state, prev_at = last[mid]
                spans.setdefault(prev_state, []).append(
                    (at - prev_at).total_seconds())
            else:
                created[mid] = at
            last[mid] = (to, at)
            place.setdefault(to, []).append(len(seen.setdefault(mid, [])))
            seen[mid].append(to)
            if to == states.CLEANED:
                ends.append((at - created[mid]).total_seconds())
        r['states'] = {}
        print('time in each state (s), over the migrations (database '
              'timestamps: whole seconds):')
        print('  %-20s %6s %8s %8s %8s' % ('state', 'n', 'p50', 'p99',
                                           'max'))
        # In the order the migrations went through them.
        order = sorted(spans, key=lambda x: statistics.mean(place[x]))
        for s in order:
            v = spans[s]
            r['states'][s] = {'n': len(v), 'p50': pct(v, .5),
                              'p99': pct(v, .99), 'max': max(v)}
            print('  %-20s %6d %8.1f %8.1f %8.1f' % (
                s, len(v), pct(v, .5), pct(v, .99), max(v)))
        if ends:
            r['request_to_cleaned'] = {'p50': pct(ends, .5),
                                       'p99': pct(ends, .99)}
            print('request -> CLEANED: p50 %.1f s, p99 %.1f s' % (
                pct(ends, .5), pct(ends, .99)))
        # The API as sampled while the migrations ran.
        api = {'list': [], 'show': []}
        bad = 0
        try:
            with open(api_out) as f:
                for line in f:
                    _, kind, secs, code = json.loads(line)
                    api[kind].append(secs)
                    bad += code != 200
        except FileNotFoundError:
            pass
        r['api'] = {}
        for kind, v in api.items():
            r['api'][kind] = {'n': len(v), 'p50_ms': pct(v, .5) * 1e3,
                              'p99_ms': pct(v, .99) * 1e3}
            print('fedex-api %-4s (%s): %5d requests, p50 %6.1f ms, p99 '
                  '%6.1f ms' % (kind, 'GET /v1/migrations?all_projects=1&'
                                'limit=100&marker=<random>' if kind ==
                                'list' else 'GET /v1/migrations/<random>',
                                len(v), pct(v, .5) * 1e3,
                                pct(v, .99) * 1e3))
        r['api']['errors'] = bad
        print('fedex-api answers other than 200: %d' % bad)
        # Resources.
        s = self.samples
        if len(s) >= 2:
            span = s[-1]['t'] - s[0]['t']
            r['processes'] = {}
            names = sorted(k[4:] for k in s[-1] if k.startswith('cpu '))
            print('%-26s %9s %9s %9s %9s %9s' % (
                'process', 'CPU s', 'CPU %', 'RSS start', 'RSS mid',
                'RSS end'))
            for name in names:
                cpu = s[-1]['cpu ' + name] - s[0]['cpu ' + name]
                rss = [x.get('rss ' + name, 0) for x in s]
                # After set-up and creation (the first quarter), the middle
                # and the end: flat means no growth with the work done.
                a_, b_, c_ = (rss[len(rss) // 4], rss[len(rss) // 2],
                              rss[-1]) if rss else (0, 0, 0)
                peak = max(rss) if rss else 0
                r['processes'][name] = {
                    'cpu_s': round(cpu, 1), 'cpu_pct': round(
                        100 * cpu / span, 1) if span else None,
                    'rss_quarter': round(a_), 'rss_mid': round(b_),
                    'rss_end': round(c_), 'rss_peak': round(peak)}
                print('%-26s %9.1f %8.1f%% %8.0fM %8.0fM %8.0fM' % (
                    name, cpu, 100 * cpu / span if span else 0, a_, b_, c_)
                    if name != 'mariadb' else '%-26s %9.1f %8.1f%%' % (
                        name, cpu, 100 * cpu / span if span else 0))
            zk_jobs = [x.get('zk jobs', 0) for x in s]
            zk_locks = [x.get('zk locks', 0) for x in s]
            r['zk'] = {'jobs_peak': max(zk_jobs), 'jobs_end': zk_jobs[-1],
                       'locks_peak': max(zk_locks),
                       'locks_end': zk_locks[-1]}
            print('ZooKeeper jobboard: jobs peak %d, at end %d; lock znodes '
                  'peak %d, at end %d' % (max(zk_jobs), zk_jobs[-1],
                                          max(zk_locks), zk_locks[-1]))
            rows = [x for x in s if 'rows migrations' in x][-1]
            r['rows'] = {t: rows.get('rows ' + t) for t in TABLES}
            print('database rows at end: %s' % ', '.join(
                '%s %s' % (t, rows.get('rows ' + t)) for t in TABLES))
            # Conductors' RSS over the run (the plot's flatness panel).
            r['rss_series'] = [[x['t']] + [round(x.get(k, 0)) for k in sorted(
                x) if k.startswith('rss conductor')] for x in s]
        with open(os.path.join(self.work, 'samples.json'), 'w') as f:
            json.dump(s, f)
        r['samples'] = os.path.join(self.work, 'samples.json')

    def cleanup(self):
        self.stopping.set()
        self.dep.stop()
        # The simulated agents' and conductors' workers: their sessions.
        for p in self.dep.processes.values():
            if p.proc is not None:
                try:
                    os.killpg(p.proc.pid, 9)
                except OSError:
                    pass
        try:
            self.board.close()
        except Exception:
            pass
        jobs.set_poster(None)
        self.dep.drop_database()
        if not self.args.keep:
            shutil.rmtree(self.work, ignore_errors=True)
        else:
            print('kept %s' % self.work)


def plot(results, path):
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot as plt

    results = sorted(results, key=lambda r: r['migrations'])
    n = [r['migrations'] for r in results]
    fig, ax = plt.subplots(3, 2, figsize=(10, 10))
    for kind, style in (('list', 'o-'), ('show', 's-')):
        ax[0][0].plot(n, [r['api'][kind]['p50_ms'] for r in results],
                      style, label='%s p50' % kind)
        ax[0][0].plot(n, [r['api'][kind]['p99_ms'] for r in results],
                      style + '-', label='%s p99' % kind)
    ax[0][0].axhline(100, color='grey', lw=0.8, ls=':')
    ax[0][0].set_title('fedex-api while migrations run (ms)')
    ax[0][0].legend(fontsize=7)
    for name in sorted({k for r in results for k in r.get('processes', {})
                        if k.startswith('conductor')}):
        ax[0][1].plot(n, [r['processes'][name]['rss_peak']
                          for r in results], 'o-', label=name + ' peak')
        ax[0][1].plot(n, [r['processes'][name]['rss_end']
                          for r in results], 'x--', label=name + ' end')
    ax[0][1].set_title('conductor RSS (MiB)')
    ax[0][1].legend(fontsize=7)
    ax[1][0].plot(n, [r['seconds'] for r in results], 'o-',
                  label='all CLEANED (s)')
    ax[1][0].plot(n, [r.get('request_to_cleaned', {}).get('p50')
                      for r in results], 's-',
                  label='one migration, p50 (s)')
    ax[1][0].set_title('wall time')
    ax[1][0].legend(fontsize=7)
    for name in sorted({k for r in results for k in r.get('processes', {})
                        if k.startswith('conductor') or k == 'mariadb'}):
        ax[1][1].plot(n, [r['processes'][name]['cpu_pct']
                          for r in results], 'o-', label=name)
    ax[1][1].set_title('CPU (% of one core, mean over the run)')
    ax[1][1].legend(fontsize=7)
    for a in ax[:2].flat:
        a.set_xlabel('concurrent migrations')
        a.set_xscale('log')
        a.grid(alpha=.3)
    for r in results:
        series = r.get('rss_series') or []
        if series:
            ax[2][0].plot([x[0] / 60.0 for x in series],
                          [max(x[1:] or [0]) for x in series],
                          label='%d migrations' % r['migrations'])
    ax[2][0].set_title('largest conductor RSS during the run (MiB)')
    ax[2][0].set_xlabel('minutes since the start')
    ax[2][0].legend(fontsize=7)
    ax[2][0].grid(alpha=.3)
    ax[2][1].plot(n, [60.0 * r['cleaned'] / max(r['seconds'], 1)
                      for r in results], 'o-')
    ax[2][1].set_title('migrations CLEANED per minute')
    ax[2][1].set_xlabel('concurrent migrations')
    ax[2][1].set_xscale('log')
    ax[2][1].grid(alpha=.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print('plot: %s' % path)


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--migrations', type=int, default=100)
    p.add_argument('--curve', help='N,N,...: one run each (overrides '
                                   '--migrations)')
    p.add_argument('--conductors', type=int, default=2)
    p.add_argument('--max-jobs', type=int, default=8,
                   help='[conductor] max_jobs of each conductor.')
    p.add_argument('--api-workers', type=int, default=1,
                   help='fedex-api uwsgi processes (4 threads each).')
    p.add_argument('--api-rate', type=float, default=4.0,
                   help='API requests per second while it runs.')
    p.add_argument('--terminals-per-site', type=int, default=2)
    p.add_argument('--agent-parallel', type=int, default=0,
                   help='Operations each simulated terminal runs at once '
                        '(0: no limit).')
    p.add_argument('--heartbeat-interval', type=int, default=10)
    p.add_argument('--sweep-interval', type=int, default=10)
    p.add_argument('--time-scale', type=float, default=0.05,
                   help='Real seconds per simulated second of the '
                        'terminals, Nova and the courier.')
    p.add_argument('--max-seconds', type=int, default=7200,
                   help='Stop waiting after this long and report how far '
                        'the migrations got.')
    p.add_argument('--ports', type=int, default=PORTS,
                   help='First of the 50 port offsets used.')
    p.add_argument('--plot', help='PNG of the curve.')
    p.add_argument('--plot-from', metavar='JSONL',
                   help='Only draw --plot from the results of earlier '
                        'runs (--json files, comma-separated).')
    p.add_argument('--json', help='Append the results (JSON lines).')
    p.add_argument('--profile', action='store_true',
                   help='Sample the conductors\' stacks '
                        '(profiled_conductor.py; implies --keep).')
    p.add_argument('--keep', action='store_true',
                   help='Keep the run directories (logs).')
    p.add_argument('--destroy', action='store_true',
                   help='Stop the shared services at the end.')
    # The API sampler's own mode (a process of its own).
    p.add_argument('--sample-api', help=argparse.SUPPRESS)
    p.add_argument('--sample-ids', help=argparse.SUPPRESS)
    p.add_argument('--sample-out', help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.sample_api:
        return sampler(args)
    args.keep = args.keep or args.profile
    if args.plot_from:
        results = []
        for path in args.plot_from.split(','):
            with open(path) as f:
                results += [json.loads(line) for line in f if line.strip()]
        return plot(results, args.plot)
    os.environ.setdefault(sandbox_opts.DIR_ENV, DEFAULT_DIR)
    os.environ.setdefault(sandbox_opts.BASE_PORT_ENV, str(DEFAULT_BASE_PORT))
    services = shared.SharedServices.from_env()
    os.makedirs(services.root, exist_ok=True)
    with open(os.path.join(services.root, sandbox_opts.REMEMBERED),
              'w') as f:
        json.dump({'base_port': services.base_port}, f)
    print('shared services in %s (base port %d): %s' % (
        services.root, services.base_port, services.up()), flush=True)
    opts.register_opts(CONF)
    ns = [int(x) for x in args.curve.split(',')] if args.curve else \
        [args.migrations]
    results = []
    try:
        for n in ns:
            run = Run(args, n, services)
            try:
                run.run()
            finally:
                run.cleanup()
            results.append(run.result)
            if args.json:
                with open(args.json, 'a') as f:
                    f.write(json.dumps(run.result) + '\n')
        if args.plot:
            plot(results, args.plot)
    finally:
        if args.destroy:
            services.destroy()
    print(json.dumps(results, indent=1, default=str))


if __name__ == '__main__':
    main()
