"""Servers locked in Nova during their migration: what the manager asks.

Nova's compute API is a small in-memory fake at the HTTP adapter; the
mini-cloud test (tests/openstack/test_nova_lock) runs it for real.
"""

from unittest import mock

import testtools

from fedex_manager import nova
from fedex_manager import nova_lock
from lsrp import exception
from tests.unit.fedex_manager import test_nova_cutover as fakes

WHY = nova_lock.reason('m-1', 'site-b')


class FakeNova(object):

    def __init__(self, servers):
        self.servers = servers      # id -> {'locked', 'locked_reason'}
        self.actions = []

    def get(self, url, headers=None, **kw):
        assert headers['OpenStack-API-Version'] == 'compute 2.73'
        sid = url.rsplit('/', 1)[1]
        if sid not in self.servers:
            return fakes.FakeResponse(404, {'itemNotFound': {}})
        return fakes.FakeResponse(200, {'server': dict(self.servers[sid])})

    def post(self, url, json=None, **kw):
        sid = url.split('/')[2]
        self.actions.append((sid, json))
        if 'lock' in json:
            self.servers[sid] = {'locked': True, 'locked_reason':
                                 json['lock']['locked_reason']}
        else:
            self.servers[sid] = {'locked': False, 'locked_reason': None}
        return fakes.FakeResponse(202)


class TestNovaLock(testtools.TestCase):

    def nova(self, servers):
        fake = FakeNova(servers)
        patcher = mock.patch.object(nova, '_adapter',
                                    lambda conf=None: fake)
        patcher.start()
        self.addCleanup(patcher.stop)
        return fake

    def test_lock_names_the_migration_and_unlock_undoes_it(self):
        fake = self.nova({'s1': {'locked': False}})
        self.assertEqual({'s1': 'locked'}, nova_lock.lock(['s1'], WHY))
        self.assertEqual({'locked': True, 'locked_reason': WHY},
                         fake.servers['s1'])
        self.assertIn('m-1', WHY)
        # A task re-run locks nothing twice.
        self.assertEqual({'s1': 'locked'}, nova_lock.lock(['s1'], WHY))
        self.assertEqual(1, len(fake.actions))
        self.assertEqual({'s1': 'unlocked'}, nova_lock.unlock(['s1'], WHY))
        self.assertFalse(fake.servers['s1']['locked'])
        self.assertEqual({'s1': 'not locked'},
                         nova_lock.unlock(['s1'], WHY))

    def test_the_owners_lock_is_kept(self):
        fake = self.nova({'s1': {'locked': True,
                                 'locked_reason': 'mine, hands off'}})
        self.assertEqual({'s1': 'already locked: mine, hands off'},
                         nova_lock.lock(['s1'], WHY))
        out = nova_lock.unlock(['s1'], WHY)
        self.assertIn('kept', out['s1'])
        self.assertEqual([], fake.actions)
        self.assertTrue(fake.servers['s1']['locked'])

    def test_a_missing_server_is_not_migrated_and_is_gone(self):
        fake = self.nova({'s1': {'locked': False}})
        e = self.assertRaises(exception.ManagerError, nova_lock.lock,
                              ['s1', 's2'], WHY)
        self.assertIn('server s2 is not in Nova', str(e))
        self.assertEqual([], fake.actions)
        self.assertEqual(['s2'], nova_lock.gone(['s1', 's2']))
        # One its user is deleting counts too (its compute may take a
        # minute to end it).
        fake.servers['s1']['OS-EXT-STS:task_state'] = 'deleting'
        self.assertEqual(['s1', 's2'], nova_lock.gone(['s1', 's2']))
        self.assertEqual({'s1': 'not locked', 's2': 'gone'},
                         nova_lock.unlock(['s1', 's2'], WHY))
