"""A guest at site A, end to end: boot, attach, plain live migration.

By hand (``tox -e scenarios``): booted by a member through the real CLI,
its root disk a clone of the Glance image in cluster A, a Cinder volume of
site A attached, then a plain (not FedEx) live migration to the other
site-A host, the guest still counting on both disks. README's test
command leaves it out: the demo's test makes a plain live migration inside
site B with a volume attached, after its FedEx cutover.
"""

import uuid

import rbd

from tests.openstack import base


class TestGuestAtSiteA(base.CloudTestCase):

    def test_boot_attach_and_live_migrate_within_site_a(self):
        name = 'vm-%s' % uuid.uuid4().hex[:8]
        # As the demo user (a member), through the real CLI.
        server = self.os('server', 'create', '--flavor', 'm1.mini',
                         '--image', 'guest', '--nic', 'none',
                         '--availability-zone', 'site-a', '--wait', name,
                         cloud='fedex-demo')
        self.addCleanup(self.cloud.openstack_plain, 'server', 'delete',
                        '--wait', server['id'], cloud='fedex-demo')
        self.assertEqual('ACTIVE', server['status'])
        info = self.os('server', 'show', server['id'])
        source = info['OS-EXT-SRV-ATTR:host']
        self.assertIn(source, ('site-a-h1', 'site-a-h2'))

        # The root disk is in site-a's cluster, a clone of the image.
        disk = '%s_disk' % server['id']
        image = self.os('image', 'show', 'guest')
        with rbd.Image(self.clusters['site-a'].open_ioctx('vms'), disk,
                       read_only=True) as img:
            parent = img.get_parent_image_spec()
        self.assertEqual(('images', image['id'], 'snap'),
                         (parent['pool_name'], parent['image_name'],
                          parent['snap_name']))
        root = self.reader('site-a', 'vms', disk)
        root.wait_advancing(ticks=20, timeout=300)

        # An attached Cinder volume of site-a gets the ticks too.
        vol = self.os('volume', 'create', '--size', '1',
                      '--availability-zone', 'site-a', '--type', 'ceph',
                      'vol-' + name, cloud='fedex-demo')
        self.addCleanup(self.cloud.openstack_plain, 'volume', 'delete',
                        vol['id'], cloud='fedex-demo')
        self.wait_for('volume available', lambda: self.os(
            'volume', 'show', vol['id'])['status'] == 'available')
        self.cloud.openstack_plain('server', 'add', 'volume', server['id'],
                                   vol['id'], cloud='fedex-demo')
        self.addCleanup(self._detach, server['id'], vol['id'])
        self.wait_for('volume in-use', lambda: self.os(
            'volume', 'show', vol['id'])['status'] == 'in-use')
        volume = self.reader('site-a', 'volumes', 'volume-%s' % vol['id'])
        volume.wait_advancing(ticks=20, timeout=300)

        # A plain live migration to the other site-a host (admin only).
        dest = 'site-a-h2' if source == 'site-a-h1' else 'site-a-h1'
        self.cloud.openstack_plain(
            '--os-compute-api-version', '2.latest', 'server', 'migrate',
            '--live-migration', '--host', dest, '--wait', server['id'])
        info = self.os('server', 'show', server['id'])
        self.assertEqual(dest, info['OS-EXT-SRV-ATTR:host'])
        self.assertEqual('ACTIVE', info['status'])
        # Still counting on the destination, on both disks.
        self.assert_counting(server['id'], root, volume)

    def _detach(self, server, volume):
        self.cloud.openstack_plain('server', 'remove', 'volume', server,
                                   volume, cloud='fedex-demo', check=False)
        self.wait_for('volume detached', lambda: self.os(
            'volume', 'show', volume)['status'] in ('available', 'error'))
