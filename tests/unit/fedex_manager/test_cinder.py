"""fedex_manager.cinder: which volumes are marked and moved, and how."""

from unittest import mock

import fixtures
import testtools

from fedex_manager import cinder
from lsrp import exception

POOLS = {'pools': [
    {'name': 'cinder@site-a#ceph', 'capabilities': {'fedex_site': 'site-a'}},
    {'name': 'cinder@site-b#ceph', 'capabilities': {'fedex_site': 'site-b'}},
    {'name': 'other@lvm#lvm', 'capabilities': {}}]}


def _migration():
    return {'id': 'm1', 'volumes': [
                {'source_image': 'vms/s1_disk', 'volume_id': None,
                 'kind': 'disk'},
                {'source_image': 'volumes/volume-v1', 'volume_id': 'v1',
                 'kind': 'volume'}]}


class TestCinder(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.adapter = mock.Mock()
        self.adapter.get.return_value = mock.Mock(
            status_code=200, json=mock.Mock(return_value=POOLS))
        self.adapter.post.return_value = mock.Mock(status_code=202)
        self.useFixture(fixtures.MockPatchObject(
            cinder, '_adapter', mock.Mock(return_value=self.adapter)))

    def posted(self):
        return [(c.args[0], c.kwargs['json'])
                for c in self.adapter.post.call_args_list]

    def test_mark_only_cinder_volumes_with_the_peer_backend(self):
        cinder.mark(_migration(), 'site-a', 'site-b')
        self.assertEqual([('/volumes/v1/action', {'os-fedex-mark': {
            'migration': 'm1', 'site': 'site-a', 'peer_site': 'site-b',
            'peer_host': 'cinder@site-b#ceph'}})], self.posted())

    def test_cutover_moves_then_unmarks(self):
        cinder.cutover(_migration())
        self.assertEqual([('/volumes/v1/action', {'os-fedex-cutover': {}}),
                          ('/volumes/v1/action', {'os-fedex-unmark': {}})],
                         self.posted())

    def test_no_volumes_no_cinder(self):
        m = _migration()
        m['volumes'] = m['volumes'][:1]
        cinder.mark(m, 'site-a', 'site-b')
        cinder.cutover(m)
        cinder.unmark(m)
        cinder._adapter.assert_not_called()

    def test_no_backend_at_the_destination(self):
        e = self.assertRaises(exception.ManagerError, cinder.mark,
                              _migration(), 'site-a', 'site-c')
        self.assertIn('fedex_site = site-c', str(e))

    def test_refusal_names_volume_and_answer(self):
        self.adapter.post.return_value = mock.Mock(
            status_code=409, text='volume v1 is in FedEx migration m0')
        e = self.assertRaises(exception.ManagerError, cinder.mark,
                              _migration(), 'site-a', 'site-b')
        self.assertIn('os-fedex-mark of volume v1: HTTP 409', str(e))
