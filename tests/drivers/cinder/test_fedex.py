"""cinder_fedex: the driver for shipped volumes, the API actions, reconcile.

Cinder's own fixtures: a DB-backed cinder.tests.unit.test.TestCase, the
volume API's WSGI router with our extension loaded through
``osapi_volume_extension`` (as cinder-api loads it), and the RBD driver
tests' mocked configuration.
"""

import io
from unittest import mock

from oslo_serialization import jsonutils
from oslo_utils.fixture import uuidsentinel as uuids
import webob

from cinder.api import extensions
from cinder.api import urlmap
from cinder.api.v3 import router
from cinder.backup import rpcapi as backup_rpcapi
from cinder import context
from cinder import exception as cinder_exception
from cinder import objects
from cinder.objects import base as obj_base
from cinder.objects import fields
from cinder.scheduler import rpcapi as scheduler_rpcapi
from cinder.tests.unit import fake_constants as fake
from cinder.tests.unit import fake_volume
from cinder.tests.unit import test
from cinder.tests.unit import utils as test_utils
from cinder.tests.unit.volume.drivers import test_rbd
from cinder.volume import rpcapi as volume_rpcapi
from cinder.volume import volume_types

from cinder_fedex.cmd import reconcile
from cinder_fedex import marks
from cinder_fedex import ownership
from cinder_fedex.volume.drivers import fedex_rbd

HOST_A = 'ha@ceph-a#ceph-a'
HOST_B = 'hb@ceph-b#ceph-b'
MIGRATION = 'f0e1d2c3-0000-4000-8000-000000000001'


class TestDriver(test.TestCase):
    """FedexRBDDriver at site-a, peer site-b."""

    def setUp(self):
        super().setUp()
        self.cfg = test_rbd.RBDTestCase._make_configuration({
            'fedex_site': 'site-a', 'fedex_peer_site': 'site-b',
            'fedex_peer_rbd_pool': 'volumes-b',
            'fedex_peer_rbd_user': 'cinder-b',
            'fedex_peer_rbd_secret_uuid': 'secret-b',
            'fedex_peer_rbd_cluster_name': 'ceph',
            'fedex_peer_mon_hosts': ['10.2.0.1:3300', '10.2.0.2:3300']})
        self.driver = fedex_rbd.FedexRBDDriver(
            execute=mock.Mock(return_value=('', '')), configuration=self.cfg)
        self.driver.set_initialized()
        self.mock_object(self.driver, '_get_mon_addrs',
                         return_value=(['10.1.0.1'], ['6789']))
        self.ctx = context.get_admin_context()

    def volume(self, shipped=True):
        volume = fake_volume.fake_volume_obj(
            self.ctx, id=uuids.volume, name='volume-%s' % uuids.volume,
            size=10)
        volume.admin_metadata = ({marks.MIGRATION: MIGRATION} if shipped
                                 else {})
        volume.obj_reset_changes()
        return volume

    def test_peer_connector_gets_the_peer_cluster_for_a_shipped_volume(self):
        info = self.driver.initialize_connection(
            self.volume(), {'host': 'hb', 'fedex_site': 'site-b'})
        data = info['data']
        self.assertEqual('rbd', info['driver_volume_type'])
        self.assertEqual('volumes-b/volume-%s' % uuids.volume, data['name'])
        self.assertEqual(['10.2.0.1', '10.2.0.2'], data['hosts'])
        self.assertEqual(['3300', '3300'], data['ports'])
        self.assertEqual(('cinder-b', 'secret-b'),
                         (data['auth_username'], data['secret_uuid']))

    def test_stock_connection_otherwise(self):
        stock = {'name': 'rbd/volume-%s' % uuids.volume,
                 'hosts': ['10.1.0.1'], 'ports': ['6789']}
        for volume, connector in (
                (self.volume(shipped=False), {'fedex_site': 'site-b'}),
                (self.volume(), {'fedex_site': 'site-a'}),
                (self.volume(), {'host': 'no-fedex-compute'})):
            data = self.driver.initialize_connection(volume, connector)
            self.assertEqual(stock, {k: data['data'][k] for k in stock})
            self.assertNotIn('fedex_site', data['data'])

    def test_operations_that_diverge_the_sites_are_refused(self):
        volume = self.volume()
        for call in (lambda: self.driver.extend_volume(volume, 20),
                     lambda: self.driver.delete_volume(volume),
                     lambda: self.driver.revert_to_snapshot(
                         self.ctx, volume, mock.Mock()),
                     lambda: self.driver.retype(self.ctx, volume, {}, {},
                                                {})):
            e = self.assertRaises(cinder_exception.VolumeBackendAPIException,
                                  call)
            self.assertIn('FedEx migration %s' % MIGRATION, str(e))

    def test_a_volume_moved_here_is_freed_of_fedex_copies_then_deleted(self):
        # Cinder's RBD driver cannot remove an image that keeps the
        # migration's record (a clone): error_deleting. FedEx's copies go
        # first, through a connection as Cinder's own user and pool.
        volume = self.volume(shipped=False)
        order = mock.Mock()
        cluster = order.Cluster.return_value
        cluster.pool.return_value.__enter__ = mock.Mock(
            return_value='the pool')
        cluster.pool.return_value.__exit__ = mock.Mock(return_value=False)
        order.release_recorded.return_value = ['rbd/x.fedex-final-1']
        with mock.patch('lsrp.rbd.cluster.Cluster', order.Cluster), \
                mock.patch.object(fedex_rbd.records, 'release_recorded',
                                  order.release_recorded), \
                mock.patch('cinder.volume.drivers.rbd.RBDDriver.'
                           'delete_volume', order.delete_volume):
            self.driver.delete_volume(volume)
        self.assertEqual(
            ['Cluster', 'Cluster().connect', 'Cluster().pool',
             'release_recorded', 'Cluster().close', 'delete_volume'],
            [c[0] for c in order.mock_calls
             if not c[0].startswith('Cluster().pool().')])
        order.Cluster.assert_called_once_with(
            self.cfg.rbd_ceph_conf, keyring=None,
            client=self.cfg.rbd_user, site='site-a')
        cluster.pool.assert_called_once_with(self.cfg.rbd_pool)
        order.release_recorded.assert_called_once_with(
            'the pool', 'volume-%s' % uuids.volume, 'fedex-')

    def test_a_failed_release_never_stops_the_delete(self):
        with mock.patch('lsrp.rbd.cluster.Cluster',
                        side_effect=RuntimeError('no cluster')), \
                mock.patch('cinder.volume.drivers.rbd.RBDDriver.'
                           'delete_volume') as delete:
            self.driver.delete_volume(self.volume(shipped=False))
        delete.assert_called_once()

    def test_cinder_migration_never_copies_a_shipped_volume(self):
        self.assertEqual((False, None), self.driver.migrate_volume(
            self.ctx, self.volume(), {'host': HOST_B}))


def app():
    mapper = urlmap.URLMap()
    mapper['/v3'] = router.APIRouter()
    return mapper


class TestOwnership(test.TestCase):
    """The os-fedex-* actions through cinder-api's router, on a real DB."""

    def setUp(self):
        self.flags(osapi_volume_extension=[
            'cinder.api.contrib.standard_extensions',
            'cinder_fedex.api.contrib.fedex.Fedex'])
        super().setUp()
        self.patch('cinder.objects.Service.get_minimum_obj_version',
                   return_value=obj_base.OBJ_VERSIONS.get_current())
        self.patch('cinder.objects.Service.get_minimum_rpc_version',
                   side_effect=lambda ctxt, binary: {
                       'cinder-volume': volume_rpcapi.VolumeAPI,
                       'cinder-scheduler': scheduler_rpcapi.SchedulerAPI,
                       'cinder-backup': backup_rpcapi.BackupAPI,
                   }[binary].RPC_API_VERSION)
        self.ctx = context.RequestContext(fake.USER_ID, fake.PROJECT_ID,
                                          is_admin=True)
        for host, az in ((HOST_A, 'az-a'), (HOST_B, 'az-b')):
            test_utils.create_service(self.ctx, {
                'host': host.split('#')[0], 'binary': 'cinder-volume',
                'topic': 'cinder-volume', 'availability_zone': az,
                'uuid': getattr(uuids, host)})
        volume = objects.Volume(
            context=self.ctx, status='in-use', host=HOST_A,
            project_id=fake.PROJECT_ID,
            availability_zone='az-a', service_uuid=getattr(uuids, HOST_A),
            attach_status=fields.VolumeAttachStatus.ATTACHED, size=1,
            volume_type_id=volume_types.get_default_volume_type()['id'])
        volume.create()
        self.volume = volume
        self.attachment = objects.VolumeAttachment(
            context=self.ctx, volume_id=volume.id,
            instance_uuid=uuids.server, attach_status='attached',
            connector={'host': 'compute-a', 'fedex_site': 'site-a'})
        self.attachment.create()

    def action(self, name, body, ctx=None):
        req = webob.Request.blank('/v3/%s/volumes/%s/action' % (
            fake.PROJECT_ID, self.volume.id))
        req.method = 'POST'
        req.headers['content-type'] = 'application/json'
        req.body = jsonutils.dump_as_bytes({name: body})
        req.environ['cinder.context'] = ctx or self.ctx
        return req.get_response(app())

    def mark(self):
        resp = self.action('os-fedex-mark', {
            'migration': MIGRATION, 'site': 'site-a', 'peer_site': 'site-b',
            'peer_host': HOST_B})
        self.assertEqual(202, resp.status_int, resp.body)

    def reload(self):
        return objects.Volume.get_by_id(self.ctx, self.volume.id)

    def test_the_extension_is_loaded(self):
        names = [e.alias for e in extensions.ExtensionManager().extensions
                 .values()]
        self.assertIn('os-fedex', names)

    def test_cutover_and_revert_are_one_step_each(self):
        self.mark()
        resp = self.action('os-fedex-cutover', {})
        self.assertEqual(202, resp.status_int, resp.body)
        volume = self.reload()
        self.assertEqual((HOST_B, 'az-b', getattr(uuids, HOST_B)),
                         (volume.host, volume.availability_zone,
                          volume.service_uuid))
        self.assertEqual(HOST_A, volume.admin_metadata[marks.PREV_HOST])
        # Again: nothing changes.
        self.assertEqual(202, self.action('os-fedex-cutover', {}).status_int)
        self.assertEqual(HOST_B, self.reload().host)
        resp = self.action('os-fedex-revert', {})
        self.assertEqual(202, resp.status_int, resp.body)
        volume = self.reload()
        self.assertEqual((HOST_A, 'az-a', getattr(uuids, HOST_A)),
                         (volume.host, volume.availability_zone,
                          volume.service_uuid))
        self.assertNotIn(marks.PREV_HOST, volume.admin_metadata)
        self.assertEqual('site-a', volume.admin_metadata[ownership.SITE])

    def test_cutover_of_an_unmarked_volume_is_refused(self):
        resp = self.action('os-fedex-cutover', {'host': HOST_B})
        self.assertEqual(409, resp.status_int)
        self.assertIn(b'not in a FedEx migration', resp.body)
        self.assertEqual(HOST_A, self.reload().host)

    def test_members_may_not(self):
        member = context.RequestContext(fake.USER_ID, fake.PROJECT_ID,
                                        is_admin=False, roles=['member'])
        resp = self.action('os-fedex-mark', {
            'migration': MIGRATION, 'site': 'site-a', 'peer_site': 'site-b',
            'peer_host': HOST_B}, ctx=member)
        self.assertEqual(403, resp.status_int)

    def test_guarded_operations_answer_409_naming_the_migration(self):
        self.mark()
        for name, body in (('os-extend', {'new_size': 2}),
                           ('os-retype', {'new_type': 'other'}),
                           ('revert', {'snapshot_id': uuids.snap})):
            resp = self.action(name, body)
            self.assertEqual(409, resp.status_int, name)
            self.assertIn(('FedEx migration %s' % MIGRATION).encode(),
                          resp.body)
        req = webob.Request.blank('/v3/%s/volumes/%s' % (fake.PROJECT_ID,
                                                         self.volume.id))
        req.method = 'DELETE'
        req.environ['cinder.context'] = self.ctx
        resp = req.get_response(app())
        self.assertEqual(409, resp.status_int)
        self.assertIn(b'delete is refused', resp.body)
        self.assertEqual('in-use', self.reload().status)

    def test_reconcile_finishes_a_lost_cutover_and_a_lost_revert(self):
        self.mark()
        out = io.StringIO()
        # Attached at site-a only: nothing to do.
        self.assertEqual([], reconcile.run(self.ctx, True, out=out))
        # Nova's cutover went through: the only attachment is at site-b.
        self.attachment.connector = {'host': 'compute-b',
                                     'fedex_site': 'site-b'}
        self.attachment.save()
        self.assertEqual([(self.volume.id, 'cutover')],
                         reconcile.run(self.ctx, False, out=out))
        self.assertEqual(HOST_A, self.reload().host)     # dry run
        reconcile.run(self.ctx, True, out=out)
        self.assertEqual(HOST_B, self.reload().host)
        self.assertEqual([], reconcile.run(self.ctx, True, out=out))
        # A rollback: attached at site-a again, the revert was lost.
        self.attachment.connector = {'host': 'compute-a',
                                     'fedex_site': 'site-a'}
        self.attachment.save()
        self.assertEqual([(self.volume.id, 'revert')],
                         reconcile.run(self.ctx, True, out=out))
        self.assertEqual(HOST_A, self.reload().host)
        self.assertIn('cutover', out.getvalue())
