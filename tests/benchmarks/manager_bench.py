#!/usr/bin/env python3
"""Benchmarks of the shipment manager on the sandbox (run by hand).

    python tests/benchmarks/manager_bench.py overhead [--size-mib 1024]
    python tests/benchmarks/manager_bench.py many [--count 50]
        [--size-mib 8]

``overhead``: one image (random data, ``--size-mib``) migrated through
fedex-conductor and the terminal agents over RabbitMQ (snapshot, export to
3 devices, seal, the simulated courier with a timetable of zeros, custody
check, import, catch-up round, final delta), then the same steps run
directly with ``lsrp`` (export, seal, verify, import, catchup, catchup
--verify) on the same image in the same run. Prints both times and their
ratio (target <= 1.10).

``many``: ``--count`` migrations of small images created at once, with two
conductors and two terminals per site: all must complete, none lost, no
operation run twice by a terminal; prints the time and the peak RSS of
each service.

The load average is printed at the start and the end: on a shared machine
take the ratio, not the absolute times. Needs ``fedex-sandbox up`` (Ceph,
MariaDB, RabbitMQ, ZooKeeper); uses ports +960..+979 of the sandbox
(``--ports``).
"""

import argparse
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid

from oslo_config import cfg

from fedex_manager.actions import devices as device_actions

from fedex_manager.actions import migrations as migration_actions

from fedex_manager.actions import sites
from fedex_manager.conductor import jobboard
from fedex_manager import context
from fedex_manager.db import api as db
from fedex_manager import jobs
from fedex_manager import opts
from fedex_manager import rpc
from fedex_manager import states
from fedex_sandbox.manager import deploy
from fedex_sandbox import opts as sandbox_opts
from fedex_sandbox import sandbox as sandbox_mod
from lsrp.rbd import Cluster

MiB = 1 << 20
BIN = os.path.dirname(sys.executable)
CONF = cfg.CONF


def load():
    return '%.1f %.1f %.1f' % os.getloadavg()


def rss_mib(pid):
    """Peak resident memory (VmHWM) of a live process, MiB."""
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def children(pid):
    out = []
    try:
        for task in os.listdir('/proc/%d/task' % pid):
            with open('/proc/%d/task/%s/children' % (pid, task)) as f:
                out += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return out


def tree_rss_mib(pid):
    """Peak RSS of a process plus its children (a launcher's daemon)."""
    total = rss_mib(pid)
    try:
        for task in os.listdir('/proc/%d/task' % pid):
            with open('/proc/%d/task/%s/children' % (pid, task)) as f:
                total += sum(tree_rss_mib(int(c)) for c in f.read().split())
    except OSError:
        pass
    return total


def pid_of(path):
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


class Bench(object):

    def __init__(self, args):
        self.args = args
        self.sb = sandbox_mod.Sandbox(os.environ.get(
            sandbox_opts.DIR_ENV, sandbox_opts.DEFAULT_DIR))
        self.tag = 'mb-%s' % uuid.uuid4().hex[:6]
        self.work = tempfile.mkdtemp(prefix='manager-bench-',
                                     dir=os.path.join(self.sb.root))
        endpoints = deploy.shared_endpoints(self.sb.root)
        self.dep = deploy.Deployment(
            self.sb, endpoints, self.tag, self.work,
            {'site-a': self.sb.port(args.ports), 'site-b': self.sb.port(
                args.ports + 1)},
            database='mysql', timetable={'hand_over': 0, 'depart': 0,
                                         'deliver': 0})
        # The engine's default checkpoints, as the direct lsrp run has.
        self.dep.checkpoint_mib = 256
        self.images = []
        self.peaks = {}

    # --- set-up ----------------------------------------------------------------

    def start(self, conductors, terminals_per_site, devices):
        conf = self.dep.db_sync()
        opts.register_opts(CONF)
        CONF(['--config-file', conf], project='fedex-bench')
        db.configure(self.dep.db_url)
        _, self.board = jobboard.install_poster(CONF)
        self.ctx = context.RequestContext(user_id='bench',
                                          project_id='bench')
        for site in ('site-a', 'site-b'):
            s = self.sb.site(site)
            sites.site_register(self.ctx, site, ceph_conf=s.conf,
                                ceph_keyring=s.keyring)
        for i in range(conductors):
            self.dep.start_conductor('conductor-%d' % (i + 1))
        for site in ('site-a', 'site-b'):
            self.dep.make_slots(site, 0)
            self.dep.start_agent(site)
            for n in range(2, terminals_per_site + 1):
                self.extra_agent(site, n)
        self.dep.make_slots('site-a', devices)
        for n in range(2, terminals_per_site + 1):
            self.extra_slots('site-a', n, devices)
        want = 2 * terminals_per_site
        self.dep.wait(lambda: len([
            t for t in sites.terminal_list(self.ctx)
            if t['health'] == 'UP']) == want and len(device_actions.device_list(
                self.ctx, {'state': 'BLANK'})) >= devices *
            terminals_per_site, 300, 'terminals and devices')
        threading.Thread(target=self.watch_rss, daemon=True).start()

    def extra_agent(self, site, n):
        self.dep.start_extra_agent(site, n, self.sb.port(
            self.args.ports + 2 + 2 * (n - 2) + (site == 'site-b')))

    def extra_slots(self, site, n, count):
        slots = self.dep.extra_slots_dir(site, n)
        for _ in range(count):
            os.makedirs(os.path.join(slots, 'usb-%s-%d-%s' % (
                site, n, uuid.uuid4().hex[:8])))

    def shared_pids(self):
        """The sandbox's MariaDB, RabbitMQ and ZooKeeper (pid files)."""
        run = os.path.join(self.sb.root, 'services', 'run')
        out = {}
        for name in ('mariadb', 'rabbitmq', 'zookeeper'):
            pid = pid_of(os.path.join(run, name + '.pid'))
            if pid:
                out[name] = pid
        return out

    def watch_rss(self):
        shared = self.shared_pids()
        while True:
            for name, proc in list(self.dep.processes.items()):
                if proc.alive():
                    self.peaks[name] = max(self.peaks.get(name, 0),
                                           rss_mib(proc.pid))
                    # fedex-conductor's worker (oslo.service forks it);
                    # an agent's children (engine subprocesses), if any.
                    for child in children(proc.pid):
                        key = '%s %s' % (name, 'worker' if name.startswith(
                            'conductor') else 'child')
                        self.peaks[key] = max(self.peaks.get(key, 0),
                                              rss_mib(child))
            for name, pid in shared.items():
                self.peaks[name] = max(self.peaks.get(name, 0),
                                       tree_rss_mib(pid))
            # fedex-api's part (the facade and the poster) runs here.
            self.peaks['bench (facade)'] = rss_mib(os.getpid())
            time.sleep(1)

    def tasks_run_twice(self, migrations):
        """Tasks that finished in two jobs of the same migration.

        From taskflow's logbooks (one per posted phase: phase-id-gen): a
        phase posted again runs its tasks again unless superseded, so a
        (phase, task) with SUCCESS in two logbooks did its work twice.
        """
        ids = {m['id'] for m in migrations}
        done = {}
        backend = jobboard.persistence(CONF)
        with contextlib.closing(backend.get_connection()) as conn:
            for book in conn.get_logbooks():
                phase, _, rest = book.name.partition('-')
                mid = rest.rsplit('-', 1)[0]
                if mid not in ids:
                    continue
                for fd in book:
                    for ad in fd:
                        # (taskflow's injector of the store is no task.)
                        if ad.state == 'SUCCESS' and \
                                not ad.name.startswith('_TaskFlow'):
                            key = (mid, phase, ad.name)
                            done[key] = done.get(key, 0) + 1
        return sorted(k for k, n in done.items() if n > 1)

    def jobs_posted_again(self, migrations):
        """Phases the sweeper posted again (its events)."""
        n = 0
        for m in migrations:
            n += len([e for e in db.events(
                self.ctx, {'migration_id': m['id'], 'kind': 'job'})
                if 'posted as job' in e['message']]) - len(set(
                    e['message'].split()[1] for e in db.events(
                        self.ctx, {'migration_id': m['id'], 'kind': 'job'})
                    if 'posted as job' in e['message']))
        return n

    def make_image(self, size, fill=1.0):
        name = '%s-%d' % (self.tag, len(self.images))
        with Cluster(self.sb.site('site-a').conf,
                     self.sb.site('site-a').keyring) as c, \
                c.pool('vms') as pool:
            pool.create_image(name, size)
            self.images.append(name)
            with pool.open_image(name) as img:
                for off in range(0, int(size * fill), 4 * MiB):
                    img.write(off, os.urandom(min(4 * MiB, size - off)))
        return 'vms/' + name

    def migrate(self, spec, server):
        return migration_actions.migration_create(
            self.ctx, [{'server_id': server, 'volumes': [spec]}], 'site-a',
            'site-b', options={'cutover': 'automatic', 'retention_days': 0,
                               'threshold_bytes': 64 * MiB,
                               'max_rounds': 2})

    def state(self, m):
        return db.get(self.ctx, 'migration', m['id'])['state']

    def cleanup(self):
        self.dep.stop()
        self.board.close()
        jobs.set_poster(None)
        self.dep.drop_database()
        for site in ('site-a', 'site-b'):
            s = self.sb.site(site)
            with Cluster(s.conf, s.keyring) as c, c.pool('vms') as pool:
                for name in self.images + [n + '-direct'
                                           for n in self.images]:
                    if not pool.image_exists(name):
                        continue
                    with pool.open_image(name) as img:
                        for snap in reversed(img.list_snapshots()):
                            if snap.namespace == 'user':
                                if snap.protected:
                                    img.unprotect_snapshot(snap.name)
                                img.remove_snapshot(snap.name)
                    pool.remove_image(name)
        if getattr(self, 'keep', False):
            print('logs kept in %s' % self.work)
        else:
            shutil.rmtree(self.work, ignore_errors=True)

    # --- overhead ----------------------------------------------------------------

    def lsrp(self, site, *args, ceph=True):
        s = self.sb.site(site)
        side = site[-1]
        cmd = [os.path.join(BIN, 'lsrp'),
               '--shipment-state_dir', os.path.join(self.work, 'direct',
                                                    'state-' + side),
               '--shipment-key_dir', os.path.join(self.work, 'direct',
                                                  'keys')]
        cmd += list(args)
        if ceph:
            cmd += ['--ceph-conf', s.conf, '--keyring', s.keyring,
                    '--site', site]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            sys.exit('failed: %s\n%s' % (' '.join(cmd), out.stderr[-2000:]))
        return out.stdout

    def direct(self, spec):
        """The same steps with lsrp; the destination is a server of ours."""
        # A copy of the same data: the manager's run made vms/<name> at B.
        name = spec.split('/')[1]
        ship = name + '-direct'
        a = self.sb.site('site-a')
        subprocess.run(['rbd', '-c', a.conf, '--keyring', a.keyring,
                        '--no-progress', 'cp', spec, 'vms/' + ship],
                       check=True, capture_output=True)
        spec = 'vms/' + ship
        devs = []
        for i in range(3):
            devs += ['--device', os.path.join(self.work, 'direct',
                                              'd%d' % i)]
        a_name, ca, a_cert, a_key = self.sb.terminal('site-a')
        b_name, _, b_cert, b_key = self.sb.terminal('site-b')
        port = self.sb.port(self.args.ports + 10)
        server = subprocess.Popen(
            [os.path.join(BIN, 'lsrp-server'),
             '--shipment-state_dir', os.path.join(self.work, 'direct',
                                                  'state-b'),
             '--shipment-key_dir', os.path.join(self.work, 'direct', 'keys'),
             '--name', b_name, '--server-host', '127.0.0.1',
             '--server-port', str(port), '--tls-ca', ca,
             '--tls-cert', b_cert, '--tls-key', b_key,
             '--ceph-conf', self.sb.site('site-b').conf, '--keyring',
             self.sb.site('site-b').keyring, '--site', 'site-b'],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            begin = time.monotonic()
            self.lsrp('site-a', 'export', spec, '--snapshot', 'seed',
                      '--create-snapshot', '--shipment-id', ship,
                      '--progress', 'none', *devs)
            digest = self.lsrp('site-a', 'seal', '--shipment-id', ship,
                               ceph=False).split()[-1]
            self.lsrp('site-b', 'verify', '--expect-digest', digest, *devs,
                      ceph=False)
            self.lsrp('site-b', 'import', '--expect-digest', digest,
                      '--pool-map', 'vms=vms', '--progress', 'none', *devs)
            for extra in ([], ['--verify']):
                self.lsrp('site-a', 'catchup', '--shipment-id', ship,
                          '--base', 'seed', '--server', '127.0.0.1:%d' %
                          port, '--server-name', b_name, '--name', a_name,
                          '--tls-ca', ca, '--tls-cert', a_cert,
                          '--tls-key', a_key, '--max-rounds', '1', spec,
                          *extra)
            return time.monotonic() - begin
        finally:
            server.terminate()
            server.wait()

    def overhead(self):
        self.start(1, 1, 3)
        spec = self.make_image(self.args.size_mib * MiB)
        begin = time.monotonic()
        m = self.migrate(spec, 'bench-vm')
        self.dep.wait(lambda: self.state(m) in (
            states.COMPLETED, states.CLEANED, states.FAILED), 3600,
            'the migration')
        managed = time.monotonic() - begin
        if self.state(m) == states.FAILED:
            sys.exit('FAILED: %s' % db.get(self.ctx, 'migration',
                                           m['id'])['last_error'])
        print('manager: %.1f s from request to COMPLETED (%d MiB)' % (
            managed, self.args.size_mib))
        self.timeline(m)
        direct = self.direct(spec)
        print('direct : %.1f s (lsrp export, seal, verify, import, '
              'catchup, catchup --verify)' % direct)
        print('ratio manager/direct: %.2f (target <= 1.10)'
              % (managed / direct))

    def timeline(self, m):
        """Where the manager's time went: terminal work vs the rest."""
        m = db.get(self.ctx, 'migration', m['id'])
        t0 = db.utcfromiso(m['created_at'])

        def at(iso):
            return (db.utcfromiso(iso) - t0).total_seconds()
        ops = sorted(db.list_(self.ctx, 'operation',
                              {'migration_id': m['id']}),
                     key=lambda o: o['created_at'])
        rows = [(at(o['created_at']), 'op %-14s %6.1f s' % (
            o['kind'], at(o['updated_at']) - at(o['created_at'])))
            for o in ops]
        rows += [(at(e['created_at']), '%s -> %s' % (e['from_state'],
                                                     e['to_state']))
                 for e in db.events(self.ctx, {'migration_id': m['id']})
                 if e['to_state'] and e['resource_id'] == m['id']]
        for t, text in sorted(rows):
            print('  +%7.1f %s' % (t, text))
        busy = sum(at(o['updated_at']) - at(o['created_at']) for o in ops)
        end = max(at(o['updated_at']) for o in ops)
        print('terminal operations: %.1f s; the rest (RPC, polling, '
              'phases, courier): %.1f s' % (busy, end - busy))

    # --- many ------------------------------------------------------------------

    def many(self):
        count = self.args.count
        # Each migration takes 2 devices (parity 0) from its terminal, and
        # they go to site-b for good. Migrations created at once split
        # between the two source terminals at random (30/20 in one run):
        # devices for all of them at each, none waits for devices.
        self.start(2, 2, 2 * count)
        specs = [self.make_image(self.args.size_mib * MiB, 0.5)
                 for _ in range(count)]
        begin = time.monotonic()
        migrations = []
        threads = []
        for i, spec in enumerate(specs):
            def create(spec=spec, i=i):
                migrations.append(migration_actions.migration_create(
                    self.ctx, [{'server_id': 'bench-vm-%d' % i,
                                'volumes': [spec]}], 'site-a', 'site-b',
                    options={'cutover': 'automatic', 'retention_days': 0,
                             'threshold_bytes': 64 * MiB, 'max_rounds': 2,
                             'parity': 0}))
            threads.append(threading.Thread(target=create))
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if len(migrations) != count:
            sys.exit('only %d of %d migrations were created'
                     % (len(migrations), count))

        last = [0.0]

        def done():
            got = [self.state(m) for m in migrations]
            if time.monotonic() - last[0] >= 30:
                # Where they are, now and then (a run stopped before its end
                # still says how far it got).
                last[0] = time.monotonic()
                counts = {}
                for s in got:
                    counts[s] = counts.get(s, 0) + 1
                print('%s +%4.0f s  %s  (load %s)' % (
                    time.strftime('%H:%M:%S', time.gmtime()),
                    time.monotonic() - begin, ', '.join(
                        '%s %d' % kv for kv in sorted(counts.items())),
                    load()), flush=True)
            failed = [m['id'] for m, s in zip(migrations, got)
                      if s == states.FAILED]
            if failed:
                self.keep = True
                sys.exit('FAILED: %s' % '\n'.join(
                    '%s in %s: %s' % (mid, mm['failed_in'], mm['last_error'])
                    for mid in failed
                    for mm in [db.get(self.ctx, 'migration', mid)]))
            return all(s in (states.COMPLETED, states.CLEANED) for s in got)
        try:
            self.dep.wait(done, self.args.max_seconds, 'all migrations',
                          interval=2)
        except Exception:
            self.keep = True
            self.print_peaks()
            raise
        took = time.monotonic() - begin
        twice = []
        for m in migrations:
            for op in db.list_(self.ctx, 'operation',
                               {'migration_id': m['id']}):
                term = db.get(self.ctx, 'terminal', op['terminal'])
                rec = rpc.TerminalAPI(term['rpc_topic']).status(op['id'])
                if rec.get('attempts', 1) != 1:
                    twice.append(op['id'])
        by_terminal = {}
        for m in migrations:
            m = db.get(self.ctx, 'migration', m['id'])
            by_terminal.setdefault(m['source_terminal_id'], 0)
            by_terminal[m['source_terminal_id']] += 1
        print('%d migrations of %d MiB: all COMPLETED in %.1f s; operations '
              'started twice by a terminal: %d %s' % (
                  count, self.args.size_mib, took, len(twice), twice[:5]))
        print('migrations per source terminal: %s' % sorted(
            by_terminal.values()))
        twice = self.tasks_run_twice(migrations)
        print('tasks finished twice (taskflow logbooks): %d %s' % (
            len(twice), twice[:5]))
        print('phases posted more than once: %d'
              % self.jobs_posted_again(migrations))
        self.print_peaks()

    def print_peaks(self):
        for name, peak in sorted(self.peaks.items()):
            print('peak RSS %-22s %6.0f MiB' % (name, peak))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('mode', choices=('overhead', 'many'))
    parser.add_argument('--size-mib', type=int, default=None)
    parser.add_argument('--count', type=int, default=50)
    parser.add_argument('--ports', type=int, default=960,
                        help='First of the 20 port offsets used (two '
                             'benchmarks at once: 960 and 980).')
    parser.add_argument('--max-seconds', type=int, default=7200,
                        help='many: give up (and clean up) after this long.')
    args = parser.parse_args()
    bench = Bench(args)
    print('load average at start: %s' % load())
    try:
        if args.mode == 'overhead':
            args.size_mib = args.size_mib or 1024
            bench.overhead()
        else:
            args.size_mib = args.size_mib or 8
            bench.many()
    finally:
        print('load average at end: %s' % load())
        bench.cleanup()


if __name__ == '__main__':
    main()
