"""A wave: three Nova servers moved to site B together, on the mini-cloud.

Three tiny guests (m1.mini, ``--nic none``, zone site-a) boot from one
Glance image holding 48 MiB of data (``guest-wave``: the sandbox's guest
disk with random data past the guest's tick ring), so their root disks
are RBD clones of ``images/<id>@snap``; one has a Cinder volume attached.
``openstack fedex wave create --server ... x3 --host site-b-h1 --wait``
makes one migration per server in one shipment; ``openstack fedex wave
cutover <wave> --wait`` approves them all and the conductor starts the
live migrations two at a time (``max_parallel_cutovers`` 2). The third
server's cutover is made to fail (Nova refuses its live migration: its
migration is pointed at a host Nova does not have) and rolls back alone.

Checked: the two others ACTIVE at site B, bit-exact by ``rbd export |
sha256sum`` (A's final images against B's state at the resume, root disks
and the volume), every guest still counting with no tick lost (at B, and
the rolled-back one at A), the shipment's device bytes at most 1.15x
those of one server's images exported alone (``lsrp export`` of the same
snapshot, same devices and parity), the two cutovers overlapping in time
and never more than two at once (from the migrations' state events).
"""

from concurrent import futures
import json
import os
import subprocess
import tempfile
import time

from fedex_manager.agent import ops as agent_ops
from fedex_manager.db import api as db
from fedex_manager import states
from lsrp.server import records
from tests.openstack import test_cutover_nova as nova_t

MiB = 1 << 20
WAVE_IMAGE = 'guest-wave'
# The image's data: past the guest's ring (1 MiB + 128 KiB), random (as
# much as the compression keeps).
IMAGE_DATA = 48 * MiB
IMAGE_DATA_OFFSET = 4 * MiB
BOGUS_HOST = 'site-b-nosuchhost'


def ensure_wave_image(cloud, workdir):
    """The Glance image ``guest-wave`` (made once, kept): its id.

    The sandbox's ``guest`` disk (zeros) with 48 MiB of random data, the
    same kernel and ramdisk.
    """
    found = [i for i in cloud.openstack('image', 'list', '--name',
                                        WAVE_IMAGE)
             if i['Status'] == 'active']
    if found:
        return found[0]['ID']
    guest = cloud.openstack('image', 'show', 'guest')
    props = guest.get('properties') or {}
    path = os.path.join(workdir, 'guest-wave.raw')
    with open(path, 'wb') as f:
        f.truncate(64 * MiB)
        f.seek(IMAGE_DATA_OFFSET)
        for _ in range(IMAGE_DATA // (4 * MiB)):
            f.write(os.urandom(4 * MiB))
    made = cloud.openstack(
        'image', 'create', '--file', path, '--disk-format', 'raw',
        '--container-format', 'bare', '--public',
        '--property', 'kernel_id=%s' % props['kernel_id'],
        '--property', 'ramdisk_id=%s' % props['ramdisk_id'], WAVE_IMAGE,
        timeout=600)
    os.unlink(path)
    return made['id']


def intervals(shown):
    """[(start, end)] of every cutover of the wave's servers (datetimes)."""
    out = []
    for s in shown['servers']:
        for c in s['cutovers']:
            out.append((db.utcfromiso(c['started_at']),
                        db.utcfromiso(c['ended_at']) if c['ended_at']
                        else None))
    return out


def most_at_once(spans):
    """The most cutovers running at one moment (ends are exclusive)."""
    most = 0
    for start, _ in spans:
        most = max(most, sum(1 for a, b in spans
                             if a <= start and (b is None or start < b)))
    return most


class TestWave(nova_t.CutoverTestCase):

    # One rollback, then the cutover waits for the operator: the failed
    # server stays at A, catching up, while the others complete.
    CONDUCTOR_OPTIONS = {
        'test_three_servers_one_wave': {'cutover_max_attempts': 1}}

    def boot_many(self, names):
        """Boot the servers at once from ``guest-wave``; wait all ACTIVE."""
        ids = []
        # One clean-up for all, registered first: it deletes those booted
        # even when a later boot fails.
        self.addCleanup(self._delete_servers, ids)
        for name in names:
            server = self.cloud.openstack(
                'server', 'create', '--flavor', 'm1.mini', '--image',
                WAVE_IMAGE, '--nic', 'none', '--availability-zone',
                'site-a:%s' % nova_t.SITE_A_HOST, name, timeout=600)
            ids.append(server['id'])

        def active():
            shown = [self.show(sid)['status'] for sid in ids]
            if 'ERROR' in shown:
                self.fail('a server went to ERROR: %s' % shown)
            return all(s == 'ACTIVE' for s in shown)
        self.dep.wait(active, 600, 'the servers ACTIVE', interval=3)
        return ids

    def _delete_servers(self, ids):
        """Delete them all, then wait until Nova lists none of them.

        Not ``server delete --wait`` one after another: under load each
        took 1.5 to 2.5 minutes, the nine servers of the wave benchmark
        22 minutes; the computes delete them side by side. Their volumes'
        clean-ups (registered before) run after this one: detached by then.
        """
        began = time.monotonic()
        for sid in ids:
            self.openstack('server', 'delete', sid, gone_ok=True)

        def gone():
            listed = json.loads(self.openstack(
                'server', 'list', '--all-projects', '-f', 'json', '-c',
                'ID'))
            return not {s['ID'] for s in listed} & set(ids)
        self.dep.wait(gone, 900, 'the servers deleted', interval=3)
        print('wave clean-up: %d servers deleted in %.0f s' % (
            len(ids), time.monotonic() - began), flush=True)

    def volume(self, name):
        """An empty 1 GiB volume at site A (the guest writes its ring)."""
        vol = self.cloud.openstack(
            'volume', 'create', '--size', '1', '--availability-zone',
            'site-a', '--type', 'ceph', name)
        self.addCleanup(self._delete_volume, vol['id'])
        self.wait_volume(vol['id'], 'available')
        return vol['id']

    def _delete_volume(self, vid):
        def gone_or_available():
            proc = subprocess.run(
                [os.path.join(self.cloud.venv, 'bin', 'openstack'),
                 'volume', 'show', vid, '-f', 'json'],
                capture_output=True, text=True, timeout=120,
                env=dict(os.environ, **self.cloud.client_env()))
            return proc.returncode != 0 or \
                json.loads(proc.stdout)['status'] == 'available'
        self.dep.wait(gone_or_available, 180, 'volume %s detached' % vid)
        subprocess.run([os.path.join(self.cloud.venv, 'bin', 'openstack'),
                        'volume', 'delete', vid], capture_output=True,
                       timeout=120,
                       env=dict(os.environ, **self.cloud.client_env()))

    def wait_volume(self, vid, status, timeout=300):
        return self.dep.wait(
            lambda: (lambda v: v['status'] == status and v)(
                self.cloud.openstack('volume', 'show', vid)),
            timeout, 'volume %s %s' % (vid, status), interval=2)

    def run_cli(self, *args, timeout=900):
        """``openstack`` as the admin: (exit code, stdout, stderr)."""
        proc = subprocess.run(
            [os.path.join(self.cloud.venv, 'bin', 'openstack')] + list(args),
            capture_output=True, text=True, timeout=timeout,
            env=dict(os.environ, **self.cloud.client_env()))
        return proc.returncode, proc.stdout, proc.stderr

    def device_bytes_alone(self, m, images):
        """Device bytes of ``images`` exported alone.

        The same snapshot, devices, parity and engine options as the
        wave's terminal (its configuration file).
        """
        conf = os.path.join(self.dep.work, 'agent-site-a.conf')
        work = tempfile.mkdtemp(dir=self.dep.work)
        devices = [os.path.join(work, 'dev%d' % i) for i in range(3)]
        for d in devices:
            os.makedirs(d)
        argv = [nova_t.fx.venv_bin('lsrp'), '--config-file', conf, 'export',
                '--snapshot', m['base_snapshot'], '--parity', '1',
                '--shipment-id', 'alone-%s' % self.id_, '--progress',
                'none'] + sum((['--device', d] for d in devices), []) + \
            list(images)
        proc = subprocess.run(argv, capture_output=True, text=True,
                              timeout=600)
        self.assertEqual(0, proc.returncode, proc.stdout + proc.stderr)
        return sum(agent_ops.device_bytes(devices).values())

    def test_three_servers_one_wave(self):
        began = time.monotonic()
        ensure_wave_image(self.cloud, self.dep.work)
        # (Made first: its clean-up runs after the servers' deletes.)
        vid = self.volume('fedex-wave-vol-%s' % self.id_)
        sids = self.boot_many(['fedex-wave%d-%s' % (i, self.id_)
                               for i in range(3)])
        self.cloud.openstack_plain('server', 'add', 'volume', sids[0], vid)
        self.wait_volume(vid, 'in-use')
        readers_a = [self.reader('site-a', '%s_disk' % sid) for sid in sids]
        vol_a = nova_t.guest_reader.GuestReader(
            self.pool('site-a', 'volumes').ioctx, 'volume-%s' % vid)
        for r in readers_a + [vol_a]:
            r.wait_advancing(ticks=20, timeout=300)
        booted = time.monotonic()

        # One command: the wave, followed server by server to its cutover.
        argv = ['fedex', 'wave', 'create', '--host', nova_t.SITE_B_HOST,
                '--cutover', 'approved', '--max-parallel-cutovers', '2',
                '--wait', '--wait-interval', '2', '-f', 'json']
        for sid in sids:
            argv += ['--server', sid]
        code, out, err = self.run_cli(*argv, timeout=1200)
        self.assertEqual(0, code, out + err[-3000:] + self.logs())
        wave = json.loads(out)
        wave_id = wave['id']
        self.assertEqual(states.READY_FOR_CUTOVER, wave['state'], err)
        # --wait printed every server's line, not only the wave's.
        for sid in sids:
            self.assertIn('  %s ' % sid[:8], err)
        members = {s['server_id']: s['migration_id']
                   for s in wave['servers']}
        ms = [db.get(self.ctx, 'migration', members[sid]) for sid in sids]
        self.assertEqual({wave_id}, {m['options']['shipment_group']
                                     for m in ms})
        # One shipment for all.
        ships = {v['shipment_id'] for m in ms for v in m['volumes']}
        self.assertEqual(1, len(ships), ships)
        ready = time.monotonic()
        print('wave %s READY_FOR_CUTOVER: boot %.0f s, to READY %.0f s' % (
            wave_id, booted - began, ready - booted), flush=True)

        # The third server's cutover will fail: Nova refuses a host it
        # does not have (its live migration never starts).
        db.update(self.ctx, 'migration', ms[2]['id'],
                  {'dest_host': BOGUS_HOST})
        code, out, err = self.run_cli(
            'fedex', 'wave', 'cutover', wave_id, '--wait',
            '--wait-interval', '2', '-f', 'json', timeout=1200)
        self.assertEqual(0, code, out + err[-3000:] + self.logs())
        cut = time.monotonic()
        shown = json.loads(out)
        by_server = {s['server_id']: s for s in shown['servers']}
        self.assertEqual(
            [states.COMPLETED, states.COMPLETED, states.READY_FOR_CUTOVER],
            [by_server[sid]['state'] for sid in sids], err[-3000:])
        failed = by_server[sids[2]]
        self.assertEqual([states.ROLLED_BACK],
                         [c['outcome'] for c in failed['cutovers']])
        self.assertIn(BOGUS_HOST, failed['last_error'])
        self.assertIn('approve it again', failed['waiting'])

        laps = [('cutovers', time.monotonic())]
        # Where each server runs now (one listing: a CLI call each took
        # 17 s under the wave's load).
        listed = {s['ID']: s for s in json.loads(self.openstack(
            'server', 'list', '--all-projects', '--long', '-f', 'json',
            '-c', 'ID', '-c', 'Status', '-c', 'Host'))}
        for sid, host in zip(sids, (nova_t.SITE_B_HOST, nova_t.SITE_B_HOST,
                                    nova_t.SITE_A_HOST)):
            self.assertEqual(('ACTIVE', host), (
                listed[sid]['Status'], listed[sid]['Host']), sid)
        laps.append(('hosts', time.monotonic()))
        # Every guest still counting, no tick lost (the moved ones at B).
        for sid, site in zip(sids, ('site-b', 'site-b', 'site-a')):
            r = self.reader(site, '%s_disk' % sid)
            r.wait_advancing(ticks=20, timeout=120)
            counters = [t.counter for t in r.read_ring()]
            self.assertEqual(list(range(counters[0], counters[-1] + 1)),
                             counters, sid)
        vol_b = nova_t.guest_reader.GuestReader(
            self.pool('site-b', 'volumes').ioctx, 'volume-%s' % vid)
        vol_b.wait_advancing(ticks=20, timeout=120)

        laps.append(('counters', time.monotonic()))
        # Bit-exact: A's final images against B's state at the resume,
        # the six exports three at a time (one after another they took
        # 132 s of this test).
        exports = []
        for sid, m in zip(sids[:2], ms[:2]):
            final = 'fedex-final-%s' % m['id'][:8]
            for spec in ['vms/%s_disk' % sid] + (
                    ['volumes/volume-%s' % vid] if sid == sids[0] else []):
                exports += [(spec, 'site-a', spec),
                            (spec, 'site-b', records.record_spec(spec, final))]
        with futures.ThreadPoolExecutor(3) as pool:
            digests = list(pool.map(
                lambda e: self.sandbox.site(e[1]).export_sha256(e[2]),
                exports))
        for i in range(0, len(exports), 2):
            self.assertEqual(digests[i], digests[i + 1], exports[i][0])

        laps.append(('exact', time.monotonic()))
        # The cutovers: the two that completed overlapped; never more
        # than two at once.
        spans = intervals(shown)
        done = [(db.utcfromiso(c['started_at']), db.utcfromiso(
            c['ended_at'])) for sid in sids[:2]
            for c in by_server[sid]['cutovers']]
        self.assertLess(max(a for a, _ in done), min(b for _, b in done),
                        'the completed cutovers did not overlap: %s' % done)
        self.assertLessEqual(most_at_once(spans), 2, spans)

        # Device bytes: the wave's shipment against one server's images
        # exported alone (the second server: root disk only).
        wave_bytes = shown['device_bytes']
        self.assertIsNotNone(wave_bytes, shown['shipments'])
        alone = self.device_bytes_alone(ms[1], ['vms/%s_disk' % sids[1]])
        self.assertLessEqual(wave_bytes, 1.15 * alone,
                             'wave %d bytes, one server %d' % (
                                 wave_bytes, alone))
        laps.append(('device bytes', time.monotonic()))
        # Where the checks' time goes (CI's log keeps it).
        print('wave checks: %s' % ', '.join(
            '%s %.0f s' % (name, t - laps[i][1])
            for i, (name, t) in enumerate(laps[1:])), flush=True)
        print('wave %s: 3 servers; boot %.0f s, to READY %.0f s, cutovers '
              '%.0f s, test %.0f s; device bytes %d (one server alone %d, '
              '%.3fx); cutovers %s' % (
                  wave_id, booted - began, ready - booted, cut - ready,
                  time.monotonic() - began, wave_bytes, alone,
                  wave_bytes / float(alone),
                  ', '.join('%s %s %s-%s' % (
                      by_server[sid]['server_id'][:8], c['outcome'],
                      c['started_at'][11:19], (c['ended_at'] or '?')[11:19])
                      for sid in sids for c in by_server[sid]['cutovers'])))
