"""The preflight's questions to Nova, Cinder and Placement, with fakes."""

import json
import urllib.parse

import testtools

from fedex_manager import cloud_preflight
from lsrp import exception


class FakeResponse(object):

    def __init__(self, status, body):
        self.status_code = status
        self.content = json.dumps(body).encode()

    def json(self):
        return json.loads(self.content)


class FakeService(object):
    """A keystoneauth Adapter answering GETs from a {path: body} table."""

    def __init__(self, table):
        self.table = table
        self.calls = []

    def get(self, url, raise_exc=True, headers=None):
        self.calls.append((url, headers))
        if url not in self.table:
            return FakeResponse(404, {'itemNotFound': {'message': url}})
        return FakeResponse(200, self.table[url])


def server(sid, status='ACTIVE', task=None, vcpus=1, ram=512, specs=None,
           volumes=(), image='img-1'):
    return {'server': {
        'id': sid, 'status': status, 'OS-EXT-STS:task_state': task,
        'flavor': {'vcpus': vcpus, 'ram': ram, 'extra_specs': specs or {}},
        'image': {'id': image} if image else '',
        'os-extended-volumes:volumes_attached': [{'id': v}
                                                 for v in volumes]}}


def provider(uuid, vcpu_total=4, vcpu_used=0, ram_total=4096, ram_used=0):
    return {
        '/resource_providers/%s/inventories' % uuid: {'inventories': {
            'VCPU': {'total': vcpu_total, 'reserved': 0,
                     'allocation_ratio': 1.0},
            'MEMORY_MB': {'total': ram_total, 'reserved': 512,
                          'allocation_ratio': 1.0}}},
        '/resource_providers/%s/usages' % uuid: {'usages': {
            'VCPU': vcpu_used, 'MEMORY_MB': ram_used}},
    }


class TestCloudPreflight(testtools.TestCase):

    def cloud(self, servers=(), volumes=None, images=None, placement=None,
              aggregates=()):
        compute = {'/servers/%s' % s['server']['id']: s for s in servers}
        compute['/os-aggregates'] = {'aggregates': list(aggregates)}
        table = {'host-b': 'rp-b'}
        place = {'/resource_providers?name=%s' % urllib.parse.quote(h):
                 {'resource_providers': [{'uuid': u, 'name': h}]}
                 for h, u in table.items()}
        place.update(placement if placement is not None else provider('rp-b'))
        return cloud_preflight.Cloud(
            FakeService(compute),
            FakeService({'/volumes/%s' % k: {'volume': dict(v, id=k)}
                         for k, v in (volumes or {}).items()}),
            FakeService(place),
            FakeService({'/v2/images/%s' % k: v
                         for k, v in (images or {}).items()}))

    def test_movable_server_passes_and_asks_with_microversions(self):
        cloud = self.cloud([server('s1', volumes=['v1'])],
                           volumes={'v1': {'multiattach': False,
                                           'encrypted': False}})
        self.assertEqual([], cloud_preflight.reasons(cloud, ['s1'],
                                                     dest_host='host-b'))
        url, headers = cloud.compute.calls[0]
        self.assertEqual('/servers/s1', url)
        self.assertEqual('compute 2.47', headers['OpenStack-API-Version'])

    def test_every_reason_at_once(self):
        cloud = self.cloud(
            [server('s1', status='SHUTOFF', volumes=['v1', 'v2']),
             server('s2', task='migrating', specs={
                 'hw:tpm_version': '2.0',
                 'pci_passthrough:alias': 'gpu:1'}),
             server('s3', image='img-tpm')],
            volumes={'v1': {'multiattach': True, 'encrypted': False},
                     'v2': {'multiattach': False, 'encrypted': True}},
            images={'img-tpm': {'hw_tpm_model': 'tpm-crb'}})
        got = cloud_preflight.reasons(cloud, ['s1', 's2', 's3', 'gone'],
                                      dest_host='host-b')
        self.assertEqual([
            'server s1 is SHUTOFF, not ACTIVE',
            'server s1: volume v1 is multiattach, which the cutover does '
            'not support',
            'server s1: volume v2 is encrypted, which the cutover does not '
            'support',
            'server s2 is busy (migrating)',
            'server s2 has a vTPM (hw:tpm_version), which the cutover does '
            'not carry over',
            'server s2 has PCI devices (pci_passthrough:alias=gpu:1), which '
            'the cutover cannot move',
            'server s3 has a vTPM (hw_tpm_model), which the cutover does not '
            'carry over',
            'server gone does not exist in Nova'], got)

    def test_no_room_at_destination_host(self):
        cloud = self.cloud(
            [server('s1', vcpus=2, ram=2048), server('s2', vcpus=2,
                                                     ram=2048)],
            placement=provider('rp-b', vcpu_total=4, vcpu_used=1,
                               ram_total=8192, ram_used=0))
        self.assertEqual(
            ['destination host host-b has no room for the servers '
             '(VCPU: 3 left, 4 needed)'],
            cloud_preflight.reasons(cloud, ['s1', 's2'], dest_host='host-b'))

    def test_unknown_destination_host(self):
        cloud = self.cloud([server('s1')])
        self.assertEqual(
            ['destination host nowhere is not a resource provider in '
             'Placement'],
            cloud_preflight.reasons(cloud, ['s1'], dest_host='nowhere'))

    def test_room_summed_over_the_site_aggregate(self):
        place = {'/resource_providers?member_of=agg-uuid': {
            'resource_providers': [{'uuid': 'rp-1'}, {'uuid': 'rp-2'}]}}
        place.update(provider('rp-1', ram_total=1536))
        place.update(provider('rp-2', ram_total=1536))
        servers = [server('s1', ram=1024), server('s2', ram=1024)]
        aggs = [{'name': 'site-b', 'uuid': 'agg-uuid'}]
        cloud = self.cloud(servers, placement=place, aggregates=aggs)
        self.assertEqual([], cloud_preflight.reasons(
            cloud, ['s1', 's2'], dest_aggregate='site-b'))
        cloud = self.cloud(servers + [server('s3', ram=1024)],
                           placement=place, aggregates=aggs)
        self.assertEqual(
            ['the hosts of destination aggregate site-b have no room for '
             'the servers (MEMORY_MB: 2048 left, 3072 needed)'],
            cloud_preflight.reasons(cloud, ['s1', 's2', 's3'],
                                    dest_aggregate='site-b'))
        self.assertEqual(
            ['destination aggregate site-c does not exist in Nova'],
            cloud_preflight.reasons(cloud, ['s1'], dest_aggregate='site-c'))

    def test_no_credentials_no_cloud(self):
        from oslo_config import cfg
        conf = cfg.ConfigOpts()
        conf([])
        self.assertIsNone(cloud_preflight.Cloud.from_conf(conf))

    def test_preflight_lists_cloud_reasons_with_its_own(self):
        from fedex_manager import preflight
        cloud = self.cloud([server('s1', status='ERROR')])
        e = self.assertRaises(
            exception.PreflightFailed, preflight.check, None,
            [{'server_id': 's1', 'volumes': ['vms/s1_disk']}], None,
            None, cloud=cloud)
        self.assertIn('source_site: a site is needed', e.reasons)
        self.assertIn('server s1 is ERROR, not ACTIVE', e.reasons)


class TestVolumeAlone(testtools.TestCase):

    cloud = TestCloudPreflight.cloud

    def test_detached_volume_of_the_source_site_passes(self):
        reasons, zones = cloud_preflight.volume_reasons(self.cloud(volumes={
            'v1': {'status': 'available', 'availability_zone': 'site-a'}}),
            ['v1'], 'site-a')
        self.assertEqual(([], {'v1': 'site-a'}), (reasons, zones))

    def test_every_reason(self):
        reasons, _ = cloud_preflight.volume_reasons(self.cloud(volumes={
            'v1': {'status': 'in-use', 'availability_zone': 'site-a'},
            'v2': {'status': 'error', 'availability_zone': 'site-b',
                   'multiattach': True, 'encrypted': True}}),
            ['v1', 'v2', 'v3'], 'site-a')
        self.assertEqual([
            'volume v1 is attached: migrate its server instead (openstack '
            'server migrate --live-migration --fedex)',
            'volume v2 is error, not available',
            'volume v2 is multiattach, which is not supported',
            'volume v2 is encrypted, which is not supported',
            'volume v2 is in availability zone site-b, not at the source '
            'site site-a',
            'volume v3 does not exist in Cinder'], reasons)


class TestChooseHost(testtools.TestCase):
    """The destination host of a cutover that named none."""

    def cloud(self, hosts, services, room, ram=512):
        compute = {'/servers/s1': server('s1', ram=ram),
                   '/os-aggregates': {'aggregates': [
                       {'name': 'site-b', 'uuid': 'agg-b', 'hosts': hosts}]},
                   '/os-services?binary=nova-compute': {'services': [
                       {'host': h, 'state': state, 'status': status}
                       for h, (state, status) in services.items()]}}
        place = {}
        for h, free_ram in room.items():
            place['/resource_providers?name=%s' % h] = {
                'resource_providers': [{'uuid': 'rp-' + h, 'name': h}]}
            place.update(provider('rp-' + h, ram_total=free_ram + 512))
        return cloud_preflight.Cloud(FakeService(compute), FakeService({}),
                                     FakeService(place))

    def test_the_host_with_most_memory_left_among_those_up(self):
        cloud = self.cloud(['b1', 'b2', 'b3'],
                           {'b1': ('up', 'enabled'), 'b2': ('up', 'enabled'),
                            'b3': ('down', 'enabled')},
                           {'b1': 1024, 'b2': 4096, 'b3': 8192})
        self.assertEqual('b2', cloud_preflight.choose_host(
            cloud, ['s1'], 'site-b'))

    def test_none_with_room_says_why(self):
        cloud = self.cloud(['b1'], {'b1': ('up', 'enabled')}, {'b1': 256})
        e = self.assertRaises(exception.NoDestinationHost,
                              cloud_preflight.choose_host, cloud, ['s1'],
                              'site-b')
        self.assertIn('no host has room for 1 vCPUs and 512 MB', str(e))
        self.assertIn('--host HOST', str(e))

    def test_disabled_hosts_and_unknown_aggregate_refused(self):
        cloud = self.cloud(['b1'], {'b1': ('up', 'disabled')}, {'b1': 4096})
        e = self.assertRaises(exception.NoDestinationHost,
                              cloud_preflight.choose_host, cloud, ['s1'],
                              'site-b')
        self.assertIn('none of its hosts (b1) has an enabled nova-compute',
                      str(e))
        e = self.assertRaises(exception.NoDestinationHost,
                              cloud_preflight.choose_host, cloud, ['s1'],
                              'site-c')
        self.assertIn('aggregate site-c: no such aggregate', str(e))
