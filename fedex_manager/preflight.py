"""Preflight of a migration: every reason it cannot work, before anything
is bought, written or shipped.

Checks what the manager can see: both sites and their terminals, blank
devices enough at the source, every source image present (and its size) in
the source Ceph cluster, room in the destination pools, no destination image
in the way. A migration doomed at cutover must be refused here, not after a
courier carried its devices.
"""

import collections

from fedex_manager.actions import devices
from fedex_manager.actions import sites
from fedex_manager import cloud_preflight
from fedex_manager.db import api as db
from fedex_manager import states
from lsrp import exception
from lsrp import rbd as lsrp_rbd

Image = collections.namedtuple('Image', 'server_id source dest')


def _site(ctx, name, field, reasons):
    if not name:
        reasons.append('%s: a site is needed' % field)
        return None
    try:
        return db.get(ctx, 'site', name)
    except exception.NotFound:
        reasons.append('%s: no site %s (known: %s)' % (
            field, name, ', '.join(s['name'] for s in sites.site_list(ctx))
            or 'none registered'))
        return None


def _images(servers, pool_map):
    for server in servers:
        for v in server.get('volumes') or []:
            src = v if isinstance(v, str) else v.get('source_image')
            if not src or '/' not in src:
                yield Image(server.get('server_id'), src, None)
                continue
            pool, name = src.split('/', 1)
            dest = (None if isinstance(v, str) else v.get('dest_image')) \
                or '%s/%s' % (pool_map.get(pool, pool), name)
            yield Image(server.get('server_id'), src, dest)


def _terminals(ctx, site, role, reasons):
    terms = sites.terminal_list(ctx, site['id'])
    if not terms:
        reasons.append('%s site %s has no terminal; register one' % (
            role, site['name']))
    elif not any(t['health'] == 'UP' for t in terms):
        reasons.append('%s site %s: no terminal is up (%s)' % (
            role, site['name'], ', '.join('%s %s' % (t['name'], t['health'])
                                          for t in terms)))
    return terms


def _ceph(site):
    return lsrp_rbd.Cluster(site['ceph_conf'], site.get('ceph_keyring'),
                            client=site.get('ceph_client') or 'admin',
                            site=site['name'])


def _source_sizes(site, images, reasons):
    sizes = {}
    with _ceph(site) as cluster:
        for img in images:
            pool, name = img.source.split('/', 1)
            try:
                with cluster.pool(pool) as p, p.open_image(
                        name, read_only=True) as handle:
                    sizes[img.source] = handle.size()
            except exception.FedexException as e:
                reasons.append('server %s: image %s at site %s: %s' % (
                    img.server_id, img.source, site['name'], e))
    return sizes


def _destination_room(site, images, sizes, reasons):
    need = collections.Counter()
    with _ceph(site) as cluster:
        for img in images:
            pool, name = img.dest.split('/', 1)
            need[pool] += sizes.get(img.source, 0)
            try:
                with cluster.pool(pool) as p:
                    if p.image_exists(name):
                        reasons.append(
                            'server %s: image %s already exists at site %s; '
                            'remove it or map the pool elsewhere' % (
                                img.server_id, img.dest, site['name']))
            except exception.FedexException as e:
                reasons.append('site %s: %s' % (site['name'], e))
        for pool, want in sorted(need.items()):
            try:
                space = cluster.pool_space(pool)
            except exception.FedexException:
                continue    # already named above
            if space['full'] or space['left'] < want:
                reasons.append(
                    'site %s: pool %s has %d bytes left, the images need %d'
                    % (site['name'], pool, space['left'], want))


def check(ctx, servers, source_site, dest_site, pool_map=None,
          parity=1, cloud=None, dest_host=None, volume_ids=()):
    """The images' total size and their sizes, or PreflightFailed.

    PreflightFailed lists every reason the migration cannot work.
    ``cloud``: a :class:`fedex_manager.cloud_preflight.Cloud` to ask Nova,
    Cinder and Placement too (servers, volumes, room at ``dest_host`` or
    in the destination site's aggregate).
    """
    reasons = []
    pool_map = pool_map or {}
    src = _site(ctx, source_site, 'source_site', reasons)
    dst = _site(ctx, dest_site, 'dest_site', reasons)
    if src and dst and src['id'] == dst['id']:
        reasons.append('source and destination are both site %s'
                       % src['name'])
    images = list(_images(servers, pool_map))
    for img in images:
        if img.dest is None:
            reasons.append('server %s: %r is not POOL/IMAGE' % (
                img.server_id, img.source))
    images = [i for i in images if i.dest]
    if not images:
        reasons.append('no image to move')
    src_terms = _terminals(ctx, src, 'source', reasons) if src else []
    if dst:
        _terminals(ctx, dst, 'destination', reasons)
    sizes = {}
    if src and src.get('ceph_conf') and images:
        sizes = _source_sizes(src, images, reasons)
    if dst and dst.get('ceph_conf') and images:
        _destination_room(dst, images, sizes, reasons)
    total = sum(sizes.values())
    if src:
        blank = [d for t in src_terms for d in devices.device_list(
            ctx, {'terminal_id': t['id'], 'state': states.D_BLANK})]
        capacity = sum(d['capacity_bytes'] or 0 for d in blank)
        # Parity devices hold no data: the largest ones may be lost.
        usable = capacity - sum(sorted(
            (d['capacity_bytes'] or 0 for d in blank), reverse=True)[:parity])
        if not blank:
            reasons.append('source site %s: no blank device at a terminal '
                           'of it; register devices first' % src['name'])
        elif len(blank) <= parity:
            reasons.append(
                'source site %s: %d blank device(s), but parity %d needs '
                'more than %d' % (src['name'], len(blank), parity, parity))
        elif total and usable < total:
            reasons.append(
                'source site %s: blank devices hold %d bytes (after parity '
                '%d), the images need %d' % (src['name'], usable, parity,
                                             total))
    if cloud is not None and volume_ids:
        reasons += cloud_preflight.volume_reasons(
            cloud, volume_ids, src and src['name'])[0]
    if cloud is not None:
        reasons += cloud_preflight.reasons(
            cloud, [s['server_id'] for s in servers if s.get('server_id')],
            dest_host=dest_host,
            dest_aggregate=(dst or {}).get('aggregate'))
    if reasons:
        raise exception.PreflightFailed(reasons)
    return total, sizes
