"""The demos' devices: those coming home are waited for, missing ones made."""

from fedex_manager.actions import devices as device_actions
from fedex_manager.actions import sites
from fedex_manager.db import api as db
from fedex_manager import return_trip
from fedex_sandbox.manager import demo_devices
from tests.unit.fedex_manager import base


class FakeClock(object):
    """Time moves by each sleep; ``on_sleep`` plays what happens meanwhile."""

    def __init__(self, on_sleep=None):
        self.now = 0.0
        self.on_sleep = on_sleep or (lambda now: None)

    def monotonic(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds
        self.on_sleep(self.now)


class FakeDeployment(object):
    """make_slots as the sandbox's: new directories, registered at once."""

    def __init__(self, ctx):
        self.ctx, self.made = ctx, []

    def make_slots(self, site, count):
        blank = [d['serial'] for d in device_actions.device_list(
            self.ctx, {'state': 'BLANK'})]
        while len(blank) < count:
            serial = 'usb-new-%d' % len(self.made)
            self.made.append(serial)
            device_actions.device_register(self.ctx, serial, 'term-a')
            blank.append(serial)
        return blank


class TestReady(base.DBTestCase):

    def setUp(self):
        super().setUp()
        for s in ('site-a', 'site-b'):
            sites.site_register(self.ctx, s)
            sites.terminal_register(self.ctx, 'term-' + s[-1], s)
        self.dep = FakeDeployment(self.ctx)
        self.said = []

    def away(self, serial):
        """A device of term-a wiped at term-b, on its way home."""
        device_actions.device_register(self.ctx, serial, 'term-a')
        device_actions.device_register(self.ctx, serial, 'term-b')
        return_trip.request_return(self.ctx, serial)

    def test_devices_on_their_way_are_waited_for(self):
        for serial in ('D0', 'D1'):
            device_actions.device_register(self.ctx, serial, 'term-a')
        self.away('D2')

        def arrives(now):
            if now >= 5:
                device_actions.device_register(self.ctx, 'D2', 'term-a')
        got = demo_devices.ready(self.ctx, self.dep, 'site-a', 3,
                                 self.said.append, clock=FakeClock(arrives))
        self.assertEqual(['D0', 'D1', 'D2'], sorted(d['serial']
                                                    for d in got))
        self.assertEqual([], self.dep.made)
        self.assertEqual(['  waiting for 1 device(s) of site-a on their way '
                          'home: D2 RETURNING'], self.said)

    def test_missing_ones_are_made(self):
        got = demo_devices.ready(self.ctx, self.dep, 'site-a', 3,
                                 self.said.append, clock=FakeClock())
        self.assertEqual(3, len(got))
        self.assertEqual(3, len(self.dep.made))
        self.assertEqual('  new blank device(s) at site-a: usb-new-0, '
                         'usb-new-1, usb-new-2', self.said[0])

    def test_after_the_wait_new_ones_replace_those_not_back(self):
        self.away('D0')
        got = demo_devices.ready(self.ctx, self.dep, 'site-a', 1,
                                 self.said.append, wait=10,
                                 clock=FakeClock())
        self.assertEqual(['usb-new-0'], [d['serial'] for d in got])
        self.assertEqual('RETURNING', db.get(self.ctx, 'device',
                                             'D0')['state'])

    def test_devices_still_carrying_a_seed_are_not_waited_for(self):
        # A migration's devices at site B before its cleanup (CI: a demo
        # after another test's migration waited 180 s for them).
        device_actions.device_register(self.ctx, 'D0', 'term-a')
        device_actions.device_register(self.ctx, 'D0', 'term-b')
        with db.writer(self.ctx) as session:
            db._get(session, 'device', 'D0').state = 'VERIFIED'
        got = demo_devices.ready(self.ctx, self.dep, 'site-a', 1,
                                 self.said.append, clock=FakeClock())
        self.assertEqual(['usb-new-0'], [d['serial'] for d in got])
        self.assertEqual(['  new blank device(s) at site-a: usb-new-0'],
                         self.said)

    def test_wait_home_follows_their_events(self):
        self.away('D0')
        after = demo_devices.last_event(self.ctx)

        def arrives(now):
            device_actions.device_register(self.ctx, 'D0', 'term-a')
        self.assertTrue(demo_devices.wait_home(
            self.ctx, ['D0'], after, self.said.append,
            clock=FakeClock(arrives)))
        self.assertEqual(['  [device D0] home again at term-a: BLANK'],
                         self.said)
