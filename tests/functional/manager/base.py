"""A manager deployment on the sandbox, conductors and agents as processes.

Real MariaDB, RabbitMQ, ZooKeeper and Ceph.

Each test class gets its own database, messaging exchange and ZooKeeper
path; the sandbox's shared services are started by the sandbox's own code.
"""

import json
import os
import threading
import uuid

from oslo_config import cfg

from fedex_manager.actions import cutover as cutover_actions
from fedex_manager.actions import devices as device_actions
from fedex_manager.actions import events as event_actions
from fedex_manager.actions import migrations
from fedex_manager.actions import shipping
from fedex_manager.actions import sites as site_actions
from fedex_manager.conductor import jobboard
from fedex_manager import context
from fedex_manager.db import api as db
from fedex_manager import jobs
from fedex_manager import keys
from fedex_manager import opts
from fedex_manager import rpc
from fedex_manager import states
from fedex_sandbox import demo
from fedex_sandbox.manager import deploy
from lsrp import exception
from tests.functional import base

CONF = cfg.CONF
MiB = 1 << 20


class ManagerTestCase(base.FunctionalTestCase):
    """Starts nothing by itself: tests say which processes they need."""

    database = 'mysql'

    def setUp(self):
        super().setUp()
        self.id_ = uuid.uuid4().hex[:8]
        work = os.path.join(base.SANDBOX_DIR, 'manager-tests',
                            'm-%s' % self.id_)
        endpoints = deploy.shared_endpoints(base.SANDBOX_DIR)
        # Our own ports: the tests' range of the sandbox (+600..+999).
        slot = base.reserve_slot(self, 'deployment', 150)
        ports = {'site-a': self.sandbox.port(600 + 2 * slot),
                 'site-b': self.sandbox.port(601 + 2 * slot)}
        self.dep = deploy.Deployment(self.sandbox, endpoints,
                                     'mt-%s' % self.id_, work, ports,
                                     database=self.database)
        self.addCleanup(self.dep.drop_database)
        self.addCleanup(self.dep.stop)
        self.dep.key_manager = self.key_manager()
        conf = self.dep.db_sync()
        opts.register_opts(CONF)
        CONF(['--config-file', conf], project='fedex-test')
        self.addCleanup(CONF.reset)
        db.configure(self.dep.db_url)
        backend, board = jobboard.install_poster(CONF)
        self.board = board
        self.addCleanup(board.close)
        self.addCleanup(jobs.set_poster, None)
        self.ctx = context.RequestContext(user_id='tester',
                                          project_id='p-test')
        for site in ('site-a', 'site-b'):
            s = self.sandbox.site(site)
            site_actions.site_register(self.ctx, site, ceph_conf=s.conf,
                                       ceph_keyring=s.keyring)

    def key_manager(self):
        """castellan's sections per role, or None: the file key store."""
        return None

    def start_terminals(self, devices=3):
        self.serials = self.dep.make_slots('site-a', devices)
        for site in ('site-a', 'site-b'):
            self.dep.start_agent(site)
        self.dep.wait(lambda: len(device_actions.device_list(
            self.ctx, {'state': 'BLANK'})) >= devices and all(
            t['health'] == 'UP' for t in site_actions.terminal_list(self.ctx))
            and len(site_actions.terminal_list(self.ctx)) == 2, 60,
            'the terminals and their devices')

    def vm(self, sizes=(64 * MiB, 32 * MiB), write_rate=256 << 10):
        """A "VM": images with data at site-a and a writer on them."""
        specs = []
        for size in sizes:
            pool, name = self.new_image(size)
            with pool.open_image(name) as img:
                for off in range(0, size // 2, 4 * MiB):
                    img.write(off, os.urandom(1 * MiB))
            specs.append('vms/%s' % name)
            self.addCleanup(self._remove_image, 'site-b', 'vms', name)
        writer = demo.Writer(self.sites['site-a'], specs, write_rate)
        writer.start()

        def stop():
            writer.stopped.set()
            writer.resume()
            writer.join()
        self.addCleanup(stop)
        return specs, writer

    # Retention 1 day: the test compares the sites at the final snapshot,
    # then cleans up (migration_cleanup).
    OPTIONS = {'cutover': 'approved', 'retention_days': 1,
               'threshold_bytes': 4 * MiB, 'max_rounds': 4,
               'keep_warm_seconds': 3600}

    def request(self, specs, server):
        """One server's migration request, as a wave's member."""
        return {'servers': [{'server_id': server, 'volumes': specs}],
                'source_site': 'site-a', 'dest_site': 'site-b',
                'options': dict(self.OPTIONS)}

    def migrate(self, specs, server=None, dest_terminal=None, **options):
        opts_ = dict(self.OPTIONS, **options)
        return migrations.migration_create(
            self.ctx, [{'server_id': server or 'vm-%s' % self.id_,
                        'volumes': specs}], 'site-a', 'site-b',
            options=opts_, dest_terminal=dest_terminal)

    def start_second_terminal(self, site):
        """``terminal-<site>-2``: a second terminal at ``site``, UP."""
        # Ports +920..+959 of the sandbox (the tests' range, shared out in
        # tests/functional/base.py; the benchmark's is +960..+999).
        self.dep.start_extra_agent(site, 2, self.sandbox.port(
            920 + base.reserve_slot(self, 'second-terminal', 40)))
        name = 'terminal-%s-2' % site
        # Stopped before its port's slot is released (cleanups run last
        # added first).
        self.addCleanup(self.dep.processes[name].stop)
        # Its agent and lsrp-server start in ~40 s here, more when CI runs
        # the mini-cloud's tests beside these.
        self.dep.wait(lambda: any(
            t['name'] == name and t['health'] == 'UP'
            for t in site_actions.terminal_list(self.ctx)), 180, name)
        return name

    def state(self, m):
        return db.get(self.ctx, 'migration', m['id'])['state']

    def wait_state(self, m, wanted, timeout=180):
        wanted = (wanted,) if isinstance(wanted, str) else wanted

        def check():
            s = self.state(m)
            if s == states.FAILED and states.FAILED not in wanted:
                raise AssertionError('migration FAILED: %s\n%s' % (
                    db.get(self.ctx, 'migration', m['id'])['last_error'],
                    self.logs()))
            return s in wanted and s
        try:
            return self.dep.wait(check, timeout, ' or '.join(wanted))
        except Exception as e:
            if isinstance(e, AssertionError):
                raise
            raise AssertionError('%s; state %s\n%s' % (e, self.state(m),
                                                       self.logs()))

    def wait_op(self, m, kind, state='RUNNING', timeout=120):
        def check():
            ops = [o for o in db.list_(self.ctx, 'operation',
                                       {'migration_id': m['id'],
                                        'kind': kind})
                   if o['state'] == state]
            return ops and ops[0]
        return self.dep.wait(check, timeout, '%s %s' % (kind, state),
                             interval=0.1)

    def owner_of_job(self, m):
        """The conductor that holds the migration's job (its name)."""
        mid = db.get(self.ctx, 'migration', m['id'])
        for job in self.board.iterjobs(ensure_fresh=True):
            if (job.details or {}).get('migration_id') == mid['id'] and \
                    job.details.get('generation') == mid['generation']:
                return self.board.find_owner(job)
        return None

    def cut_over(self, m, writer):
        """What Nova does: pause the VM, let the final delta run."""
        writer.pause()
        cutover_actions.migration_approve_cutover(self.ctx, m['id'])
        cutover_actions.migration_cutover_start(self.ctx, m['id'])
        self.wait_state(m, states.COMPLETED)

    def assert_converged(self, m):
        m = db.get(self.ctx, 'migration', m['id'])
        snap = m['last_snapshot']
        a, b = self.sandbox.site('site-a'), self.sandbox.site('site-b')
        for v in m['volumes']:
            src = a.export_sha256('%s@%s' % (v['source_image'], snap))
            dst = b.export_sha256('%s@%s' % (v['dest_image'], snap))
            self.assertEqual(src, dst, '%s@%s differs' % (
                v['source_image'], snap))
        return m

    def agent_attempts(self, m, kind):
        """{op id: how many times the terminal really started it}."""
        out = {}
        for op in db.list_(self.ctx, 'operation',
                           {'migration_id': m['id'], 'kind': kind}):
            term = db.get(self.ctx, 'terminal', op['terminal'])
            out[op['id']] = rpc.TerminalAPI(term['rpc_topic']).status(
                op['id'])['attempts']
        return out

    def courier_plan(self, shipment, plan):
        """What the simulated courier does with a shipment.

        A shipment dispatched already (a small export is over in a second
        or two) keeps its dispatch time, tracking number, the events sent
        and the timetable and fate it was dispatched with unless ``plan``
        names them: only what the courier will do changes.
        """
        path = os.path.join(self.dep.work, 'courier',
                            shipment['name'] + '.json')
        os.makedirs(os.path.dirname(path), exist_ok=True)
        try:
            with open(path) as f:
                done = json.load(f)
        except (OSError, ValueError):
            done = {}
        plan = dict(done, **plan)
        plan.update({k: done[k] for k in ('dispatched_at', 'tracking', 'sent')
                     if k in done})
        with open(path + '.tmp', 'w') as f:
            json.dump(plan, f)
        os.replace(path + '.tmp', path)

    def wait_shipment(self, m, state=None, exclude=(), timeout=180):
        """The migration's shipment (not one of ``exclude``), in ``state``.

        ``state`` may be a tuple: a state the shipment can leave within
        one poll (DELIVERED, verified as soon as its devices are in) is
        waited for with the states that follow it.
        """
        wanted = (state,) if isinstance(state, str) else state

        def check():
            for s in shipping.shipment_list(self.ctx):
                if s['name'].startswith('fedex-%s-' % m['id'].split('-')[0])\
                        and s['id'] not in exclude and \
                        (wanted is None or s['state'] in wanted):
                    return s
        return self.dep.wait(check, timeout, 'a shipment of %s%s' % (
            m['id'], ' in %s' % ' or '.join(wanted) if wanted else ''))

    def key_destroyed(self, s):
        self.assertRaises(exception.KeyManagerError, keys.get_store().get,
                          s['key_ref'])

    def assert_no_snapshots_of_ours(self, specs, site='site-a'):
        with self.sites[site].pool('vms') as pool:
            for spec in specs:
                with pool.open_image(spec.split('/')[1]) as img:
                    self.assertEqual([], [x.name for x in
                                          img.list_snapshots()
                                          if x.name.startswith('fedex-')])

    def running(self, conductors=('conductor-1',), sizes=None, devices=3,
                **options):
        """Conductors, both terminals, a writing VM and its migration.

        The set-up every test starts from; returns (specs, writer, m).
        """
        for name in conductors:
            self.dep.start_conductor(name)
        self.start_terminals(devices)
        specs, writer = self.vm(sizes) if sizes else self.vm()
        return specs, writer, self.migrate(specs, **options)

    def assert_cleaned_up_after_abort(self, specs):
        """What an abort leaves: nothing of ours.

        The shipment erased, its key destroyed, devices BLANK and wiped, no
        snapshot of ours at the source.
        """
        s = shipping.shipment_list(self.ctx)[0]
        self.assertEqual('ERASED', s['state'])
        self.key_destroyed(s)
        for d in device_actions.device_list(self.ctx):
            self.assertEqual('BLANK', d['state'])
            self.assertEqual([], os.listdir(d['path']))
        self.assert_no_snapshots_of_ours(specs)

    def logs(self):
        return '\n'.join('--- %s\n%s' % (p.name, p.tail(15))
                         for p in self.dep.processes.values())

    def events(self, m):
        return [e['message'] for e in event_actions.events_query(
            self.ctx, migration=m['id'], limit=1000)]


def in_thread(fn):
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    return t
