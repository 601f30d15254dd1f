"""A migrated server or volume deleted within its migration's retention.

Its image at the destination keeps the migration's snapshots and the record
of its final state; nova_fedex removes them just before Nova's removal of
the disk (``nova_fedex.virt.libvirt.leftovers``), which otherwise retried
for 55 s an image and left the disk behind, and cinder_fedex before
Cinder's (``FedexRBDDriver.delete_volume``), which otherwise ended in
``error_deleting``. Both call ``lsrp.server.records.release_recorded``. On
real Ceph, judged with the real ``rbd``.
"""

import json
import subprocess
import uuid

from lsrp.server import records
from nova_fedex.virt.libvirt import leftovers
from tests.functional import base

MiB = 1 << 20


class TestLeftovers(base.FunctionalTestCase):

    def disk(self, server, snapshots, record=None, name=None):
        """``<server>_disk`` at site-b with ``snapshots``; its record."""
        pool = self.pool('site-b')
        name = name or '%s_disk' % server
        pool.create_image(name, 8 * MiB)
        self.addCleanup(self._remove_image, 'site-b', 'vms', name)
        with pool.open_image(name) as img:
            img.write(0, b'the guest at B')
            for snap in snapshots:
                img.create_snapshot(snap)
            if record:
                img.protect_snapshot(snapshots[-1])
        if record:
            rec = records.record_name(name, record)
            pool.clone_image(name, snapshots[-1], rec)
            with pool.open_image(rec) as img:
                img.write(0, b'the guest at its resume')
                img.create_snapshot(record)
        return name

    def snaps(self, name):
        return [s['name'] for s in json.loads(self.rbd_cli(
            'site-b', 'snap', 'ls', '--format', 'json', 'vms/%s' % name))]

    def test_a_cut_over_disk_is_released_for_nova(self):
        server, other = str(uuid.uuid4()), str(uuid.uuid4())
        mine = self.disk(server, ['fedex-1a2b-seed', 'nightly',
                                  'fedex-1a2b-2-r1'], record='fedex-final-1a')
        # Another server's disk, at the source of a migration still
        # running (snapshots, no record): its migration's, untouched.
        theirs = self.disk(other, ['fedex-3c4d-seed'])
        with self.sites['site-b'].pool('vms') as pool:
            removed = leftovers.release(pool, server)
        self.assertEqual(sorted([
            'vms/%s.fedex-final-1a' % mine, 'vms/%s@fedex-1a2b-seed' % mine,
            'vms/%s@fedex-1a2b-2-r1' % mine]), sorted(removed))
        # What is not FedEx's stays; the other server's disk is as it was.
        self.assertEqual(['nightly'], self.snaps(mine))
        self.assertEqual(['fedex-3c4d-seed'], self.snaps(theirs))
        ls = self.rbd_cli('site-b', 'ls', 'vms').split()
        self.assertNotIn('%s.fedex-final-1a' % mine, ls)
        # Nova's removal now only meets the operator's own snapshot.
        self.rbd_cli('site-b', 'snap', 'rm', 'vms/%s@nightly' % mine)
        self.rbd_cli('site-b', 'rm', 'vms/%s' % mine)
        self.assertNotIn(mine, self.rbd_cli('site-b', 'ls', 'vms').split())

    def test_a_disk_without_a_record_is_left_to_its_migration(self):
        server = str(uuid.uuid4())
        name = self.disk(server, ['fedex-5e6f-seed'])
        with self.sites['site-b'].pool('vms') as pool:
            self.assertEqual([], leftovers.release(pool, server))
        self.assertEqual(['fedex-5e6f-seed'], self.snaps(name))
        # Nova's removal still meets it (its migration removes it).
        proc = subprocess.run(
            ['rbd', '-c', self.sandbox.site('site-b').conf, '--keyring',
             self.sandbox.site('site-b').keyring, 'rm', 'vms/%s' % name],
            capture_output=True, text=True)
        self.assertNotEqual(0, proc.returncode)
        self.assertIn('snapshot', proc.stderr)

    def test_a_cut_over_volume_is_released_for_cinder(self):
        vid = str(uuid.uuid4())
        name = self.disk(None, ['fedex-7a8b-seed', 'fedex-7a8b-wan'],
                         record='fedex-final-7a', name='volume-%s' % vid)
        # Another volume, at the source of a migration still running
        # (snapshots, no record): its migration's, untouched.
        other = self.disk(None, ['fedex-9c0d-seed'],
                          name='volume-%s' % uuid.uuid4())
        with self.sites['site-b'].pool('vms') as pool:
            removed = records.release_recorded(pool, name, 'fedex-')
        self.assertEqual(sorted([
            'vms/%s.fedex-final-7a' % name, 'vms/%s@fedex-7a8b-seed' % name,
            'vms/%s@fedex-7a8b-wan' % name]), sorted(removed))
        # What Cinder's driver then does: a plain removal.
        self.rbd_cli('site-b', 'rm', 'vms/%s' % name)
        ls = self.rbd_cli('site-b', 'ls', 'vms').split()
        self.assertNotIn(name, ls)
        self.assertIn(other, ls)
        self.assertEqual(['fedex-9c0d-seed'], self.snaps(other))
