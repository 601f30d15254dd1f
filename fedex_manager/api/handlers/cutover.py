"""What Nova's compute driver (nova_fedex) asks of the manager at a cutover.

``GET /v1/servers/{server_id}/cutover``: the cutover plan of the server's
current migration (state, where every disk lands in cluster B, the
destination terminal that takes the final delta); 404 when no migration
names the server. ``POST /v1/migrations/{migration_id}/cutover-events``:
what the cutover did; ``completed`` and ``rolled_back`` end the CUTTING_OVER
state. The contract is nova_fedex.manager_client's.
"""

import configparser
import re

from fedex_manager.actions import cutover as cutover_actions
from fedex_manager.api import handlers
from fedex_manager.api import util
from fedex_manager.db import api as db
from fedex_manager.policies import migration as rules
from fedex_manager import policy
from fedex_manager import states
from lsrp import exception

EVENTS = ('dirty_rate', 'refused', 'migrating', 'paused_at_destination', 'delta_applied',
          'resumed', 'completed', 'rolled_back', 'stranded',
          # After the resume: whole images compared (nova_fedex).
          'final_state_checked', 'final_state_mismatch',
          'final_state_unchecked')
EVENT_SCHEMA = {
    'type': 'object', 'additionalProperties': False,
    'required': ['event'],
    'properties': {'event': {'enum': list(EVENTS)},
                   'host': {'type': ['string', 'null']},
                   'details': {'type': 'object'}}}


def _cluster(site):
    """fsid and v1 monitor addresses (what QEMU's librbd is given).

    A site registered without a readable ceph.conf is the operator's to
    fix: 409 naming the site and its file (not a 500 of ours).
    """
    if not site['ceph_conf']:
        raise exception.Conflict(
            kind='site', id=site['name'], reason='registered without '
            'ceph_conf: the cutover plan needs its cluster\'s monitors')
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    try:
        with open(site['ceph_conf']) as f:
            parser.read_file(f)
        conf = {k.replace(' ', '_'): v for k, v in parser['global'].items()}
    except (OSError, ValueError, KeyError, configparser.Error) as e:
        raise exception.Conflict(
            kind='site', id=site['name'], reason='cannot read the monitors '
            'of its cluster from its ceph.conf %s: %s' % (
                site['ceph_conf'], 'no [global] section'
                if isinstance(e, KeyError) else e))
    mon_host = conf.get('mon_host', '')
    monitors = re.findall(r'v1:([^,\]\s]+)', mon_host)
    if not monitors:
        monitors = [m for m in re.split(r'[,\s]+', mon_host)
                    if m and not m.startswith(('[', 'v2:'))]
    return {'fsid': conf.get('fsid'), 'monitors': monitors}


def _migration_of(ctx, server_id):
    found = [m for m in db.list_(ctx, 'migration', sort_key='created_at',
                                 sort_dir='desc')
             if m['state'] not in states.MIGRATION_FINAL and
             any(s['server_id'] == server_id for s in m['servers'])]
    return found[0] if found else None


def plan(ctx, m, server_id):
    source = db.get(ctx, 'site', m['source_site_id'])
    dest = db.get(ctx, 'site', m['dest_site_id'])
    terminal = db.get(ctx, 'terminal', m['dest_terminal_id'])
    host, _, port = (terminal['lsrp_address'] or '').rpartition(':')
    shipments = sorted({v['shipment_id'] for v in m['volumes']
                        if v['shipment_id']})
    shipment = db.get(ctx, 'shipment', shipments[0]) if shipments else None
    server = [s for s in m['servers'] if s['server_id'] == server_id]
    disks = [{'kind': v['kind'], 'source': v['source_image'],
              'destination': v['dest_image'], 'volume_id': v['volume_id']}
             for v in m['volumes'] if v['server_id'] in (server_id, None)]
    return {'id': m['id'], 'state': m['state'].lower(),
            'server_id': server_id, 'source_site': source['name'],
            'destination_site': dest['name'],
            'destination_host': m['dest_host'],
            'shipment_id': shipment['name'] if shipment else None,
            'destination_cluster': _cluster(dest),
            'terminal': {'host': host, 'port': port,
                         'server_name': terminal['name']},
            'disks': disks,
            # The verdict on its memory copy, once nova_fedex measured it.
            'convergence': server[0].get('convergence') if server else None}


def show(req):
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.CUTOVER_PLAN)
    server_id = req.urlvars['server_id']
    m = _migration_of(ctx, server_id)
    if m is None:
        raise exception.NotFound(kind='FedEx migration of server',
                                 id=server_id)
    return util.json_response(200, {'cutover': plan(ctx, m, server_id)})


def event_text(name, host, details):
    """The event's line: what happened, where the server is, who says so.

    The source's nova-compute reports the whole cutover (it drives
    libvirt's migration), so its host is the reporter, not where the guest
    was resumed or now runs (``dest``, with ``completed``).
    """
    text = 'nova: %s' % name
    if details.get('dest'):
        text += ', the server now on %s' % details['dest']
    text += ' (reported by %s)' % (host or '?')
    if details.get('reason'):
        text += ': %s' % details['reason']
    return text


def event(req):
    ctx = handlers.context(req)
    policy.authorize(ctx, rules.CUTOVER_EVENT)
    body = util.extract_json(req, EVENT_SCHEMA)
    m = db.get(ctx, 'migration', req.urlvars['migration_id'])
    details = body.get('details') or {}
    name = body['event']
    if name == 'dirty_rate':
        # The check before the pause: the verdict, kept and told.
        try:
            cutover_actions.record_convergence(
                ctx, m['id'], details.get('server_id'), details,
                host=body.get('host'))
        except (KeyError, TypeError, ValueError,
                exception.InvalidPlanInput) as e:
            raise exception.InvalidInput(field='dirty_rate details',
                                         reason=str(e))
        return util.json_response(202, {'event': name})
    db.add_event(ctx, 'migration', m['id'], 'cutover',
                 event_text(name, body.get('host'), details),
                 migration_id=m['id'], details=dict(details, event=name))
    if name in cutover_actions.FINAL_STATE_REPORTS:
        # What the cleanup of a migration kept for no days waited for.
        cutover_actions.cleanup_when_due(ctx, m['id'])
    if m['state'] == states.CUTTING_OVER:
        try:
            if name == 'completed':
                cutover_actions.migration_cutover_finish(ctx, m['id'],
                                                         success=True)
            elif name == 'rolled_back':
                cutover_actions.migration_cutover_finish(
                    ctx, m['id'], success=False,
                    reason=details.get('reason') or 'rolled back by Nova')
        except (exception.InvalidTransition, exception.Conflict):
            # Ended meanwhile by the conductor's read-back of Nova's
            # records: the report is recorded, the end is. Not nova_fedex's
            # error.
            if db.get(ctx, 'migration', m['id'])['state'] == \
                    states.CUTTING_OVER:
                raise
    return util.json_response(202, {'event': name})
