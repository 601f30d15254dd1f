"""nova_fedex's parts on their own: the XML rewrite, the fedex-api client,
what a cutover refuses."""

from unittest import mock

from oslo_config import cfg
from oslo_utils.fixture import uuidsentinel as uuids
import requests_mock

from nova import context as nova_context
from nova import objects
from nova import test
from nova.tests import fixtures as nova_fixtures
from nova.tests.unit import fake_instance
from nova.virt import fake

from lsrp import exception
from nova_fedex import manager_client
from nova_fedex.virt.libvirt import driver as fedex_driver
from nova_fedex.virt.libvirt import rbd_xml
from tests.drivers.nova import fakes

MONS_B = [('10.2.0.1', '3300'), ('10.2.0.2', '3300')]
TARGET_B = rbd_xml.RbdTarget('nova-b', 'secret-b')


def _disk(dev, name, hosts, serial=None, alias=None, user='nova-a',
          secret='secret-a'):
    extra = ''
    if serial:
        extra += '<serial>%s</serial>' % serial
    if alias:
        extra += '<alias name="%s"/>' % alias
    return ('<disk type="network" device="disk"><driver name="qemu"/>'
            '<source protocol="rbd" name="%s">%s</source>'
            '<auth username="%s"><secret type="ceph" uuid="%s"/></auth>'
            '<target dev="%s" bus="virtio"/>%s</disk>' % (
                name, ''.join('<host name="%s" port="%s"/>' % h
                              for h in hosts), user, secret, dev, extra))


def _domain(*disks):
    return ('<domain type="qemu"><name>i</name><devices>%s'
            '<disk type="file" device="cdrom"><target dev="hdd"/></disk>'
            '</devices></domain>' % ''.join(disks))


class TestRbdXml(test.NoDBTestCase):

    A = [('10.1.0.1', '6789')]

    def setUp(self):
        super().setUp()
        self.disks = [('vda', 'vms/u_disk', self.A, None, None),
                      ('vdb', 'vms/u_disk.eph0', self.A, None, None),
                      ('vdc', 'vms/u_disk.config', self.A, None, None),
                      ('vdd', 'volumes/volume-v1', self.A, None, None)]
        self.plan = fakes.plan_for(uuids.server, self.disks, MONS_B,
                                   volumes={'volumes/volume-v1': 'v1'})

    def xml(self, volume_at='b'):
        vol = (_disk('vdd', 'volumes-b/volume-v1', MONS_B, serial='v1',
                     user='cinder-b', secret='cinder-secret-b')
               if volume_at == 'b' else
               _disk('vdd', 'volumes/volume-v1', self.A, serial='v1'))
        return _domain(_disk('vda', 'vms/u_disk', self.A),
                       _disk('vdb', 'vms/u_disk.eph0', self.A),
                       _disk('vdc', 'vms/u_disk.config', self.A), vol)

    def test_local_disks_go_to_b_and_volumes_are_kept(self):
        disks = rbd_xml.rbd_disks(rbd_xml.rewrite(self.xml(), self.plan,
                                                  TARGET_B))
        self.assertEqual([
            ('vda', 'vms-b/u_disk', MONS_B, 'nova-b', 'secret-b'),
            ('vdb', 'vms-b/u_disk.eph0', MONS_B, 'nova-b', 'secret-b'),
            ('vdc', 'vms-b/u_disk.config', MONS_B, 'nova-b', 'secret-b'),
            ('vdd', 'volumes-b/volume-v1', MONS_B, 'cinder-b',
             'cinder-secret-b')], disks)

    def test_a_volume_still_at_a_is_refused(self):
        e = self.assertRaises(exception.CutoverError, rbd_xml.rewrite,
                              self.xml(volume_at='a'), self.plan, TARGET_B)
        self.assertIn('volume v1 (disk vdd) would still use '
                      'volumes/volume-v1', str(e))

    def test_a_file_disk_or_an_unshipped_image_is_refused(self):
        file_disk = ('<disk type="file" device="disk"><source file="/x"/>'
                     '<target dev="vde"/></disk>')
        e = self.assertRaises(exception.CutoverError, rbd_xml.rewrite,
                              _domain(file_disk), self.plan, TARGET_B)
        self.assertIn('disk vde is not an rbd image', str(e))
        e = self.assertRaises(
            exception.CutoverError, rbd_xml.rewrite,
            _domain(_disk('vde', 'vms/u_disk.swap', self.A)), self.plan,
            TARGET_B)
        self.assertIn('image vms/u_disk.swap (disk vde) is not part', str(e))


class TestFedexApiClient(test.NoDBTestCase):

    URL = 'http://fedex.example:8787'

    def setUp(self):
        super().setUp()
        self.conf = cfg.ConfigOpts()
        manager_client.register_opts(self.conf)
        self.conf([], project='nova')
        self.conf.set_override('auth_type', 'none', 'fedex')
        self.conf.set_override('endpoint_override', self.URL, 'fedex')
        self.client = manager_client.FedexApiClient(self.conf)
        self.instance = mock.Mock(uuid=uuids.server)
        self.plan = fakes.plan_for(
            uuids.server, [('vda', 'vms/u_disk', [], None, None)], MONS_B)
        self.body = {'cutover': {
            'id': self.plan.migration_id, 'state': 'cutting_over',
            'server_id': uuids.server, 'source_site': 'site-a',
            'destination_site': 'site-b', 'shipment_id': 'ship-1',
            'destination_cluster': {'fsid': 'f', 'monitors': [
                '10.2.0.1:3300', '[fd00::1]:3300']},
            'terminal': {'host': 't', 'port': '10301',
                         'server_name': 'terminal-site-b'},
            'disks': [{'kind': 'root', 'source': 'vms/u_disk',
                       'destination': 'vms-b/u_disk'}]}}

    @requests_mock.Mocker()
    def test_get_cutover(self, m):
        url = '%s/v1/servers/%s/cutover' % (self.URL, uuids.server)
        m.get(url, json=self.body)
        plan = self.client.get_cutover(None, self.instance)
        self.assertTrue(plan.ready)
        self.assertEqual([('10.2.0.1', '3300'), ('fd00::1', '3300')],
                         plan.cluster.monitors)
        self.assertEqual(10301, plan.terminal.port)
        self.assertEqual('vms-b/u_disk',
                         plan.disk_for_source('vms/u_disk').destination)
        m.get(url, status_code=404)
        self.assertIsNone(self.client.get_cutover(None, self.instance))
        m.get(url, status_code=503, text='down for maintenance')
        e = self.assertRaises(exception.ManagerUnavailable,
                              self.client.get_cutover, None, self.instance)
        self.assertIn('HTTP 503: down for maintenance', str(e))
        del self.body['cutover']['terminal']
        m.get(url, json=self.body)
        e = self.assertRaises(exception.ManagerUnavailable,
                              self.client.get_cutover, None, self.instance)
        self.assertIn("malformed answer (missing or bad 'terminal')", str(e))

    @requests_mock.Mocker()
    def test_report_never_raises(self, m):
        url = '%s/v1/migrations/%s/cutover-events' % (
            self.URL, self.plan.migration_id)
        m.post(url, status_code=202)
        self.client.report(None, self.plan, 'resumed', 'h1',
                           pause_seconds=0.4)
        self.assertEqual({'event': 'resumed', 'host': 'h1',
                          'details': {'pause_seconds': 0.4}},
                         m.last_request.json())
        m.post(url, status_code=500)
        self.client.report(None, self.plan, 'completed', 'h1')


class TestUnsupported(test.NoDBTestCase):

    def setUp(self):
        super().setUp()
        self.useFixture(nova_fixtures.LibvirtFixture())
        self.flags(images_type='rbd', group='libvirt')
        self.drvr = fedex_driver.FedexLibvirtDriver(fake.FakeVirtAPI(),
                                                    False)
        self.drvr._live_migration_flags = 0
        self.ctx = nova_context.get_admin_context()
        self.md = objects.LibvirtLiveMigrateData(block_migration=False)
        self.plan = fakes.plan_for(
            uuids.server, [('vda', 'vms/u_disk', [], None, None),
                           ('vdb', 'volumes/volume-v1', [], None, None)],
            MONS_B, volumes={'volumes/volume-v1': uuids.v1})

    def unsupported(self, extra_specs=None, bdms=(), **kw):
        flavor = objects.Flavor(extra_specs=extra_specs or {}, vcpus=1,
                                memory_mb=512, root_gb=1, ephemeral_gb=0,
                                swap=0, name='f', flavorid='1')
        pci = kw.pop('pci_requests', None)
        instance = fake_instance.fake_instance_obj(
            self.ctx, uuid=uuids.server, flavor=flavor,
            image_ref='', system_metadata={}, **kw)
        instance.pci_requests = pci or objects.InstancePCIRequests(
            requests=[])
        instance.numa_topology = None
        instance.system_metadata = {}
        instance.resources = objects.ResourceList(objects=[])
        with mock.patch.object(self.drvr,
                               '_get_all_assigned_mediated_devices',
                               return_value={}):
            return self.drvr._fedex_unsupported(
                instance, self.plan, self.md,
                {'block_device_mapping': list(bdms)})

    def volume(self, volume_id, **info):
        ci = {'driver_volume_type': 'rbd', 'serial': volume_id,
              'data': {'volume_id': volume_id}}
        ci.update(info)
        return {'connection_info': ci}

    def test_nothing_for_a_plain_server(self):
        self.assertEqual([], self.unsupported(
            bdms=[self.volume(uuids.v1)]))

    def test_named(self):
        found = self.unsupported(
            extra_specs={'hw:tpm_version': '2.0', 'hw:tpm_model': 'tpm-tis'},
            pci_requests=objects.InstancePCIRequests(requests=[
                objects.InstancePCIRequest(count=1, spec=[{}])]),
            bdms=[self.volume(uuids.v1, multiattach=True),
                  self.volume(uuids.v2, driver_volume_type='iscsi'),
                  self.volume(uuids.v1, data={'encrypted': True,
                                              'volume_id': uuids.v1})])
        text = '; '.join(found)
        for expected in ('a vTPM', 'PCI devices',
                         'multiattach volume %s' % uuids.v1,
                         'volume %s of type iscsi' % uuids.v2,
                         'volume %s, which migration' % uuids.v2,
                         'encrypted volume %s' % uuids.v1):
            self.assertIn(expected, text)
