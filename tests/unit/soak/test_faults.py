"""The soak's faults against a stand-in cloud (tests/soak/faults.py)."""

import signal
from unittest import mock

import fixtures
import testtools

from lsrp import exception
from tests.soak import faults


class TestKillLibvirtd(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.source = mock.Mock(spec=['name', 'libvirtd_pid'])
        self.source.name = 'site-a-h1'
        self.dest = mock.Mock(spec=['name', 'libvirtd_pid'])
        self.dest.name = 'site-b-h1'
        self.env = mock.Mock()
        self.env.cloud.hosts = [self.source, self.dest]
        self.target = mock.Mock(source_host='site-a-h1',
                                dest_host='site-b-h1')
        self.kill = self.useFixture(
            fixtures.MockPatchObject(faults.os, 'kill')).mock

    def test_kills_the_libvirtd_of_the_aimed_host(self):
        self.source.libvirtd_pid.return_value = 4242
        self.dest.libvirtd_pid.return_value = 5353
        note = faults.KillLibvirtdDest(self.env, self.target).inject()
        self.kill.assert_called_once_with(5353, signal.SIGKILL)
        self.assertEqual('libvirtd of site-b-h1 pid 5353', note)

        self.kill.reset_mock()
        faults.KillLibvirtdSource(self.env, self.target).inject()
        self.kill.assert_called_once_with(4242, signal.SIGKILL)

    def test_no_libvirtd_is_an_error_and_kills_nothing(self):
        self.source.libvirtd_pid.return_value = None
        e = self.assertRaises(
            exception.SandboxError,
            faults.KillLibvirtdSource(self.env, self.target).inject)
        self.assertIn('libvirtd of site-a-h1 is not running', str(e))
        self.kill.assert_not_called()

    def test_unhealthy_until_a_new_libvirtd_runs(self):
        self.env.compute_up.return_value = True
        fault = faults.KillLibvirtdSource(self.env, self.target)
        self.source.libvirtd_pid.return_value = 4242
        fault.inject()
        self.assertFalse(fault.healthy())   # the killed one, not reaped
        self.source.libvirtd_pid.return_value = None
        self.assertFalse(fault.healthy())
        self.source.libvirtd_pid.return_value = 4300
        self.assertTrue(fault.healthy())


class TestUserDeleteServer(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.env = mock.Mock()
        self.target = mock.Mock(server_id='s-1', user_acts=[])

    def answer(self, rc):
        self.env.openstack_proc.return_value = mock.Mock(
            returncode=rc, stdout='', stderr='' if rc == 0 else 'No Server')

    def test_the_abort_is_timed_from_an_accepted_delete(self):
        self.answer(0)
        faults.UserDeleteServer(self.env, self.target).inject()
        self.env.openstack_proc.assert_called_once_with('server', 'delete',
                                                        's-1')
        self.assertTrue(self.target.server_gone)
        self.env.watch_abort.assert_called_once_with(self.target)

    def test_a_refused_delete_times_nothing(self):
        self.answer(1)
        faults.UserDeleteServer(self.env, self.target).inject()
        self.env.watch_abort.assert_not_called()
