"""POST /v1/plans with a migration request: the forecast of that request.

The Horizon create form's preview asks this; Ceph (the images' sizes) and
Nova (the flavors) are fakes, the rest is the real fedex-api.
"""

import contextlib
from unittest import mock

from oslo_config import cfg

from fedex_manager.actions import forecast
from fedex_manager import planner
from lsrp import exception
from lsrp.rbd import extents
from tests.unit.fedex_manager.api import test_api
from tests.unit.fedex_manager import test_cloud_preflight as fakes

GIB = 1 << 30
MIB = 1 << 20
CONF = cfg.CONF


class FakeImage(object):

    def __init__(self, size, allocated):
        self._size, self.allocated = size, allocated

    def size(self):
        return self._size

    def extents(self, whole_object=False):
        yield extents.Extent(0, self.allocated, True)
        yield extents.Extent(self.allocated, 4096, False)   # discarded


class FakeCluster(object):
    """lsrp.rbd.Cluster over a {"pool/image": (size, allocated)} table."""

    images = {}

    def __init__(self, conf, keyring=None, client='admin', site=None):
        self.site = site

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    @contextlib.contextmanager
    def pool(self, name):
        cluster = self

        class Pool(object):
            @contextlib.contextmanager
            def open_image(self, image, read_only=None):
                spec = '%s/%s' % (name, image)
                if spec not in cluster.images:
                    raise exception.ImageNotFound(
                        site=cluster.site, target=spec)
                yield FakeImage(*cluster.images[spec])
        yield Pool()


class ForecastTestCase(test_api.Fixture):

    def setUp(self):
        super().setUp()
        self.terminals()
        self.devices(n=3, capacity=4 * GIB)
        # Sites with a Ceph configuration: their images are read.
        from fedex_manager.db import api as db
        for site in ('site-a', 'site-b'):
            db.update(self.ctx, 'site', db.get(self.ctx, 'site', site)['id'],
                      {'ceph_conf': '/etc/ceph/%s.conf' % site})
        FakeCluster.images = {'vms/vm1_disk': (GIB, GIB)}
        self.patch('lsrp.rbd.Cluster', FakeCluster)
        self.preflight = self.patch('fedex_manager.preflight.check')
        self.nova = fakes.FakeService({'/servers/vm1': self.server('vm1')})
        self.cloud = mock.Mock(
            server=lambda sid: self._get(sid),
            diagnostics=lambda sid: self._get(sid, '/diagnostics'))
        self.patch('fedex_manager.api.handlers.migrations._cloud',
                   return_value=self.cloud)

    def patch(self, target, new=mock.DEFAULT, **kw):
        p = mock.patch(target, new, **kw)
        self.addCleanup(p.stop)
        return p.start()

    def server(self, sid, ram=512, project='p1'):
        body = fakes.server(sid, ram=ram)
        body['server'].update(tenant_id=project,
                              flavor=dict(body['server']['flavor'],
                                          original_name='m1.mini'))
        return body

    def _get(self, sid, tail=''):
        resp = self.nova.get('/servers/%s%s' % (sid, tail))
        return resp.status_code, resp.json()

    def forecast(self, status=201, roles=test_api.MEMBER, **kw):
        body = dict({'migration': self.body()}, **kw)
        resp = self.call('POST', '/v1/plans', body, roles=roles,
                         status=status)
        return resp.json['plan'] if status == 201 else resp


class TestOneServer(ForecastTestCase):
    """The issue's preview: one server, a 1 GiB disk; not 509.5 GiB."""

    def test_wan_only_bytes_are_its_disk_and_memory(self):
        plan = self.forecast()
        wan = plan['wan']['wan_bytes']
        self.assertGreater(wan, GIB + 512 * MIB)
        self.assertLess(wan, (GIB + 512 * MIB) * 1.1)
        self.assertEqual('forecast', plan['kind'])
        row, = plan['servers']
        self.assertEqual(512 * MIB, row['memory_bytes'])
        self.assertEqual(GIB, row['allocated_bytes'])
        # Stored and shown again like any plan.
        shown = self.call('GET', '/v1/plans/' + plan['id'],
                          roles=test_api.READER, status=200).json['plan']
        self.assertEqual(plan['fedex'], shown['fedex'])
        self.assertEqual(1, self.call('GET', '/v1/plans', status=200)
                         .json['plans'][0]['vms'])

    def test_the_memory_copied_is_what_the_guest_touched(self):
        # Nova's diagnostics (libvirt's memory stats, KiB): QEMU holds
        # 100 MiB of the flavor's 512; the copy sends those.
        self.nova.table['/servers/vm1/diagnostics'] = {
            'memory': 512 * 1024, 'memory-rss': 100 * 1024}
        plan = self.forecast()
        row, = plan['servers']
        self.assertEqual(100 * MIB, row['memory_bytes'])
        self.assertIn('512 MiB of memory (flavor m1.mini), 100 MiB of it '
                      'ever touched by the guest', plan['assumes']['wan_bytes'])
        wan = plan['wan']['wan_bytes']
        self.assertLess(wan, (GIB + 100 * MIB) * 1.1)
        # More than the flavor (QEMU's own memory): the flavor's.
        self.nova.table['/servers/vm1/diagnostics']['memory-rss'] = \
            600 * 1024
        plan = self.forecast()
        self.assertEqual(512 * MIB, plan['servers'][0]['memory_bytes'])
        self.assertNotIn('touched', plan['assumes']['wan_bytes'])
        # Not a number (another driver): the flavor's, nothing said.
        self.nova.table['/servers/vm1/diagnostics'] = {'cpu0_time': 1}
        plan = self.forecast()
        self.assertEqual(512 * MIB, plan['servers'][0]['memory_bytes'])
        self.assertNotIn('touched', plan['assumes']['wan_bytes'])

    def test_pause_is_positive_and_the_model_s(self):
        plan = self.forecast()
        row, = plan['servers']
        link = planner.parse_rate('100Mbit/s')     # the default link
        copy = planner.memory_copy(512 * MIB, 1e6, link, 0.5)
        pause = (0.34 + copy.pause + row['final_delta_bytes'] / link
                 + 0.02)
        self.assertGreater(plan['fedex']['expected_pause'], 0.34)
        self.assertAlmostEqual(pause, row['pause_seconds'])
        self.assertAlmostEqual(pause, plan['fedex']['expected_pause'])
        self.assertEqual([], plan['warnings'])

    def test_every_figure_says_what_it_assumes(self):
        assumes = self.forecast()['assumes']
        for figure in ('total_time', 'wan_bytes', 'expected_pause',
                       'devices', 'shipments'):
            self.assertTrue(assumes[figure], figure)
        pause = assumes['expected_pause']
        self.assertIn('Server vm1: 512 MiB of memory (flavor m1.mini).',
                      pause)
        self.assertIn('Memory dirtied at 0.95 MiB/s: a default ([planner] '
                      'default_dirty_rate), not measured.', pause)
        self.assertIn('The link site-a-site-b: 100.00 Mbit/s, 20 ms round '
                      'trip assumed: no [planner] wan_link names it.', pause)
        self.assertIn('A fixed 340 ms ([planner] pause_fixed', pause)
        self.assertIn('Server vm1: 1.00 GiB allocated of 1.00 GiB',
                      assumes['wan_bytes'])
        self.assertIn('Courier manual: 1.0 d door to door ([planner] '
                      'transit_time', assumes['total_time'])
        self.assertIn('3 device(s) per shipment (parity 1), 8.00 GiB',
                      assumes['devices'])

    def test_rates_given(self):
        plan = self.forecast(dirty_rate='2MB/s', write_rate='1MB/s')
        row, = plan['servers']
        self.assertEqual(2e6, row['dirty_rate'])
        self.assertEqual(1e6, row['write_rate'])
        self.assertIn('Memory dirtied at 1.91 MiB/s, as given',
                      plan['assumes']['expected_pause'])

    def test_guest_dirtying_faster_than_the_link_is_warned(self):
        # convergence: refuse, the cutover would be refused: no pause.
        plan = self.forecast(migration=dict(
            self.body(), options={'convergence': 'refuse'}),
            dirty_rate='200Mbit/s')
        self.assertIsNone(plan['fedex']['expected_pause'])
        self.assertFalse(plan['servers'][0]['converges'])
        self.assertIn('server vm1 will not converge', plan['warnings'][0])
        self.assertIn('refused before the pause', plan['warnings'][0])

    def test_busy_guest_converges_with_auto_converge_by_default(self):
        plan = self.forecast(dirty_rate='200Mbit/s')
        row, = plan['servers']
        self.assertTrue(row['converges'])
        self.assertEqual('auto-converge', row['means'])
        self.assertGreater(row['throttle'], 0.5)
        self.assertLess(plan['fedex']['expected_pause'], 30)
        self.assertIn('server vm1 will not converge by pre-copy alone',
                      plan['warnings'][0])
        self.assertIn('auto-converge', plan['warnings'][0])


class TestRoute(ForecastTestCase):

    def test_the_site_pair_s_link_and_the_rate_cap(self):
        CONF.set_override('wan_link', ['site-b site-a 20Mbit/s 80ms'],
                          group=forecast.GROUP)
        self.addCleanup(CONF.clear_override, 'wan_link',
                        group=forecast.GROUP)
        plan = self.forecast(migration=dict(
            self.body(), options={'rate_cap': MIB}))
        self.assertEqual(20e6 / 8, plan['link']['rate'])
        self.assertAlmostEqual(0.08, plan['link']['round_trip'])
        self.assertEqual(MIB, plan['link']['catch_up_rate'])
        self.assertIn('The link site-a-site-b: 20.00 Mbit/s, 80 ms round trip '
                      '([planner] wan_link)', plan['assumes']['link'])
        self.assertIn('Catch-up rounds capped at 1.00 MiB/s',
                      plan['assumes']['link'])

    def test_without_a_configured_link_the_rate_cap_is_the_link(self):
        plan = self.forecast(migration=dict(
            self.body(), options={'rate_cap': MIB}))
        self.assertEqual(MIB, plan['link']['rate'])
        self.assertEqual(MIB, plan['link']['catch_up_rate'])
        self.assertIn('The link site-a-site-b: 8.39 Mbit/s (the rate cap), '
                      '20 ms round trip assumed', plan['assumes']['link'])

    def test_the_simulated_courier_s_timetable(self):
        CONF.set_override('courier', 'simulated', group='conductor')
        self.addCleanup(CONF.clear_override, 'courier', group='conductor')
        plan = self.forecast()
        # Delivered 3 s after dispatch, recorded half a sweep later.
        self.assertEqual(3 + CONF.conductor.sweep_interval / 2.0,
                         plan['fedex']['phases']['ship'])
        self.assertIn('Courier simulated: 3.0 s door to door (its '
                      'timetable)', plan['assumes']['total_time'])

    def test_devices_short_is_a_warning(self):
        FakeCluster.images = {'vms/vm1_disk': (5 * GIB, GIB),
                              'volumes/volume-v1': (5 * GIB, GIB)}
        plan = self.forecast(migration=self.body(servers=[{
            'server_id': 'vm1', 'volumes': ['vms/vm1_disk',
                                            'volumes/volume-v1']}]))
        # Packed by provisioned size as the manager packs them: 8 GiB of
        # data per set of 3 devices holds one, two shipments, 6 devices.
        self.assertEqual(2, plan['fedex']['shipments'])
        self.assertEqual(6, plan['fedex']['devices'])
        self.assertTrue(any('term-a has 3 blank device(s), the shipments '
                            'need 6' in w for w in plan['warnings']),
                        plan['warnings'])

    def test_an_image_larger_than_a_device_set_is_a_warning(self):
        FakeCluster.images = {'vms/vm1_disk': (20 * GIB, GIB)}
        plan = self.forecast()
        self.assertTrue(any('does not fit one device set' in w
                            for w in plan['warnings']), plan['warnings'])

    def test_a_preflight_refusal_is_a_warning(self):
        self.preflight.side_effect = exception.PreflightFailed(
            ['source site site-a: no blank device at a terminal of it'])
        plan = self.forecast()
        self.assertEqual(['created now, it would be refused: source site '
                          'site-a: no blank device at a terminal of it'],
                         plan['warnings'])


class FourServersCase(ForecastTestCase):
    """Four servers of 1 GiB, forecast with the options given."""

    def setUp(self):
        super().setUp()
        self.ids = ['vm%d' % i for i in range(1, 5)]
        for sid in self.ids:
            FakeCluster.images['vms/%s_disk' % sid] = (GIB, GIB)
            self.nova.table['/servers/%s' % sid] = self.server(sid)

    def plan(self, **options):
        return self.forecast(migration=self.body(servers=self.ids,
                                                 options=options))


class TestWave(FourServersCase):
    """max_parallel_cutovers in the request: forecast as a wave runs."""

    def test_two_at_a_time(self):
        one, two = self.plan(), self.plan(max_parallel_cutovers=2)
        self.assertIn('Servers cut over one after another',
                      one['assumes']['total_time'])
        self.assertIn('Servers cut over 2 at a time (max_parallel_cutovers, '
                      'as a wave would), the memory copies running at once '
                      'sharing the link', two['assumes']['total_time'])
        # 4 cutovers of 30 s of Nova's steps and a copy of 512 MiB over
        # 100 Mbit/s (about 45 s alone, more than twice that two at a
        # time): Nova's steps overlap, the copies do not gain: shorter,
        # far from half, and the total with it.
        cut1 = one['fedex']['phases']['cutover']
        cut2 = two['fedex']['phases']['cutover']
        self.assertLess(cut2, cut1 - 30.0)
        self.assertGreater(cut2, cut1 / 2)
        self.assertAlmostEqual(one['fedex']['total_time'] - cut1,
                               two['fedex']['total_time'] - cut2)
        link = planner.parse_rate('100Mbit/s')
        copy = planner.memory_copy(512 * MIB, 1e6, link / 2, 0.5)
        for row in two['servers']:
            self.assertAlmostEqual(copy.time, row['memory_copy_seconds'])

    def test_one_server_as_a_wave_is_as_alone(self):
        self.ids = ['vm1']
        one, two = self.plan(), self.plan(max_parallel_cutovers=2)
        self.assertEqual(one['fedex'], two['fedex'])
        self.assertEqual(one['servers'], two['servers'])

    def test_one_at_a_time_stated(self):
        one, stated = self.plan(), self.plan(max_parallel_cutovers=1)
        self.assertEqual(one['fedex'], stated['fedex'])
        self.assertIn('Servers cut over one after another',
                      stated['assumes']['total_time'])


class TestNovasQueue(FourServersCase):
    """The servers' hosts and Nova's live migrations at a time on each."""

    def on_hosts(self, *hosts):
        for sid, host in zip(self.ids, hosts):
            self.nova.table['/servers/%s' % sid]['server'][
                'OS-EXT-SRV-ATTR:host'] = host

    def test_one_host_one_at_a_time_is_said(self):
        self.on_hosts('a1', 'a1', 'a1', 'a1')
        one, four = self.plan(), self.plan(max_parallel_cutovers=4)
        # Nova's default of 1 a host: the wave's 4 slots are one.
        self.assertEqual(one['fedex'], four['fedex'])
        said = ('Nova runs 1 live migration(s) at a time per source '
                'host ([planner] live_migrations_per_host, its '
                'max_concurrent_live_migrations) and the servers are on 1 '
                'host(s): 1 cutover(s) at once, not max_parallel_cutovers '
                '= 4')
        self.assertIn(said, four['assumes']['total_time'])
        self.assertTrue(any(said in w for w in four['warnings']),
                        four['warnings'])

    def test_hosts_and_their_bound_make_the_slots(self):
        self.on_hosts('a1', 'a1', 'a2', 'a2')
        four = self.plan(max_parallel_cutovers=4)
        self.assertEqual(self.plan(max_parallel_cutovers=2)['fedex'],
                         four['fedex'])
        self.assertIn('Servers cut over 2 at a time (what the hosts\' '
                      'live_migrations_per_host allow)',
                      four['assumes']['total_time'])
        CONF.set_override('live_migrations_per_host', 4, 'planner')
        self.addCleanup(CONF.clear_override, 'live_migrations_per_host',
                        'planner')
        self.on_hosts('a1', 'a1', 'a1', 'a1')
        one, four = self.plan(), self.plan(max_parallel_cutovers=4)
        self.assertNotIn('live_migrations_per_host',
                         four['assumes']['total_time'])
        self.assertIn('Servers cut over 4 at a time',
                      four['assumes']['total_time'])
        self.assertLess(four['fedex']['phases']['cutover'],
                        one['fedex']['phases']['cutover'])


class TestRefused(ForecastTestCase):

    def test_unknown_image_and_server(self):
        self.nova.table['/servers/vm2'] = self.server('vm2', project='p2')
        resp = self.forecast(status=409, migration=self.body(
            servers=['vm1', 'vm2', 'vm3']))
        errors = self.errors(resp)
        self.assertIn('image vms/vm2_disk at site site-a', errors[0])
        self.assertIn('server vm3 does not exist in Nova', errors)
        # Another project's server is read as the migration's preflight
        # reads it (the service user): only its image is missing here.
        self.assertEqual(3, len(errors), errors)
        self.assertEqual([], self.call('GET', '/v1/plans', status=200)
                         .json['plans'])

    def test_unknown_site(self):
        resp = self.forecast(status=409, migration=self.body(
            dest_site='nowhere'))
        self.assertEqual(['no site nowhere (known: site-a, site-b)'],
                         self.errors(resp))

    def test_no_ceph_configuration(self):
        from fedex_manager.db import api as db
        db.update(self.ctx, 'site', db.get(self.ctx, 'site', 'site-a')['id'],
                  {'ceph_conf': None})
        resp = self.forecast(status=409)
        self.assertIn('site site-a has no Ceph configuration',
                      self.errors(resp)[0])

    def test_bad_body(self):
        resp = self.forecast(status=400, migration={'servers': ['vm1']},
                             dirty_rate=-1)
        self.assertTrue(any('dest_site' in e for e in self.errors(resp)),
                        self.errors(resp))

    def test_rates_must_be_finite(self):
        resp = self.forecast(status=400, write_rate='1e400MB/s')
        self.assertIn('write_rate', self.errors(resp)[0])
