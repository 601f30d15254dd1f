"""The receive phase: DELIVERED .. CATCHING_UP.

:class:`Custody` waits for each shipment's devices at the destination
terminal and checks them against the seal record; :class:`Import` imports
each shipment (once for its group) and posts the catch-up.
"""

import time

from oslo_config import cfg

from fedex_manager import custody
from fedex_manager.db import api as db
from fedex_manager.flows.tasks import common
from fedex_manager import jobs
from fedex_manager import shipments as shipments_mod
from fedex_manager import states
from lsrp import exception

CONF = cfg.CONF


class Receive(common.PhaseTask):
    phase = 'receive'
    allowed = (states.DELIVERED, states.IMPORTING)


class BeginReceive(common.Begin, Receive):
    pass


def _seal_record(ctx, m, s):
    op = db.get(ctx, 'operation', common._shipment_op(s, 'seal'))
    return op['result']


def _paths_at(ctx, s, terminal_id):
    return [d['path'] for d in db.devices_of(ctx, s['id'])
            if d['terminal_id'] == terminal_id and d['path']]


class Custody(Receive):
    """Wait for each shipment's devices at the destination, then check."""

    def run(self, ctx, m, generation):
        for s in common._shipments_of(ctx, m):
            if s['state'] == states.S_TAMPERED:
                raise exception.CustodyMismatch(
                    shipment=s['name'], reason='the shipment is TAMPERED')
            if s['state'] == states.S_DELIVERED:
                self.check(ctx, m, generation, s)

    def check(self, ctx, m, generation, s):
        seal = _seal_record(ctx, m, s)
        want = len(seal['labels']) - s['parity']
        announced = False
        grace = None
        while True:
            paths = _paths_at(ctx, s, m['dest_terminal_id'])
            if len(paths) >= len(seal['labels']):
                break
            if len(paths) >= want:
                # Parity covers the rest: wait a little for stragglers.
                grace = grace or time.monotonic() + 30
                if time.monotonic() > grace:
                    break
            if not announced:
                db.add_event(ctx, 'migration', m['id'], 'custody',
                             'waiting for the devices of %s to be plugged '
                             'in at the destination terminal (%d of %d)'
                             % (s['name'], len(paths), len(seal['labels'])),
                             migration_id=m['id'])
                announced = True
            time.sleep(CONF.conductor.op_poll_interval)
            common.guard(ctx, m['id'], generation, self.phase, self.allowed)
        params = {'shipment_id': s['name'], 'key_ref': s['key_ref'],
                  'devices': paths, 'labels': seal['labels'],
                  'manifest_digest': s['manifest_digest'],
                  'parity': s['parity']}
        try:
            report = self.op(ctx, m, generation, m['dest_terminal_id'],
                             'verify', common._shipment_op(s, 'verify'),
                             params)
        except exception.OperationFailed as e:
            if 'CustodyMismatch' in str(e) or 'Verification' in str(e):
                common.advance(ctx, 'shipment', s['id'], 'tamper',
                               event_kind='custody', message=str(e)[:2000])
                custody.destroy_key(ctx, s, 'shipment tampered')
                raise exception.CustodyMismatch(
                    shipment=s['name'], reason='%s; re-ship it (reship) or '
                    'seed over the WAN' % e)
            raise
        for d in db.devices_of(ctx, s['id']):
            d = common.advance(ctx, 'device', d['id'], 'receive')
            common.advance(ctx, 'device', d['id'], 'verify')
        common.advance(ctx, 'shipment', s['id'], 'verify',
                       event_kind='custody', details={
                    'missing': report.get('missing_serials'),
                    'repaired_chunks': report.get('repaired_chunks')},
                       message='custody check passed: serials, seal and '
                       'every chunk match the manifest')


class Import(Receive):
    """Each shipment of the migration, imported once for the group."""

    def run(self, ctx, m, generation):
        m = common.step(ctx, m, 'import')
        if m['state'] != states.IMPORTING:
            return
        for s in common._shipments_of(ctx, m):
            if s['state'] not in (states.S_VERIFIED, states.S_IMPORTED):
                raise exception.ManagerError(
                    reason='shipment %s of migration %s is %s, not VERIFIED'
                    % (s['name'], m['id'], s['state']))
            pool_map = {}
            for v in common._group_volumes(shipments_mod.members(ctx, m)):
                if v['shipment_id'] == s['id']:
                    pool_map[v['source_image'].split('/')[0]] = \
                        v['dest_image'].split('/')[0]
            params = {'shipment_id': s['name'], 'key_ref': s['key_ref'],
                      'devices': _paths_at(ctx, s, m['dest_terminal_id']),
                      'manifest_digest': s['manifest_digest'],
                      'pool_map': pool_map}
            self.op(ctx, m, generation, m['dest_terminal_id'], 'import',
                    common._shipment_op(s, 'import'), params)
            common.advance(ctx, 'shipment', s['id'], 'import')
        common.step(ctx, m, 'catch_up')
        jobs.post(ctx, m['id'], 'catchup')
