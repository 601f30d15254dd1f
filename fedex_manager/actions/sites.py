"""Sites (a Ceph cluster and its zone) and their terminals.

A terminal registers at every start and beats while it runs; its health
is UP while its heartbeats are recent and its LSRP port answers.
"""

from fedex_manager.db import api as db
from fedex_manager import rpc
from lsrp import exception

HEARTBEAT_TIMEOUT = 60


def site_register(ctx, name, ceph_conf=None, ceph_keyring=None,
                  ceph_client='admin', availability_zone=None,
                  aggregate=None):
    return db.create(ctx, 'site', dict(
        name=name, ceph_conf=ceph_conf, ceph_keyring=ceph_keyring,
        ceph_client=ceph_client, availability_zone=availability_zone,
        aggregate=aggregate))


def site_list(ctx, limit=None, marker=None, sort_key='name',
              sort_dir='asc'):
    return db.list_(ctx, 'site', limit=limit, marker=marker,
                    sort_key=sort_key, sort_dir=sort_dir)


def site_show(ctx, site):
    return db.get(ctx, 'site', site)


def terminal_register(ctx, name, site, rpc_topic=None, capacity_bytes=0,
                      slots=0, lsrp_address=None):
    site = db.get(ctx, 'site', site)
    try:
        existing = db.get(ctx, 'terminal', name)
    except exception.NotFound:
        existing = None
    values = dict(site_id=site['id'],
                  rpc_topic=rpc_topic or rpc.terminal_topic(name),
                  capacity_bytes=capacity_bytes, slots=slots,
                  lsrp_address=lsrp_address)
    if existing:
        # A terminal re-registers at every start: same name, new details.
        return db.update(ctx, 'terminal', existing['id'], values)
    values['name'] = name
    values['state'] = 'UNKNOWN'
    return db.create(ctx, 'terminal', values)


def terminal_heartbeat(ctx, name, info=None):
    """A terminal's heartbeat; ``info['lsrp']`` is its data port's health.

    A terminal whose lsrp-server does not complete a TLS handshake (it
    still recovers after a restart, or died) is DOWN although its agent
    answers: catch-up rounds from its peers would fail on it.
    """
    term = db.get(ctx, 'terminal', name)
    was = term['state']
    state = 'DOWN' if (info or {}).get('lsrp') == 'DOWN' else 'UP'
    term = _heartbeat(ctx, term, info, state)
    if was != state:
        db.add_event(ctx, 'terminal', term['id'], 'health',
                     'terminal %s is up (was %s)' % (name, was)
                     if state == 'UP' else
                     'terminal %s: its agent answers but its LSRP port '
                     'does not accept connections (was %s)' % (name, was))
    return term


def _heartbeat(ctx, term, info, state='UP'):
    with db.writer(ctx) as session:
        row = db._get(session, 'terminal', term['id'])
        row.last_heartbeat = db.now()
        row.state = state
        if info is not None:
            row.info = info
        session.flush()
        return row.as_dict()


def _health(term, now=None):
    now = now or db.now()
    beat = db.utcfromiso(term.get('last_heartbeat'))
    if beat is None:
        term['health'] = 'UNKNOWN'
    else:
        age = (now - beat).total_seconds()
        term['heartbeat_age'] = round(age, 1)
        term['health'] = 'UP' if age <= HEARTBEAT_TIMEOUT and \
            term.get('state') != 'DOWN' else 'DOWN'
    return term


def terminal_list(ctx, site=None, limit=None, marker=None, sort_key='name',
                  sort_dir='asc'):
    filters = {}
    if site:
        filters['site_id'] = db.get(ctx, 'site', site)['id']
    return [_health(t) for t in db.list_(
        ctx, 'terminal', filters, limit=limit, marker=marker,
        sort_key=sort_key, sort_dir=sort_dir)]


def terminal_show(ctx, terminal):
    return _health(db.get(ctx, 'terminal', terminal))
