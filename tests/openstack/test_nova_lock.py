"""Servers locked in Nova while their FedEx migration runs (mini-cloud).

The manager locks each server of a migration when its first phase starts
(compute API 2.73, ``locked_reason`` naming the migration) and unlocks it
when the migration ends; a server deleted anyway aborts the migration: at
once on Nova's notification, or at the sweeper's look in Nova.
The cutover of a locked server is shown by the demo's test (test_demo: it
runs on a locked server and checks the lock is gone once COMPLETED).
"""

import time

import rbd

from fedex_manager.db import api as db
from fedex_manager import nova_lock
from fedex_manager import states
from tests.openstack import test_cutover_nova as base


class TestNovaLock(base.CutoverTestCase):

    CONDUCTOR_OPTIONS = dict(
        base.CutoverTestCase.CONDUCTOR_OPTIONS,
        # Nova's notifications off: the sweeper's look finds it.
        test_server_deleted_aborts_its_migration={
            'nova_notifications_topic': '', 'server_check_interval': 5},
        # The sweeper's look out of the way: only Nova's notification can
        # abort it within the 10 s.
        test_server_deleted_in_catch_up_aborts_within_seconds={
            'server_check_interval': 3600})

    def lock_of(self, sid):
        shown = self.cloud.openstack('--os-compute-api-version', '2.73',
                                     'server', 'show', sid)
        return shown['locked'], shown.get('locked_reason')

    def start(self, sid):
        """A FedEx migration of ``sid``, waiting for the approval."""
        self.openstack('server', 'migrate', '--live-migration', '--fedex',
                       '--host', base.SITE_B_HOST, '--cutover', 'approved',
                       sid)
        return self.dep.wait(lambda: [
            x for x in db.list_(self.ctx, 'migration')
            if any(s['server_id'] == sid for s in x['servers'])], 120,
            'the migration of %s' % sid)[0]

    def locked(self, sid, m):
        def is_locked():
            locked, why = self.lock_of(sid)
            return locked and why
        why = self.dep.wait(is_locked, 300, 'server %s locked' % sid,
                            interval=2)
        self.assertEqual(nova_lock.reason(m['id'], 'site-b'), why)
        self.assertIn(m['id'], why)

    def test_locked_while_it_runs_unlocked_at_abort(self):
        sid = self.boot('fedex-lock-%s' % self.id_)['id']
        self.assertEqual((False, None), self.lock_of(sid))
        m = self.start(sid)
        self.locked(sid, m)
        self.openstack('fedex', 'migration', 'abort', m['id'])
        self.wait_state(m, states.ABORTED, timeout=600)
        self.dep.wait(lambda: not self.lock_of(sid)[0], 120,
                      'server %s unlocked after the abort' % sid)
        self.assertTrue(any('servers unlocked in Nova: %s unlocked' % sid
                            in e for e in self.events(m)), self.events(m))

    def test_server_deleted_aborts_its_migration(self):
        sid = self.boot('fedex-lock-del-%s' % self.id_)['id']
        m = self.start(sid)
        self.locked(sid, m)
        # An admin may delete a locked server. (No --wait: a server whose
        # delete is over at once makes the client's wait fail on its 404.)
        self.openstack('server', 'delete', sid)
        self.wait_state(m, states.ABORTED, timeout=600)
        rows = db.events(self.ctx, {'migration_id': m['id']})
        aborting = [e for e in rows if e['to_state'] == states.ABORTING]
        self.assertEqual(1, len(aborting), self.events(m))
        self.assertIn('server %s deleted in Nova' % sid,
                      aborting[0]['message'])
        # Cleaned up: Nova removed the disk, or it has no snapshot of ours.
        image = '%s_disk' % sid
        if image in rbd.RBD().list(self.pool('site-a', 'vms').ioctx):
            self.assert_no_snapshots_of_ours(['vms/%s' % image])

    def test_server_deleted_in_catch_up_aborts_within_seconds(self):
        sid = self.boot('fedex-lock-del2-%s' % self.id_)['id']
        m = self.start(sid)
        # Its seed shipped and imported: catching up, or waiting for the
        # approval of its cutover.
        self.wait_state(m, (states.CATCHING_UP, states.READY_FOR_CUTOVER),
                        timeout=900)
        self.openstack('server', 'delete', sid)
        deleted = time.monotonic()
        self.wait_state(m, (states.ABORTING, states.ABORTED), timeout=10)
        self.assertLess(time.monotonic() - deleted, 10.5)
        aborting = [e for e in db.events(self.ctx, {'migration_id': m['id']})
                    if e['to_state'] == states.ABORTING]
        self.assertEqual(1, len(aborting), self.events(m))
        self.assertIn('server %s deleted in Nova (instance.delete.' % sid,
                      aborting[0]['message'])
        self.wait_state(m, states.ABORTED, timeout=600)
