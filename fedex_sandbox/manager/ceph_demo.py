"""``fedex-sandbox demo``: a writing VM's disks moved by the manager.

The same story as before, but nothing here calls a step: one request to
the manager's facade, and the conductor and the terminal agents of the
sandbox do the rest (snapshot, export, seal, the simulated courier,
custody check, import, catch-up rounds, final delta at the cutover,
crypto-erase). The demo prints the migration's events (state changes,
progress) as they happen, plays Nova at the cutover (pauses the writer),
then checks both sites with ``rbd export | sha256sum``. Once cleaned up,
it follows the devices home: wiped at site B, handed to the courier back
to site A, BLANK there again, for the next run (``demo_devices``).
"""

import os
import time
import uuid

from fedex_manager.actions import cutover as cutover_actions
from fedex_manager.actions import events as event_actions
from fedex_manager.actions import lifecycle
from fedex_manager.actions import migrations
from fedex_manager.actions import sites as site_actions
from fedex_manager import context
from fedex_manager.db import api as db
from fedex_manager import states
from fedex_sandbox import demo as direct_demo
from fedex_sandbox import manager as sandbox_mod
from fedex_sandbox.manager import demo_devices
from fedex_sandbox.manager import event_follower
from lsrp import exception
from lsrp.rbd import Cluster

MiB = 1 << 20


class ManagerDemo(object):

    def __init__(self, sb, disk_mib=256, write_rate=1 << 20,
                 threshold_mib=2, out=print, timeout=900):
        self.sb = sb
        self.disk_mib = disk_mib
        self.write_rate = write_rate
        self.threshold = int(threshold_mib * MiB)
        self.out = out
        self.timeout = timeout
        self.id = uuid.uuid4().hex[:8]
        self.specs = ['vms/demo-%s-disk0' % self.id,
                      'vms/demo-%s-disk1' % self.id]

    def _connect(self):
        mgr = sandbox_mod.SandboxManager(self.sb)
        self.backend, self.board = mgr.connect('fedex-demo')
        self.ctx = context.RequestContext(user_id='demo', project_id='demo')
        self.events = event_follower.EventFollower(self.ctx, self.out)

    def _images(self):
        a = self.sb.site('site-a')
        self.ca = Cluster(a.conf, a.keyring, site='site-a')
        self.ca.connect()
        direct_demo.make_vm_disks(self.ca, self.specs, self.disk_mib)

    def _wait(self, m, wanted):
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            self.events.show(m['id'])
            cur = db.get(self.ctx, 'migration', m['id'])
            if cur['state'] in wanted:
                return cur
            if cur['state'] == states.FAILED:
                raise exception.ManagerError(
                    reason='migration %s FAILED: %s' % (cur['id'],
                                                        cur['last_error']))
            time.sleep(0.5)
        raise exception.ManagerError(reason='demo: no %s after %d s' % (
            ' or '.join(wanted), self.timeout))

    def _ready_terminals(self):
        # Every terminal the sandbox runs (fedex-sandbox up
        # --terminals-per-site): the manager may give the migration to any.
        names = set(sandbox_mod.SandboxManager(self.sb).terminal_names())
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            terms = site_actions.terminal_list(self.ctx)
            if names <= {t['name'] for t in terms if t['health'] == 'UP'}:
                break
            time.sleep(0.5)
        else:
            raise exception.ManagerError(
                reason='the terminals of the sandbox did not report; see %s'
                % sandbox_mod.SandboxManager(self.sb).log_dir)
        # Blank devices at site A: those of an earlier run, back home with
        # the courier, or new ones.
        demo_devices.ready(self.ctx, sandbox_mod.SandboxManager(self.sb).dep,
                           'site-a', sandbox_mod.DEVICES_PER_SITE, self.out)

    def run(self):
        self._connect()
        self._ready_terminals()
        self._images()
        writer = direct_demo.Writer(self.ca, self.specs, self.write_rate)
        writer.start()
        begin = time.monotonic()
        try:
            return self._run(writer, begin)
        finally:
            writer.stopped.set()
            writer.resume()
            writer.join()
            self.ca.close()
            self.board.close()

    def _run(self, writer, begin):
        out = self.out
        # Images with no server: no Nova at the cutover, even in a
        # sandbox whose conductor drives the mini-cloud's Nova.
        m = migrations.migration_create(
            self.ctx, None, 'site-a', 'site-b',
            volumes=[{'source_image': spec} for spec in self.specs],
            name='demo-%s' % self.id,
            options={'cutover': 'approved', 'retention_days': 1,
                     'threshold_bytes': self.threshold, 'max_rounds': 6})
        out('demo %s: migration %s of %s' % (self.id, m['id'],
                                             ', '.join(self.specs)))
        m = self._wait(m, (states.READY_FOR_CUTOVER,))
        out('  ready for cutover after %.1f s; cutover: the VM pauses'
            % (time.monotonic() - begin))
        paused = time.monotonic()
        writer.pause()
        cutover_actions.migration_approve_cutover(self.ctx, m['id'])
        cutover_actions.migration_cutover_start(self.ctx, m['id'])
        m = self._wait(m, (states.COMPLETED,))
        pause = time.monotonic() - paused
        a, b = self.sb.site('site-a'), self.sb.site('site-b')
        equal = all(
            a.export_sha256('%s@%s' % (v['source_image'], m['last_snapshot']))
            == b.export_sha256('%s@%s' % (v['dest_image'],
                                          m['last_snapshot']))
            for v in m['volumes'])
        # Compared: now the cleanup, without waiting for the retention.
        serials = demo_devices.serials_of(self.ctx, m)
        after = demo_devices.last_event(self.ctx)
        lifecycle.migration_cleanup(self.ctx, m['id'])
        m = self._wait(m, (states.CLEANED,))
        # The devices' trip home: wiped at B, the courier, BLANK at A.
        home = demo_devices.follow_home(self.ctx, serials, after, self.out)
        shown = migrations.migration_show(self.ctx, m['id'])
        ship = shown['shipments'][0] if shown['shipments'] else {}
        exported = [o for o in shown['operations'] if o['kind'] == 'export']
        rounds = [e for e in event_actions.events_query(
            self.ctx, migration=m['id'], kind='progress', limit=1000)
            if (e.get('details') or {}).get('wire_bytes') is not None]
        summary = {
            'migration': m['id'], 'shipment': ship.get('name'),
            'tracking': ship.get('tracking_number'), 'images': self.specs,
            'bytes_shipped': sum(o['bytes_done'] for o in exported),
            'bytes_over_wan': sum(e['details']['wire_bytes']
                                  for e in rounds),
            'rounds': m['rounds'], 'final_snapshot': m['last_snapshot'],
            'pause_seconds': round(pause, 2),
            'seconds': round(time.monotonic() - begin, 1),
            'written_during_migration': writer.written,
            'destination_equals_source': equal, 'state': m['state'],
            'devices': serials, 'devices_home': home}
        out('destination == source at %s (rbd export | sha256sum, both '
            'disks): %s' % (m['last_snapshot'], 'yes' if equal else 'NO'))
        return summary

    def cleanup(self):
        direct = direct_demo.Demo(self.sb)
        direct.specs = self.specs
        direct.work = os.path.join(self.sb.root, 'demo-%s' % self.id)
        direct.cleanup()
