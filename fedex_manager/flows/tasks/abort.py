"""The abort phase: ABORTING .. ABORTED, the VM left untouched.

:class:`StopOperations` cancels what terminals still run for the
migration; :class:`CleanUpAbort` erases its devices, destroys its keys,
removes its snapshots (and the destination's copies), makes ACTIVE again
a server a failed cutover left in ERROR, and unlocks its servers.
"""

import time

from oslo_config import cfg
import oslo_messaging as messaging

from fedex_manager import cinder
from fedex_manager.db import api as db
from fedex_manager.flows.tasks import common
from fedex_manager.flows.tasks import cutover
from fedex_manager.flows.tasks import erase
from fedex_manager import nova
from fedex_manager import rpc
from fedex_manager import shipments as shipments_mod
from fedex_manager import states
from lsrp import exception

CONF = cfg.CONF


class Abort(common.PhaseTask):
    phase = 'abort'
    allowed = (states.ABORTING,)


class BeginAbort(common.Begin, Abort):
    pass


# Seconds Nova's API is asked again before an abort gives up.
NOVA_PATIENCE = 120


def refuse_if_moved(task, ctx, m, generation):
    """No server of the migration runs at its destination host (Nova).

    The abort removes the destination's copies of the disks. After a
    cutover they may be the disks a guest runs on: Nova moved it, then
    failed, and the migration was wrongly taken back (seen in the soak
    before :func:`~fedex_manager.flows.tasks.cutover._moved_though_failed`).
    Such an abort fails before removing anything, naming the server. (Its
    terminals' work was cancelled: catch-up rounds would write A's stale
    blocks under that guest.)
    """
    if CONF.conductor.compute_driver != 'nova' or not m['dest_host'] \
            or cutover.first_cutover_began(ctx, m) is None:
        return
    for s in m['servers']:
        host = _host_of(task, ctx, m, generation, s['server_id'])
        if host == m['dest_host']:
            raise exception.Conflict(
                kind='migration', id=m['id'], reason='not aborted: '
                'Nova has server %s on the destination host %s, where '
                'the abort would remove the disks it runs on; its '
                'cutover moved it (doc/source/cutover-e2e.rst)' % (
                    s['server_id'], host))


def _host_of(task, ctx, m, generation, server_id):
    # Nova's API fails while its database or bus restarts: asked again
    # for a while before the abort gives up.
    deadline = time.monotonic() + NOVA_PATIENCE
    while True:
        try:
            return nova.server_host(server_id)
        except exception.ManagerError as e:
            if time.monotonic() > deadline:
                raise exception.Conflict(
                    kind='migration', id=m['id'], reason='not aborted: '
                    'cannot ask Nova where server %s runs (%s), and its '
                    'cutover may have moved it onto the disks the abort '
                    'removes; retry the abort when Nova answers' % (
                        server_id, e))
        time.sleep(5)
        common.guard(ctx, m['id'], generation, task.phase, task.allowed)


class StopOperations(Abort):
    """Cancel what terminals still run for the migration, and wait."""

    def run(self, ctx, m, generation):
        for op in db.list_(ctx, 'operation', {'migration_id': m['id']}):
            if op['state'] in ('DONE', 'ERROR'):
                continue
            term = db.get(ctx, 'terminal', op['terminal'])
            api = rpc.TerminalAPI(term['rpc_topic'])
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                try:
                    api.cancel(op['id'])
                    rec = api.status(op['id'])
                except messaging.MessagingException:
                    break       # unreachable: it cannot write either
                if rec['state'] != 'RUNNING':
                    break
                time.sleep(CONF.conductor.op_poll_interval)
            db.operation_report(ctx, op['id'], state='ERROR',
                                error='cancelled by abort')


# Seconds an aborted member of a shipment group waits for the group's
# export of its images before removing its snapshots all the same.
GROUP_READS_PATIENCE = 900


class CleanUpAbort(Abort):
    """Devices erased, keys destroyed, snapshots removed; VM untouched."""

    def _wait_group_reads(self, ctx, m, generation):
        """Until the group's export of our images (the leader's) ends.

        Removing the seed snapshot under it would fail the others; the
        leader then leaves our images out of what it seals.
        """
        sids = {v['shipment_id'] for v in m['volumes'] if v['shipment_id']}
        announced = False
        # Not for ever: an export whose terminal died stays RUNNING in the
        # database until its leader looks again.
        deadline = time.monotonic() + GROUP_READS_PATIENCE
        while time.monotonic() < deadline:
            busy = []
            for sid in sids:
                s = db.get(ctx, 'shipment', sid)
                if s['state'] not in (states.S_CREATED, states.S_LOADING):
                    continue
                for kind in ('export', 'consolidate'):
                    op = common._op_exists(ctx, common._shipment_op(s, kind))
                    if op and op['state'] not in ('DONE', 'ERROR'):
                        busy.append(op['id'])
            if not busy:
                return
            if not announced:
                db.add_event(ctx, 'migration', m['id'], 'job',
                             'waiting for %s (its shipment group reads our '
                             'images) before removing our snapshots'
                             % ', '.join(busy), migration_id=m['id'])
                announced = True
            time.sleep(CONF.conductor.op_poll_interval)
            common.guard(ctx, m['id'], generation, self.phase, self.allowed)

    def run(self, ctx, m, generation):
        refuse_if_moved(self, ctx, m, generation)
        copied = any(db.list_(ctx, 'operation', {
            'migration_id': m['id'], 'kind': kind})
            for kind in ('import', 'seed_over_wan')) or any(
            s['state'] == states.S_IMPORTED for s in common._shipments_of(ctx, m))
        erase._erase_shipments(self, ctx, m, generation, 'migration aborted')
        self._wait_group_reads(ctx, m, generation)
        erase._remove_snapshots(self, ctx, m, generation, m['source_terminal_id'],
                                common._specs(m))
        if copied:
            # The destination's copies are ours (preflight refuses an
            # image that exists there): an abort leaves nothing behind.
            self.op(ctx, m, generation, m['dest_terminal_id'],
                    'remove_images', '%s.remove_images' % m['id'],
                    {'images': [v['dest_image'] for v in m['volumes']],
                     'prefixes': shipments_mod.snapshot_prefixes(ctx, m)})
        cinder.unmark(m)
        cutover.restore_errored_servers(ctx, m)
        common.unlock_servers(ctx, m)
        m = common.step(ctx, m, 'aborted', values={'finished_at': db.now()})
