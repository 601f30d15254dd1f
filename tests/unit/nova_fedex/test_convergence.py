"""nova_fedex's side of convergence: measuring, applying, bounding."""

import time
from unittest import mock

import testtools

from nova_fedex.virt.libvirt import convergence

MIB = 1 << 20


class FakeDomain(object):
    """libvirt's domain and connection answering dirty-rate calculations."""

    def __init__(self, rates, memory_kib=256 * 1024, rss_kib=80 * 1024):
        self.rates = list(rates)
        self.started = []
        self.memory_kib = memory_kib
        self.rss_kib = rss_kib
        self.stats = {'dirtyrate.calc_status': 0}
        self.aborted = 0

    def startDirtyRateCalc(self, seconds, flags):
        self.started.append((seconds, flags))
        self.stats = {'dirtyrate.calc_status': convergence.MEASURED,
                      'dirtyrate.calc_start_time': len(self.started),
                      'dirtyrate.megabytes_per_second': self.rates.pop(0)}

    def domainListGetStats(self, doms, stats):
        assert stats == convergence.STATS_DIRTYRATE
        return [(doms[0], dict(self.stats))]

    def maxMemory(self):
        return self.memory_kib

    def memoryStats(self):
        return {'rss': self.rss_kib}

    def abortJob(self):
        self.aborted += 1


class TestMeasure(testtools.TestCase):

    def setUp(self):
        super().setUp()
        sleep = mock.patch.object(convergence.time, 'sleep')
        sleep.start()
        self.addCleanup(sleep.stop)

    def test_median_of_the_samples_and_the_working_set(self):
        # Page-sampling of a guest dirtying 20 MiB/s read 36, 10, 22 by
        # hand under TCG: the median is kept, not a lucky sample.
        dom = FakeDomain([36, 10, 22, 9])
        got = convergence.measure(dom, dom, samples=3, window=3)
        self.assertEqual(22 * MIB, got['dirty_rate'])
        self.assertEqual([36 * MIB, 10 * MIB, 22 * MIB], got['samples'])
        # 9 MiB/s over 3 s: 27 MiB distinct.
        self.assertEqual(27 * MIB, got['working_set'])
        self.assertEqual(256 * MIB, got['memory'])
        self.assertEqual(80 * MIB, got['resident'])
        self.assertEqual([(1, 0), (1, 0), (1, 0), (3, 0)], dom.started)

    def test_working_set_at_least_a_second_of_the_rate(self):
        dom = FakeDomain([20, 20, 20, 1])
        got = convergence.measure(dom, dom, samples=3, window=3)
        self.assertEqual(20 * MIB, got['working_set'])

    def test_the_sampling_s_resolution_is_reported(self):
        # 512 pages sampled per GiB: one stands for 2 MiB; a 1 s sample
        # cannot see less than 2 MiB/s (it reads 0).
        dom = FakeDomain([0, 0, 0, 0])
        got = convergence.measure(dom, dom, samples=3, window=3)
        self.assertEqual(0, got['dirty_rate'])
        self.assertEqual(2 * MIB, got['resolution'])

    def test_no_answer_is_a_clear_error(self):
        dom = FakeDomain([20])
        dom.startDirtyRateCalc = lambda s, f: None     # never measures
        with mock.patch.object(convergence.time, 'monotonic',
                               side_effect=[0, 0, 100, 100]):
            e = self.assertRaises(TimeoutError, convergence._calc, dom, dom,
                                  1, 5)
        self.assertIn('no dirty rate', str(e))


class TestApply(testtools.TestCase):

    def test_pre_copy_capped_at_the_link(self):
        flags, bw = convergence.apply(
            {'means': 'pre-copy', 'max_bandwidth': 8 * MIB + 5}, 32, 0)
        self.assertEqual((32, 8), (flags, bw))

    def test_auto_converge_flag(self):
        flags, bw = convergence.apply(
            {'means': 'auto-converge', 'max_bandwidth': None}, 32, 0)
        self.assertEqual(32 | convergence.AUTO_CONVERGE, flags)
        self.assertEqual(0, bw)

    def test_nova_s_lower_bandwidth_stays(self):
        _, bw = convergence.apply({'means': 'pre-copy',
                                   'max_bandwidth': 100 * MIB}, 0, 10)
        self.assertEqual(10, bw)

    def test_no_verdict_changes_nothing(self):
        self.assertEqual((32, 5), convergence.apply(None, 32, 5))


class TestWatchdog(testtools.TestCase):

    def test_aborts_a_copy_past_its_bound(self):
        dom = FakeDomain([])
        dog = convergence.Watchdog(dom, 0.05, lambda: False).start()
        dog._thread.join(5)
        self.assertTrue(dog.fired)
        self.assertEqual(1, dom.aborted)

    def test_never_aborts_once_the_pause_began(self):
        dom = FakeDomain([])
        dog = convergence.Watchdog(dom, 0.05, lambda: True).start()
        dog._thread.join(5)
        self.assertFalse(dog.fired)
        self.assertEqual(0, dom.aborted)

    def test_stopped_when_the_copy_ends(self):
        dom = FakeDomain([])
        dog = convergence.Watchdog(dom, 0.2, lambda: False).start()
        dog.stop()
        dog._thread.join(5)
        time.sleep(0.01)
        self.assertEqual(0, dom.aborted)


class FakeGuest(object):

    def __init__(self):
        self.downtimes = []

    def migrate_configure_max_downtime(self, mstime):
        self.downtimes.append(mstime)

    def get_job_info(self):
        return 'job'


class TestDowntimeFloor(testtools.TestCase):

    def test_the_verdict_s_limit_else_nova_s_top_step(self):
        self.assertEqual(500, convergence.downtime_floor_ms(
            {'max_downtime': 0.5}, 400))
        self.assertEqual(400, convergence.downtime_floor_ms(
            {'means': 'pre-copy'}, 400))
        self.assertEqual(400, convergence.downtime_floor_ms(None, 400))

    def test_nova_s_steps_start_at_the_floor_and_go_on_above_it(self):
        # Nova's steps for 500 ms in 10: 50, 95, ..., 500.
        guest = FakeGuest()
        floored = convergence.DowntimeFloor(guest, 300)
        for step in (50, 95, 140, 455, 500):
            floored.migrate_configure_max_downtime(step)
        self.assertEqual([300, 300, 300, 455, 500], guest.downtimes)
        # Everything else is the guest's.
        self.assertEqual('job', floored.get_job_info())
