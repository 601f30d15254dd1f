"""A migration request's forecast: its figures gathered, each one sourced.

What :func:`request_forecast` reads, and where (the words go with each
figure, so the preview can say what it assumes):

* each image's provisioned and allocated bytes from the source site's Ceph
  (allocated: the RADOS objects that exist, which the export ships);
* each server's memory from its Nova flavor (``[nova]`` credentials);
* the link's rate and round trip from ``[planner] wan_link`` for the pair
  of sites (else the defaults, said to be), capped for the catch-up by the
  options' ``rate_cap`` in force now;
* the courier's door to door from its timetable (a plugin's
  ``transit_time()``), else ``[planner] transit_time``;
* the devices and shipments as the manager will pack them
  (:func:`fedex_manager.shipments.pack`) on the blank devices of the
  source terminal;
* the guests' dirty rate and the disks' write rate from the request, else
  the ``[planner]`` defaults, said to be defaults;
* the cutovers at once: the options' ``max_parallel_cutovers`` when the
  request gives it (forecast as a wave of these servers would run, one
  migration each, that many cutting over at a time), else one after
  another.

It also runs the migration's preflight, and a refusal becomes a warning
(the forecast still says what the request would take once it can start).
The arithmetic is :mod:`fedex_manager.actions.forecast`'s.
"""

import collections
import math

from oslo_config import cfg
from oslo_log import log as logging

from fedex_manager.actions import forecast as model
from fedex_manager.actions import sites
from fedex_manager import couriers
from fedex_manager.db import api as db
from fedex_manager import options as options_mod
from fedex_manager import opts
from fedex_manager import planner
from fedex_manager import preflight
from fedex_manager import shipments
from fedex_manager import states
from lsrp import exception
from lsrp import rbd as lsrp_rbd

CONF = cfg.CONF
LOG = logging.getLogger(__name__)
MIB = 1 << 20


def _conf():
    model.register_opts(CONF)
    CONF.register_opts(opts.conductor_opts, group='conductor')
    return CONF


def _site(ctx, name, reasons):
    try:
        return db.get(ctx, 'site', name)
    except exception.NotFound:
        reasons.append('no site %s (known: %s)' % (name, ', '.join(
            s['name'] for s in sites.site_list(ctx)) or 'none registered'))


def _image_names(server):
    for v in server.get('volumes') or []:
        yield v if isinstance(v, str) else v['source_image']


def _ceph_sizes(site, images, reasons):
    """{image: (provisioned, allocated)} read from ``site``'s cluster."""
    out = {}
    if not site.get('ceph_conf'):
        reasons.append('site %s has no Ceph configuration: the images\' '
                       'sizes cannot be read' % site['name'])
        return out
    try:
        with lsrp_rbd.Cluster(site['ceph_conf'], site.get('ceph_keyring'),
                              client=site.get('ceph_client') or 'admin',
                              site=site['name']) as cluster:
            for spec in images:
                pool, name = spec.split('/', 1)
                try:
                    with cluster.pool(pool) as p, p.open_image(
                            name, read_only=True) as image:
                        # Whole objects: nearly free with fast-diff.
                        allocated = sum(e.length for e in image.extents(
                            whole_object=True) if e.exists)
                        out[spec] = (image.size(), allocated)
                except exception.FedexException as e:
                    reasons.append('image %s at site %s: %s' % (
                        spec, site['name'], e))
    except exception.FedexException as e:
        reasons.append('site %s: %s' % (site['name'], e))
    return out


def _memory_and_host(cloud, server_id, notes, reasons):
    """The server's RAM in bytes and its compute host (None: unknown).

    From its Nova record, read as the migration's preflight reads it (the
    ``[nova]`` service user): the forecast accepts the servers a POST
    /v1/migrations would. The notes say where the memory comes from.
    """
    if cloud is None:
        notes.append('no memory counted for server %s: the manager has no '
                     '[nova] credentials to read its flavor.' % server_id)
        return 0, None
    status, body = cloud.server(server_id)
    server = (body or {}).get('server') or {}
    if status == 404:
        reasons.append('server %s does not exist in Nova' % server_id)
        return 0, None
    if status != 200:
        reasons.append('server %s: Nova answered HTTP %d' % (
            server_id, status))
        return 0, None
    flavor = server.get('flavor') or {}
    ram = int(flavor.get('ram') or 0)
    said = 'server %s: %d MiB of memory (flavor %s)' % (
        server_id, ram, flavor.get('original_name') or '?')
    host = server.get('OS-EXT-SRV-ATTR:host')
    touched = _resident(cloud, server_id, ram * MIB)
    if touched is None:
        notes.append(said + '.')
        return ram * MIB, host
    notes.append(said + ', %d MiB of it ever touched by the guest (QEMU\'s '
                 'resident set in Nova\'s server diagnostics): the memory '
                 'copy sends those, the untouched pages cross as zero '
                 'pages.' % (touched // MIB))
    return touched, host


def _resident(cloud, server_id, ram):
    """The bytes of the guest's memory QEMU holds (None: not known).

    What the memory copy's first round sends, as nova_fedex measures it
    before the cutover (libvirt's memory stats, ``rss``; QEMU's own
    memory is in it too, a few tens of MiB under KVM, more under TCG;
    None when it is not less than the flavor's figure). Read from Nova's
    server diagnostics (an admin API; a driver other than libvirt, a
    server not running or a policy that says no leave the flavor's
    figure).
    """
    try:
        status, body = cloud.diagnostics(server_id)
    except Exception as e:  # noqa: the flavor's figure is the fallback
        LOG.debug('server %s: no diagnostics: %s', server_id, e)
        return None
    rss = (body or {}).get('memory-rss') if status == 200 else None
    if not isinstance(rss, (int, float)) or not 0 < rss * 1024 < ram:
        return None     # unknown, or no fewer pages than the flavor's
    return int(rss) * 1024


def hosts_allow(parallel, hosts, per_host, notes, warnings):
    """The cutovers at once that the servers' source hosts let run.

    ``hosts``: the source host of each server (None: not known). Nova runs
    ``per_host`` live migrations at a time on a host ([planner]
    live_migrations_per_host) and queues the others: a wave of 8 servers on
    one host with max_parallel_cutovers = 4 cuts over one at a time under
    Nova's default of 1. Unknown hosts are not bounded.
    """
    if parallel <= 1 or not hosts or None in hosts:
        return parallel
    counts = collections.Counter(hosts)
    allowed = sum(min(per_host, n) for n in counts.values())
    if allowed >= parallel:
        return parallel
    said = ('Nova runs %d live migration(s) at a time per source host '
            '([planner] live_migrations_per_host, its '
            'max_concurrent_live_migrations) and the servers are on %d '
            'host(s): %d cutover(s) at once, not max_parallel_cutovers = %d; '
            'the others wait in Nova\'s queue.'
            % (per_host, len(counts), allowed, parallel))
    notes.append(said)
    warnings.append(said)
    return allowed


def _rate_given(value, field, default_opt, what, notes):
    if value is not None:
        rate = planner.parse_rate(value, field)
        if not math.isfinite(rate):
            raise exception.InvalidPlanInput(field=field,
                                             reason='%r is not finite' % value)
        notes.append('%s %s, as given.' % (what, _mibps(rate)))
        return rate
    rate = planner.parse_rate(getattr(CONF.planner, default_opt), field)
    notes.append('%s %s: a default ([planner] %s), not measured.' % (
        what, _mibps(rate), default_opt))
    return rate


def link_of(src, dst, notes, cap=0):
    """(rate, round trip) of the link between two sites, with notes.

    ``[planner] wan_link``'s line for the pair; else the migration's rate
    cap ``cap`` (the one WAN figure the request gives), else the default.
    """
    conf = CONF.planner
    for line in conf.wan_link:
        words = line.split()
        if len(words) in (3, 4) and {words[0], words[1]} == {src, dst}:
            rate = planner.parse_rate(words[2], 'wan_link')
            rtt = planner.parse_duration(
                words[3] if len(words) == 4 else conf.default_round_trip,
                'wan_link')
            notes.append('the link %s-%s: %s, %s round trip ([planner] '
                         'wan_link%s).' % (
                             src, dst, planner.rate(rate),
                             _secs(rtt), '' if len(words) == 4
                             else '; round trip a default'))
            return rate, rtt
    rtt = planner.parse_duration(conf.default_round_trip,
                                 'default_round_trip')
    if cap:
        notes.append('the link %s-%s: %s (the rate cap), %s round trip '
                     'assumed: no [planner] wan_link names it.' % (
                         src, dst, planner.rate(cap), _secs(rtt)))
        return float(cap), rtt
    rate = planner.parse_rate(conf.default_wan_rate, 'default_wan_rate')
    notes.append('the link %s-%s: %s, %s round trip assumed: no [planner] '
                 'wan_link names it.' % (src, dst, planner.rate(rate),
                                         _secs(rtt)))
    return rate, rtt


def transit_of(carrier, notes):
    """Seconds from dispatch until the delivery is recorded, with notes."""
    courier = couriers.get(carrier)
    own = getattr(courier, 'transit_time', None)
    seconds = own() if callable(own) else None
    if seconds is None:
        seconds = planner.parse_duration(CONF.planner.transit_time,
                                         'transit_time')
        notes.append('courier %s: %s door to door ([planner] transit_time: '
                     'it publishes no timetable).' % (
                         carrier, _secs(seconds)))
    else:
        notes.append('courier %s: %s door to door (its timetable).' % (
            carrier, _secs(seconds)))
    # The sweeper records the carrier's events: half its interval, on
    # average, after they are due.
    wait = CONF.conductor.sweep_interval / 2.0
    notes.append('the delivery recorded %s later on average (half of '
                 '[conductor] sweep_interval).' % _secs(wait))
    return seconds + wait


def _terminal(ctx, site, name):
    if name:
        return db.get(ctx, 'terminal', name)
    terms = sites.terminal_list(ctx, site['id'])
    if not terms:
        return None

    def blank(t):
        return len(db.list_(ctx, 'device', {'terminal_id': t['id'],
                                            'state': states.D_BLANK}))
    return max(terms, key=lambda t: (t['health'] == 'UP', blank(t)))


def devices_of(ctx, site, terminal, volumes, parity, notes, warnings):
    """(devices, shipments) as the manager will pack them, with notes."""
    want = max(2, parity + 2)
    term = _terminal(ctx, site, terminal)
    blank = [] if term is None else db.list_(
        ctx, 'device', {'terminal_id': term['id'], 'state': states.D_BLANK},
        sort_key='slot', sort_dir='asc')
    capacity = shipments.set_capacity(blank[:want], parity) \
        if len(blank) >= want else None
    try:
        bins = shipments.pack(volumes, capacity)
    except exception.ManagerError as e:
        warnings.append(str(e))
        bins = [volumes]
    where = term['name'] if term else 'site %s' % site['name']
    if capacity is None:
        notes.append('%d device(s) per shipment (parity %d); %s has %d '
                     'blank: their capacity is unknown, one shipment '
                     'assumed.' % (want, parity, where, len(blank)))
    else:
        notes.append('%d device(s) per shipment (parity %d), %s of data '
                     'each on %s\'s blank devices.' % (
                         want, parity, _size(capacity), where))
    needed = want * max(1, len(bins))
    if len(blank) < needed:
        warnings.append('%s has %d blank device(s), the shipments need %d: '
                        'the export waits for more.' % (where, len(blank),
                                                        needed))
    return needed, max(1, len(bins))


def _size(n):
    return '%.2f GiB' % (n / float(1 << 30))


def _secs(seconds):
    """A duration for the notes: milliseconds below a second."""
    if seconds < 1:
        return '%d ms' % round(seconds * 1000)
    return planner.duration(seconds)


def _preflight(ctx, servers, volumes, source, dest, opts_, cloud, body,
               warnings):
    images = servers + ([{'server_id': None, 'volumes': volumes}]
                        if volumes else [])
    try:
        preflight.check(ctx, images, source['name'], dest['name'],
                        pool_map=body.get('pool_map'),
                        parity=opts_['parity'], cloud=cloud,
                        dest_host=body.get('dest_host'),
                        volume_ids=[v['volume_id'] for v in volumes])
    except exception.PreflightFailed as e:
        warnings.extend('created now, it would be refused: %s' % r
                        for r in e.reasons)


def request_forecast(ctx, body, servers, volumes, cloud=None,
                     dirty_rate=None, write_rate=None):
    """The forecast of a migration request (``body``: POST /v1/migrations').

    ``servers`` and ``volumes``: the request's, each server with its
    images (``volumes``), as fedex-api reads them; ``cloud``: Nova to ask
    (None: no memory counted). PreflightFailed when the figures cannot be
    read (a site or an image unknown): every reason at once.
    """
    conf = _conf()
    reasons, warnings = [], []
    notes = {k: [] for k in ('disks', 'memory', 'dirty_rate', 'write_rate',
                             'link', 'transit', 'terminals', 'devices',
                             'catch_up', 'cutover', 'pause')}
    source, dest = (_site(ctx, body[k], reasons)
                    for k in ('source_site', 'dest_site'))
    if reasons:
        raise exception.PreflightFailed(reasons)
    opts_ = options_mod.validate(body.get('options'))
    parallel = parallel_cutovers(body.get('options'))
    groups = servers + ([{'server_id': None, 'volumes': volumes}]
                        if volumes else [])
    sizes = _ceph_sizes(source, [i for g in groups for i in _image_names(g)],
                        reasons)
    notes['disks'].append('allocated bytes of the images read from site '
                          '%s\'s Ceph (whole RADOS objects).' % source['name'])
    dirty = _rate_given(dirty_rate, 'dirty_rate', 'default_dirty_rate',
                        'memory dirtied at', notes['dirty_rate'])
    writes = _rate_given(write_rate, 'write_rate', 'default_write_rate',
                         'disks written at', notes['write_rate'])
    members, packed, hosts = [], [], []
    for g in groups:
        sid = g['server_id']
        memory = 0
        if sid:
            memory, host = _memory_and_host(cloud, sid, notes['memory'],
                                            reasons)
            hosts.append(host)
        allocated = provisioned = 0
        for spec in _image_names(g):
            size, used = sizes.get(spec, (0, 0))
            allocated += used
            provisioned += size
            packed.append({'source_image': spec, 'size_bytes': size})
        notes['disks'].append('%s: %s allocated of %s.' % (
            'server %s' % sid if sid else 'the detached volumes',
            _size(allocated), _size(provisioned)))
        # Nothing writes a detached volume, nor dirties its memory.
        members.append(model.Server(
            server_id=sid or 'detached volumes', allocated=allocated,
            memory=memory, dirty_rate=dirty if sid else 0.0,
            write_rate=writes if sid else 0.0, guest=bool(sid)))
    if reasons:
        raise exception.PreflightFailed(reasons)
    _preflight(ctx, servers, volumes, source, dest, opts_, cloud, body,
               warnings)
    cap = options_mod.rate_cap(opts_)
    rate, rtt = link_of(source['name'], dest['name'], notes['link'], cap)
    if cap:
        notes['link'].append('catch-up rounds capped at %s (rate_cap in force '
                             'now).' % _mibps(cap))
    carrier = opts_.get('carrier') or conf.conductor.courier
    transit = transit_of(carrier, notes['transit'])
    export = planner.parse_rate(conf.planner.export_rate, 'export_rate')
    import_ = planner.parse_rate(conf.planner.import_rate, 'import_rate')
    notes['terminals'].append(
        'export at %s, import at %s ([planner] export_rate, import_rate).'
        % (_mibps(export), _mibps(import_)))
    devices, ships = devices_of(ctx, source, body.get('source_terminal'),
                                packed, opts_['parity'], notes['devices'],
                                warnings)
    overhead = float(conf.conductor.op_poll_interval)
    notes['catch_up'].append(
        'rounds until the next would send %s or less (threshold_bytes), at '
        'most %d (max_rounds); each also waits %s for the conductor\'s look '
        '([conductor] op_poll_interval).' % (
            _mib(opts_['threshold_bytes']), opts_['max_rounds'],
            _secs(overhead)))
    stated = parallel
    parallel = hosts_allow(parallel, hosts,
                           conf.planner.live_migrations_per_host,
                           notes['cutover'], warnings)
    bounded_by = ('max_parallel_cutovers, as a wave would' if
                  parallel == stated else
                  'what the hosts\' live_migrations_per_host allow')
    setup = planner.parse_duration(conf.planner.cutover_setup,
                                   'cutover_setup')
    notes['cutover'].append(
        'servers cut over %s, Nova\'s own steps %s each ([planner] '
        'cutover_setup)%s.' % (
            'one after another' if parallel == 1 else
            '%d at a time (%s), the memory copies running at once sharing '
            'the link' % (parallel, bounded_by),
            _secs(setup), '; the wait for your approval is not '
            'counted' if opts_['cutover'] == 'approved' else ''))
    route = model.Route(
        link_rate=rate, round_trip=rtt,
        catch_up_rate=min(rate, cap) if cap else rate, export_rate=export,
        import_rate=import_, transit=transit, devices=devices,
        shipments=ships, threshold=opts_['threshold_bytes'],
        max_rounds=opts_['max_rounds'], round_overhead=overhead,
        memory_downtime=planner.parse_duration(conf.planner.memory_downtime,
                                               'memory_downtime'),
        pause_fixed=planner.parse_duration(conf.planner.pause_fixed,
                                           'pause_fixed'),
        plain_pause_fixed=planner.parse_duration(
            conf.planner.plain_pause_fixed, 'plain_pause_fixed'),
        cutover_setup=setup,
        downtime_budget=opts_['downtime_budget'] or None,
        convergence=opts_['convergence'], parallel_cutovers=parallel)
    notes['pause'].append(
        'a fixed %s ([planner] pause_fixed; %s for a plain live migration), '
        'the memory left when a pre-copy round fits %s ([planner] '
        'memory_downtime), the final delta over the link, one round trip.'
        % (_secs(route.pause_fixed), _secs(route.plain_pause_fixed),
           _secs(route.memory_downtime)))
    return model.forecast(members, route, _assumes(notes), warnings)


def parallel_cutovers(options):
    """The cutovers the forecast runs at once for the request's options.

    ``max_parallel_cutovers`` bounds only a wave's members
    (:func:`fedex_manager.waves.bound`), yet its default (2) is in every
    migration's options; one migration of several servers asks Nova for
    all their live migrations at once, which Nova's
    ``max_concurrent_live_migrations`` (1 per source host by default)
    queues: forecast one after another. So only a request that states it
    is forecast as a wave would run: the way to ask for a wave's forecast
    (POST /v1/waves takes the same body; without it, its bound is 2).
    """
    return (options or {}).get('max_parallel_cutovers') or 1


def _mib(n):
    return '%.2f MiB' % (n / float(MIB))


def _mibps(rate):
    return '%.2f MiB/s' % (rate / float(MIB))


# The figures the preview shows, and the notes each one rests on.
FIGURES = {
    'total_time': ('disks', 'link', 'terminals', 'transit', 'write_rate',
                   'catch_up', 'cutover', 'memory', 'dirty_rate'),
    'wan_bytes': ('disks', 'memory', 'write_rate', 'dirty_rate',
                  'catch_up'),
    'expected_pause': ('pause', 'memory', 'dirty_rate', 'write_rate',
                       'link'),
    'devices': ('devices', 'disks'),
    'shipments': ('devices',),
}


def _assumes(notes):
    notes = {k: [n[:1].upper() + n[1:] for n in v] for k, v in notes.items()}
    out = {figure: [n for key in keys for n in notes[key]]
           for figure, keys in FIGURES.items()}
    out.update(notes)
    return out
