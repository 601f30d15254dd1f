"""``fedex-sandbox demo``: a real Nova server and its Cinder volume moved.

On the sandbox's mini-cloud, through the cloud's own services only (its
Nova, Cinder, fedex-api; the sandbox's conductor and terminal agents):

1. a 1 GiB volume created through Cinder at site A, with 48 MiB of data
   (what a full copy would put on the WAN);
2. the tiny guest booted through Nova on a site-A host with an rbd root
   disk, the volume attached; its init writes a counter every 100 ms
   to both;
3. ``openstack server migrate --live-migration --fedex --host site-b-h1
   --cutover automatic --wait``: seed on devices, simulated courier,
   import, WAN catch-up, then nova_fedex's cutover (memory copy, guest
   paused at B, final delta, resume); the migration's state changes and
   progress are printed as they happen;
4. the report: bytes shipped and over the WAN, rounds, the guest's pause
   (seen from outside by polling its counter at both sites, and in the
   guest's own clock), the server ACTIVE on its site-B host, the volume
   owned by site B's backend, and ``rbd export | sha256sum`` of root disk
   and volume at B equal to A's final state;
5. at its clean-up, the devices' trip home: wiped at B, the courier, BLANK
   at A again, where the next run finds them (``demo_devices``).
"""

import hashlib
import os
import subprocess
import threading
import time
import uuid

from fedex_manager.actions import events as event_actions
from fedex_manager.actions import lifecycle
from fedex_manager.actions import migrations
from fedex_manager.actions import sites as site_actions
from fedex_manager import context
from fedex_manager.db import api as db
from fedex_manager import states
from fedex_sandbox import manager as sandbox_mod
from fedex_sandbox.manager import demo_devices
from fedex_sandbox.manager import event_follower
from fedex_sandbox import relay
from fedex_sandbox.services import guest_reader
from fedex_sandbox import wan
from lsrp import exception
from lsrp.rbd import Cluster
from lsrp.server import records

MiB = 1 << 20
SITE_A_HOST = 'site-a-h1'
SITE_B_HOST = 'site-b-h1'
# The volume's data, past the guest's tick ring (1 MiB + 128 KiB).
FILL_OFFSET = 4 * MiB


def say(text):
    # Line by line even into a pipe or a file: the events as they happen.
    print(text, flush=True)


class CloudDemo(object):
    """One run of the demo; ``run()`` returns the report (a dict)."""

    def __init__(self, sb, fill_mib=48, out=say, timeout=1800, **_ignored):
        self.sb = sb
        self.cloud = sb.cloud()
        self.fill = fill_mib * MiB
        self.out = out
        self.timeout = timeout
        self.id = uuid.uuid4().hex[:8]
        self.server_id = self.volume_id = self.migration_id = None

    # --- plumbing -----------------------------------------------------------

    def _connect(self):
        mgr = sandbox_mod.SandboxManager(self.sb)
        if not mgr.drives_nova():
            raise exception.SandboxError(
                reason='the sandbox has no mini-cloud: run fedex-sandbox up '
                       '--openstack (tools/install.sh --openstack first)')
        self.dep = mgr.dep
        self.backend, self.board = mgr.connect('fedex-demo')
        self.ctx = context.admin('fedex-demo')
        self.events = event_follower.EventFollower(self.ctx, self.out)
        self.clusters = {}
        for name in ('site-a', 'site-b'):
            s = self.sb.site(name)
            c = Cluster(s.conf, s.keyring, site=name,
                        options={'rbd_cache': 'false'})
            c.connect()
            self.clusters[name] = c

    def _close(self):
        for c in getattr(self, 'clusters', {}).values():
            c.close()
        if getattr(self, 'board', None) is not None:
            self.board.close()

    def os(self, *args, timeout=600):
        return self.cloud.openstack(*args, timeout=timeout)

    def _wait(self, what, fn, timeout=300, interval=2):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = fn()
            if value:
                return value
            time.sleep(interval)
        raise exception.SandboxError(reason='demo: %s not within %d s' % (
            what, timeout))

    def _volume(self, status):
        v = self.os('volume', 'show', self.volume_id)
        if v['status'] == 'error':
            raise exception.SandboxError(reason='demo: volume %s in error'
                                         % self.volume_id)
        return v['status'] == status and v

    def reader(self, site, pool, image):
        return guest_reader.GuestReader(
            self.clusters[site].pool(pool).ioctx, image)

    def _ready_terminals(self):
        """The terminals UP, site A's with their blank devices (the seed).

        The devices of an earlier run come home with the courier once
        wiped; new ones are made only when too few exist.
        """
        # Every terminal the sandbox runs (fedex-sandbox up
        # --terminals-per-site): the manager may give the migration to any.
        names = set(sandbox_mod.SandboxManager(self.sb).terminal_names())

        def ready():
            return names <= {t['name'] for t in site_actions.terminal_list(
                self.ctx) if t['health'] == 'UP'}
        self._wait('the terminals of the sandbox UP', ready, 120, 0.5)
        demo_devices.ready(self.ctx, self.dep, 'site-a',
                           sandbox_mod.DEVICES_PER_SITE, self.out)

    # --- the story ----------------------------------------------------------

    def run(self):
        self._connect()
        try:
            return self._run()
        finally:
            self._close()

    def _run(self):
        out = self.out
        begin = time.monotonic()
        self._ready_terminals()
        vol = self.os('volume', 'create', '--size', '1',
                      '--availability-zone', 'site-a', '--type', 'ceph',
                      'demo-vol-%s' % self.id)
        self.volume_id = vol['id']
        self._wait('volume available', lambda: self._volume('available'))
        fill = hashlib.sha256()
        with self.clusters['site-a'].pool('volumes') as pool:
            with pool.open_image('volume-%s' % self.volume_id) as img:
                for off in range(0, self.fill, 4 * MiB):
                    data = os.urandom(4 * MiB)
                    fill.update(data)
                    img.write(FILL_OFFSET + off, data)
        out('volume %s at site A (cinder@site-a#ceph), %d MiB of data '
            'written' % (self.volume_id, self.fill // MiB))
        server = self.os('server', 'create', '--flavor', 'm1.mini',
                         '--image', 'guest', '--nic', 'none',
                         '--availability-zone', 'site-a:%s' % SITE_A_HOST,
                         '--wait', 'demo-%s' % self.id)
        self.server_id = sid = server['id']
        self.cloud.openstack_plain('server', 'add', 'volume', sid,
                                   self.volume_id)
        self._wait('volume in-use', lambda: self._volume('in-use'))
        root = '%s_disk' % sid
        vname = 'volume-%s' % self.volume_id
        root_a = self.reader('site-a', 'vms', root)
        vol_a = self.reader('site-a', 'volumes', vname)
        for r in (root_a, vol_a):
            r.wait_advancing(ticks=20, timeout=300)
        out('server %s ACTIVE on %s, rbd root disk vms/%s, volume attached; '
            'the guest writes its counter to both (tick %d)' % (
                sid, SITE_A_HOST, root, root_a.last().counter))

        # The guest's counter, polled from outside at both sites: the
        # longest silence across the cutover is its pause.
        # One process per site (guest_reader.PollerProcess: librbd polled
        # from threads of this process crashed a benchmark); B's waits for
        # its image's import.
        poll_a, poll_b = pollers = [
            guest_reader.PollerProcess(self.sb.site(site).conf, 'vms', root,
                                       timeout=self.timeout)
            for site in ('site-a', 'site-b')]
        argv = ['server', 'migrate', '--live-migration', '--fedex',
                '--host', SITE_B_HOST, '--cutover', 'automatic', '--wait',
                sid]
        out('$ openstack %s' % ' '.join(argv))
        link = wan.SandboxWan(self.sb)
        wan_before = wan.by_path(link.stats())
        started = time.monotonic()
        try:
            code, cli_out = self._follow(argv)
        finally:
            for poller in pollers:
                poller.stop()
        took = time.monotonic() - started
        if self.migration_id is None:
            raise exception.SandboxError(reason='demo: no migration was '
                                         'created: %s' % cli_out[-800:])
        m = db.get(self.ctx, 'migration', self.migration_id)
        # The relay writes its counters every second.
        time.sleep(relay.STATS_INTERVAL + 0.2)
        per_path = wan.difference(wan_before, wan.by_path(link.stats()))
        shown = self.os('server', 'show', sid)
        volume = self.os('volume', 'show', self.volume_id)

        # The guest runs at B: its counter goes on past A's last tick.
        root_b = self.reader('site-b', 'vms', root)
        last_a = poll_a.changes[-1][1] if poll_a.changes else None
        alive = None
        if shown['status'] == 'ACTIVE':
            try:
                alive = root_b.wait_advancing(ticks=20, timeout=120).counter
            except AssertionError as e:
                out('  ! %s' % e)
        arrived = [t for t, c in poll_b.changes
                   if last_a is not None and c > last_a]
        pause = (arrived[0] - poll_a.changes[-1][0]) if arrived else None
        ring = root_b.read_ring()
        guest_gap = guest_reader.GuestReader.largest_guest_gap(ring)
        ticks_kept = [t.counter for t in ring] == list(
            range(ring[0].counter, ring[-1].counter + 1)) if ring else False

        # Bit-exact: A's images (the source QEMU stopped: final) against
        # B's state at the resume: the record the destination terminal
        # wrote of it after the final delta (lsrp.server.records).
        final = 'fedex-final-%s' % m['id'][:8]
        equal = {}
        for label, spec in (('root', 'vms/%s' % root),
                            ('volume', 'volumes/%s' % vname)):
            a = self.sb.site('site-a').export_sha256(spec)
            b = self.sb.site('site-b').export_sha256(
                records.record_spec(spec, final))
            equal[label] = a == b
            out('  sha256 %-6s A %s  B %s %s  %s' % (
                label, a[:16], records.record_spec(spec, final), b[:16],
                'equal' if a == b else 'DIFFER'))
        # nova_fedex's own comparison after the resume (whole images, A's
        # final state against B's at the resume): its event.
        checked = self._final_state_event(m)
        out('  nova_fedex after the resume: %s' % checked)
        detail = migrations.migration_show(self.ctx, m['id'], events_limit=0)
        exported = [o for o in detail['operations'] if o['kind'] == 'export']
        report = {
            'migration': m['id'], 'state': m['state'],
            'server': sid, 'server_status': shown['status'],
            'server_host': shown['OS-EXT-SRV-ATTR:host'],
            'server_zone': shown.get('OS-EXT-AZ:availability_zone'),
            'volume': self.volume_id, 'volume_status': volume['status'],
            'volume_host': volume['os-vol-host-attr:host'],
            'volume_zone': volume['availability_zone'],
            'bytes_shipped': sum(o['bytes_done'] or 0 for o in exported),
            'bytes_over_wan': self.wan_bytes(m),
            # What crossed the emulated WAN during the migrate command,
            # per path (the relay's counters; both directions).
            'wan_bytes_per_path': per_path,
            'wan': link.settings(),
            'volume_data_bytes': self.fill,
            'rounds': m['rounds'],
            'pause_seconds': round(pause, 3) if pause is not None else None,
            'guest_clock_gap_seconds': (round(guest_gap, 3)
                                        if guest_gap is not None else None),
            'counter_at_a_last': last_a, 'counter_at_b': alive,
            'ticks_kept': ticks_kept,
            'destination_equals_source': all(equal.values()),
            'sha256_equal': equal,
            'final_state_checked_by_nova': checked, 'cli_exit': code,
            'seconds_migrate': round(took, 1),
            'seconds': round(time.monotonic() - begin, 1)}
        report['ok'] = bool(
            code == 0 and m['state'] == states.COMPLETED and
            shown['status'] == 'ACTIVE' and
            report['server_host'] == SITE_B_HOST and alive and
            report['volume_host'].startswith('cinder@site-b') and
            report['destination_equals_source'] and
            checked == 'final_state_checked')
        out('server %s %s on %s (zone %s); volume %s on %s; pause %s s '
            '(outside), guest clock gap %s s; %d bytes shipped, %d over the '
            'WAN for %d MiB of volume data; %d rounds' % (
                sid, shown['status'], report['server_host'],
                report['server_zone'], volume['status'],
                report['volume_host'], report['pause_seconds'],
                report['guest_clock_gap_seconds'], report['bytes_shipped'],
                report['bytes_over_wan'], self.fill // MiB, m['rounds']))
        out('over the WAN (%s) during the migration: %s' % (
            ', '.join('%s %s' % (k, v) for k, v in sorted(
                (link.settings() or {}).items())) or 'not up',
            '; '.join('%s %.1f MiB out, %.1f MiB back' % (
                path, b['sent'] / MiB, b['received'] / MiB)
                for path, b in sorted(per_path.items()))))
        out('destination == source (rbd export | sha256sum, root disk and '
            'volume): %s' % ('yes' if report['destination_equals_source']
                             else 'NO'))
        return report

    def _follow(self, argv):
        """Run the CLI; print its lines and the migration's events live."""
        proc = subprocess.Popen(
            [os.path.join(self.cloud.venv, 'bin', 'openstack')] + argv,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            env=dict(os.environ, **self.cloud.client_env()))
        lines = []

        def forward():
            for line in proc.stdout:
                lines.append(line)
                self.out('  cli: %s' % line.rstrip())
        t = threading.Thread(target=forward, daemon=True)
        t.start()
        deadline = time.monotonic() + self.timeout
        while proc.poll() is None:
            if time.monotonic() > deadline:
                proc.kill()
                raise exception.SandboxError(
                    reason='demo: the migration did not end within %d s'
                           % self.timeout)
            self._events()
            time.sleep(0.5)
        t.join(10)
        self._events()
        return proc.returncode, ''.join(lines)

    def _events(self):
        if self.migration_id is None:
            found = [x for x in db.list_(self.ctx, 'migration')
                     if any(s['server_id'] == self.server_id
                            for s in x['servers'])]
            if not found:
                return
            self.migration_id = found[0]['id']
        self.events.show(self.migration_id)

    def _final_state_event(self, m, timeout=300):
        """nova_fedex's ``final_state_*`` event (it follows COMPLETED)."""
        deadline = time.monotonic() + timeout
        while True:
            for e in event_actions.events_query(self.ctx, migration=m['id'],
                                                limit=1000):
                event = (e.get('details') or {}).get('event') or ''
                if event.startswith('final_state_'):
                    return event
            if time.monotonic() > deadline:
                return None
            time.sleep(1)

    def _cleanup_and_go_home(self):
        """The migration cleaned up; its devices followed home to site A."""
        after = demo_devices.last_event(self.ctx)
        serials = demo_devices.serials_of(
            self.ctx, db.get(self.ctx, 'migration', self.migration_id))
        lifecycle.migration_cleanup(self.ctx, self.migration_id)
        self._wait('migration %s CLEANED' % self.migration_id, lambda: db.get(
            self.ctx, 'migration', self.migration_id)['state'] ==
            states.CLEANED, 300, 1)
        if serials:
            demo_devices.follow_home(self.ctx, serials, after, self.out)

    def wan_bytes(self, m):
        """Bytes the WAN carried: every catch-up round and the final delta."""
        total = 0
        for e in event_actions.events_query(self.ctx, migration=m['id'],
                                            limit=1000):
            d = e.get('details') or {}
            if e['kind'] == 'progress' and d.get('wire_bytes') is not None:
                total += d['wire_bytes']
            elif d.get('event') == 'delta_applied':
                total += d.get('wire') or 0
        return total

    def cleanup(self):
        """The server and the volume deleted, the retained copies at A too.

        The migration is cleaned up now rather than after its retention
        (devices crypto-erased, the shipment key destroyed, snapshots
        removed).
        """
        if self.migration_id:
            try:
                self._connect()
                try:
                    if db.get(self.ctx, 'migration', self.migration_id)[
                            'state'] == states.COMPLETED:
                        self._cleanup_and_go_home()
                finally:
                    self._close()
            except exception.FedexException as e:
                self.out('  ! migration %s not cleaned up: %s' % (
                    self.migration_id, e))
        if self.server_id:
            self.cloud.openstack_plain('server', 'delete', '--wait',
                                       self.server_id, check=False)
        if self.volume_id:
            try:
                self._wait('volume detached', lambda: self._volume(
                    'available'), 180)
            except exception.FedexException:
                pass
            self.cloud.openstack_plain('volume', 'delete', self.volume_id,
                                       check=False)
        # The source's copies are kept for the retention period; the demo
        # does not keep them.
        for spec in (self.server_id and 'vms/%s_disk' % self.server_id,
                     self.volume_id and 'volumes/volume-%s' % self.volume_id):
            if spec:
                subprocess.run(['rbd', '-c', self.sb.site('site-a').conf,
                                'snap', 'purge', spec], capture_output=True)
                subprocess.run(['rbd', '-c', self.sb.site('site-a').conf,
                                'rm', spec], capture_output=True)
