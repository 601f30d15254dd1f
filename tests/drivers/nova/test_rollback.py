"""nova-fedex-rollback on a live migration Nova lost, in Nova's fixtures.

The loss as the chaos soak saw it: the source's compute ran
pre_live_migration (Placement's allocation moved to the destination node,
a Cinder attachment made for the destination and recorded in the volume's
mapping), then failed under its migration monitor, so neither Nova's
post-migration nor its rollback ran: the record says ``running``, the
server is in task ``migrating``, and the guest runs on at the source.
"""

import io

import fixtures
from oslo_serialization import jsonutils
from oslo_utils.fixture import uuidsentinel as uuids

from nova import context as nova_context
from nova import objects

from nova_fedex.cmd import rollback
from nova_fedex.virt.libvirt import driver as fedex_driver
from nova_fedex.virt.libvirt import rbd_xml
from tests.drivers.nova import test_cutover


class TestRollback(test_cutover.CutoverTestBase):

    def setUp(self):
        self.useFixture(fixtures.MockPatch('nova.tests.fixtures.CinderFixture',
                                           test_cutover.FedexCinderFixture))
        super().setUp()
        self.ctx = nova_context.get_admin_context()

    def attachments(self):
        return sorted(self.cinder.volume_to_attachment[uuids.volume])

    def bdm(self):
        return objects.BlockDeviceMapping.get_by_volume_and_instance(
            self.ctx, uuids.volume, self.server['id'])

    def lose_the_migration(self):
        """Boot with a volume, start the cutover, lose it after the pre-steps.

        Returns the volume's attachment before the migration (the source's).
        """
        self.boot()
        self._attach_volume(self.server, uuids.volume)
        source, = self.attachments()
        self.src_disks = rbd_xml.rbd_disks(self.domain('src').XMLDesc(0))
        self.plan(volumes={'volumes/volume-%s' % uuids.volume: uuids.volume})
        # The compute's monitor fails: libvirt's migration is never seen
        # to end, Nova calls neither its post-migration nor its rollback.
        self.useFixture(fixtures.MockPatchObject(
            fedex_driver.FedexLibvirtDriver, 'live_migration'))
        self.start_cutover()
        self._wait_for_migration_status(self.server, ['running'])
        return source

    def allocations(self, consumer):
        return sorted(self._get_allocations_by_server_uuid(consumer))

    def migration(self):
        return rollback._migration(self.ctx, self.server['id'])

    def test_lost_migration_rolled_back(self):
        source = self.lose_the_migration()
        migration = self.migration()
        # What the loss left (the soak's third run).
        self.assertEqual('MIGRATING', self.api.get_server(
            self.server['id'])['status'])
        self.assertEqual([self.compute_rp_uuids['dest']],
                         self.allocations(self.server['id']))
        self.assertEqual([self.compute_rp_uuids['src']],
                         self.allocations(migration.uuid))
        dest_attachment = self.bdm().attachment_id
        self.assertNotEqual(source, dest_attachment)
        self.assertEqual(sorted([source, dest_attachment]),
                         self.attachments())

        said = io.StringIO()
        steps = rollback.run(self.ctx, self.server['id'], out=said)
        self.assertEqual(4, len(steps), steps)
        self.assertIn('(dry run)', said.getvalue())
        # A dry run changes nothing.
        self.assertEqual(dest_attachment, self.bdm().attachment_id)
        self.assertEqual('running', self.migration().status)

        rollback.run(self.ctx, self.server['id'], apply=True,
                     out=io.StringIO())
        server = self.api.get_server(self.server['id'])
        self.assertEqual(('ACTIVE', 'src', None), (
            server['status'], server['OS-EXT-SRV-ATTR:host'],
            server['OS-EXT-STS:task_state']))
        self.assertEqual([self.compute_rp_uuids['src']],
                         self.allocations(self.server['id']))
        self.assertEqual([], self.allocations(migration.uuid))
        self.assertEqual('error', self.migration().status)
        # The source's attachment, and cluster A's connection, are Nova's
        # again; the destination's is gone from Cinder.
        bdm = self.bdm()
        self.assertEqual(source, bdm.attachment_id)
        self.assertEqual([source], self.attachments())
        info = jsonutils.loads(bdm.connection_info)
        self.assertEqual('volumes/volume-%s' % uuids.volume,
                         info['data']['name'])
        self.assertEqual(uuids.volume, info['serial'])
        # Nothing left to do: a second run finds nothing.
        self.assertEqual([], rollback.run(self.ctx, self.server['id'],
                                          out=io.StringIO()))
        # The delete frees the volume (the soak's violation: it stayed
        # in-use, attached to no server).
        self._delete_server(server)
        self.assertEqual([], self.attachments())

    def test_a_server_at_the_destination_is_not_rolled_back(self):
        self.lose_the_migration()
        instance = objects.Instance.get_by_uuid(self.ctx, self.server['id'])
        instance.host = 'dest'
        instance.save()
        e = self.assertRaises(rollback.Refused, rollback.run, self.ctx,
                              self.server['id'], out=io.StringIO())
        self.assertIn('not on the migration\'s source src: the guest moved',
                      str(e))

    def test_a_completed_migration_is_not_rolled_back(self):
        self.boot()
        self.plan()
        self.cutover()
        # The source's compute is done with it (its last report is after
        # the final state's check): nothing of it runs into the next test.
        self.assertEqual('final_state_checked', self.wait_for_events(6)[-1])
        e = self.assertRaises(rollback.Refused, rollback.run, self.ctx,
                              self.server['id'], out=io.StringIO())
        self.assertIn('completed: nothing to roll back', str(e))

    def test_a_server_never_migrated_is_refused(self):
        self.boot()
        e = self.assertRaises(rollback.Refused, rollback.run, self.ctx,
                              self.server['id'], out=io.StringIO())
        self.assertIn('Nova has no live migration of server', str(e))
