"""Preflight against the cloud: what Nova, Cinder and Placement say.

Before anything is bought, a migration is refused for every server that
does not exist or is not ACTIVE (or is busy), that has what the cutover
cannot move (multiattach or encrypted volumes, a vTPM, PCI devices), and
when the destination host (or the destination site's aggregate) has no
room in Placement for the servers' vCPUs and memory.

The service user of ``[nova]`` (keystoneauth options, the same credentials
the conductor uses for the cutover's live migration) reaches Nova, Cinder
and Placement through the endpoints of the Keystone catalog. Without
``[nova] auth_type`` the manager runs without Nova (the sandbox's own
cutover) and these checks are skipped: :func:`from_conf` returns None.
"""

import urllib.parse

from keystoneauth1 import adapter as ks_adapter
from oslo_config import cfg
from oslo_log import log as logging

from lsrp import exception

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

# 2.47: a server's flavor embedded with its extra specs, vcpus and ram.
COMPUTE_VERSION = '2.47'
DIAGNOSTICS_VERSION = '2.1'
# 3.48: a volume's ``encrypted`` and ``multiattach`` (3.0 has both too).
VOLUME_VERSION = '3.0'
PLACEMENT_VERSION = '1.10'
# Flavor extra specs and image properties the cutover cannot carry over.
VTPM_SPECS = ('hw:tpm_version', 'hw:tpm_model')
VTPM_PROPERTIES = ('hw_tpm_version', 'hw_tpm_model')
PCI_SPECS = ('pci_passthrough:alias',)


class Cloud(object):
    """Adapters to Nova, Cinder, Placement (and Glance) of one session."""

    def __init__(self, compute, volume, placement, image=None):
        self.compute = compute
        self.volume = volume
        self.placement = placement
        self.image = image

    @classmethod
    def from_conf(cls, conf=CONF):
        """The cloud of ``[nova]``'s credentials, or None without them."""
        from fedex_manager import nova
        from keystoneauth1 import loading as ks_loading

        nova.register_opts(conf)
        if not conf.nova.auth_type:
            return None
        auth = ks_loading.load_auth_from_conf_options(conf, nova.GROUP)
        session = ks_loading.load_session_from_conf_options(
            conf, nova.GROUP, auth=auth)
        common = {'session': session, 'auth': auth,
                  'region_name': conf.nova.region_name,
                  'interface': (conf.nova.valid_interfaces or
                                ['internal', 'public'])}
        return cls(ks_adapter.Adapter(service_type='compute', **common),
                   ks_adapter.Adapter(service_type='block-storage',
                                      **common),
                   ks_adapter.Adapter(service_type='placement', **common),
                   ks_adapter.Adapter(service_type='image', **common))

    def _get(self, adapter, url, version_header):
        resp = adapter.get(url, raise_exc=False,
                           headers={'OpenStack-API-Version': version_header})
        return resp.status_code, (resp.json() if resp.content else {})

    def server(self, server_id):
        return self._get(self.compute, '/servers/%s' % server_id,
                         'compute %s' % COMPUTE_VERSION)

    def diagnostics(self, server_id):
        # 2.1: libvirt's own figures, QEMU's memory-rss (KiB) among them
        # (2.48 on keep only the driver-neutral ones, without it).
        return self._get(self.compute, '/servers/%s/diagnostics' % server_id,
                         'compute %s' % DIAGNOSTICS_VERSION)

    def volume_of(self, volume_id):
        return self._get(self.volume, '/volumes/%s' % volume_id,
                         'volume %s' % VOLUME_VERSION)

    def image_properties(self, image_id):
        if self.image is None or not image_id:
            return {}
        status, body = self._get(self.image, '/v2/images/%s' % image_id,
                                 'image 2')
        return body if status == 200 else {}

    def placement_get(self, url):
        return self._get(self.placement, url,
                         'placement %s' % PLACEMENT_VERSION)


def _server_reasons(cloud, server_id, needs):
    """Reasons ``server_id`` cannot be moved; adds its vCPUs/RAM to needs."""
    status, body = cloud.server(server_id)
    if status == 404:
        return ['server %s does not exist in Nova' % server_id]
    if status != 200:
        return ['server %s: Nova answered HTTP %d (%s)' % (
            server_id, status, str(body)[:200])]
    server = body['server']
    sid, reasons = server['id'], []
    if server['status'] != 'ACTIVE':
        reasons.append('server %s is %s, not ACTIVE' % (sid,
                                                        server['status']))
    task = server.get('OS-EXT-STS:task_state')
    if task:
        reasons.append('server %s is busy (%s)' % (sid, task))
    flavor = server.get('flavor') or {}
    specs = flavor.get('extra_specs') or {}
    image = server.get('image') or {}
    props = cloud.image_properties(image.get('id') if isinstance(
        image, dict) else None)
    vtpm = [k for k in VTPM_SPECS if specs.get(k)] + [
        k for k in VTPM_PROPERTIES if props.get(k)]
    if vtpm:
        reasons.append('server %s has a vTPM (%s), which the cutover does '
                       'not carry over' % (sid, ', '.join(vtpm)))
    pci = [k for k in PCI_SPECS if specs.get(k)]
    if pci:
        reasons.append('server %s has PCI devices (%s=%s), which the cutover '
                       'cannot move' % (sid, pci[0], specs[pci[0]]))
    for att in server.get('os-extended-volumes:volumes_attached') or []:
        vstatus, vbody = cloud.volume_of(att['id'])
        if vstatus != 200:
            reasons.append('server %s: volume %s: Cinder answered HTTP %d'
                           % (sid, att['id'], vstatus))
            continue
        vol = vbody['volume']
        if vol.get('multiattach'):
            reasons.append('server %s: volume %s is multiattach, which the '
                           'cutover does not support' % (sid, vol['id']))
        if vol.get('encrypted'):
            reasons.append('server %s: volume %s is encrypted, which the '
                           'cutover does not support' % (sid, vol['id']))
    _add_flavor(needs, flavor)
    return reasons


def _add_flavor(needs, flavor):
    """Add a server's flavor (vCPUs, memory) to ``needs`` in Placement."""
    needs['VCPU'] += int(flavor.get('vcpus') or 0)
    needs['MEMORY_MB'] += int(flavor.get('ram') or 0)


def _free(cloud, provider):
    """{resource class: room left} of a Placement resource provider."""
    _s, inv = cloud.placement_get('/resource_providers/%s/inventories'
                                  % provider)
    _s, use = cloud.placement_get('/resource_providers/%s/usages'
                                  % provider)
    used = use.get('usages') or {}
    out = {}
    for rc, i in (inv.get('inventories') or {}).items():
        total = (i['total'] - i.get('reserved', 0)) * i.get(
            'allocation_ratio', 1.0)
        out[rc] = int(total) - used.get(rc, 0)
    return out


def _host_free(cloud, host):
    """{resource class: room left} of compute host ``host``, or None.

    None when ``host`` is not a resource provider in Placement.
    """
    status, body = cloud.placement_get(
        '/resource_providers?name=%s' % urllib.parse.quote(host))
    providers = body.get('resource_providers') or []
    if status != 200 or not providers:
        return None
    return _free(cloud, providers[0]['uuid'])


def _aggregate(cloud, name):
    """Nova's host aggregate called ``name``, or None."""
    _s, body = cloud._get(cloud.compute, '/os-aggregates', 'compute 2.41')
    found = [a for a in body.get('aggregates') or [] if a['name'] == name]
    return found[0] if found else None


def _capacity_reasons(cloud, needs, dest_host=None, dest_aggregate=None):
    wanted = {rc: n for rc, n in needs.items() if n}
    if not wanted:
        return []
    if dest_host:
        free = _host_free(cloud, dest_host)
        if free is None:
            return ['destination host %s is not a resource provider in '
                    'Placement' % dest_host]
        short = ['%s: %d left, %d needed' % (rc, free.get(rc, 0), n)
                 for rc, n in sorted(wanted.items()) if free.get(rc, 0) < n]
        if short:
            return ['destination host %s has no room for the servers (%s)'
                    % (dest_host, '; '.join(short))]
        return []
    if dest_aggregate:
        agg = _aggregate(cloud, dest_aggregate)
        if agg is None:
            return ['destination aggregate %s does not exist in Nova'
                    % dest_aggregate]
        _s, body = cloud.placement_get('/resource_providers?member_of=%s'
                                       % agg['uuid'])
        free = {}
        for rp in body.get('resource_providers') or []:
            for rc, n in _free(cloud, rp['uuid']).items():
                free[rc] = free.get(rc, 0) + n
        short = ['%s: %d left, %d needed' % (rc, free.get(rc, 0), n)
                 for rc, n in sorted(wanted.items()) if free.get(rc, 0) < n]
        if short:
            return ['the hosts of destination aggregate %s have no room for '
                    'the servers (%s)' % (dest_aggregate, '; '.join(short))]
    return []


def choose_host(cloud, server_ids, aggregate):
    """A host of ``aggregate`` for servers whose migration named none.

    Among the aggregate's nova-compute hosts that are up and enabled, the
    one with the most memory left in Placement that has room for all the
    servers' vCPUs and memory (they move together). Returns the host's
    name; raises NoDestinationHost saying why there is none.
    """
    needs = {'VCPU': 0, 'MEMORY_MB': 0}
    for sid in server_ids:
        status, body = cloud.server(sid)
        if status == 200:
            _add_flavor(needs, body['server'].get('flavor') or {})
    agg = _aggregate(cloud, aggregate)
    if agg is None:
        raise exception.NoDestinationHost(
            aggregate=aggregate, reason='no such aggregate in Nova')
    _s, body = cloud._get(cloud.compute,
                          '/os-services?binary=nova-compute', 'compute 2.41')
    usable = {s['host'] for s in body.get('services') or []
              if s.get('state') == 'up' and s.get('status') == 'enabled'}
    hosts = sorted(h for h in agg.get('hosts') or [] if h in usable)
    if not hosts:
        raise exception.NoDestinationHost(
            aggregate=aggregate,
            reason='none of its hosts (%s) has an enabled nova-compute that '
                   'is up' % (', '.join(agg.get('hosts') or []) or 'none'))
    room = {}
    for host in hosts:
        free = _host_free(cloud, host)
        if free is not None:
            room[host] = free
    fits = [h for h in hosts if h in room and all(
        room[h].get(rc, 0) >= n for rc, n in needs.items() if n)]
    if not fits:
        raise exception.NoDestinationHost(
            aggregate=aggregate,
            reason='no host has room for %d vCPUs and %d MB (%s)' % (
                needs['VCPU'], needs['MEMORY_MB'], '; '.join(
                    '%s: %s' % (h, room.get(h, 'not in Placement'))
                    for h in hosts)))
    return max(fits, key=lambda h: (room[h].get('MEMORY_MB', 0),
                                    -hosts.index(h)))


def volume_reasons(cloud, volume_ids, source_site=None):
    """Reasons detached volumes cannot move on their own, and their zones.

    Returns ``(reasons, {volume id: availability zone})``. A volume moved
    on its own must be detached (``available``): an attached one moves with
    its server, whose cutover switches the attachment.
    """
    out, zones = [], {}
    for vid in volume_ids:
        status, body = cloud.volume_of(vid)
        if status == 404:
            out.append('volume %s does not exist in Cinder' % vid)
            continue
        if status != 200:
            out.append('volume %s: Cinder answered HTTP %d (%s)' % (
                vid, status, str(body)[:200]))
            continue
        vol = body['volume']
        zones[vid] = vol.get('availability_zone')
        if vol['status'] == 'in-use':
            out.append('volume %s is attached: migrate its server instead '
                       '(openstack server migrate --live-migration --fedex)'
                       % vid)
        elif vol['status'] != 'available':
            out.append('volume %s is %s, not available'
                       % (vid, vol['status']))
        if vol.get('multiattach'):
            out.append('volume %s is multiattach, which is not supported'
                       % vid)
        if vol.get('encrypted'):
            out.append('volume %s is encrypted, which is not supported'
                       % vid)
        if source_site and zones[vid] != source_site:
            out.append('volume %s is in availability zone %s, not at the '
                       'source site %s' % (vid, zones[vid], source_site))
    return out, zones


def reasons(cloud, server_ids, dest_host=None, dest_aggregate=None):
    """Every reason Nova, Cinder and Placement give against the move."""
    needs = {'VCPU': 0, 'MEMORY_MB': 0}
    out = []
    for sid in server_ids:
        out += _server_reasons(cloud, sid, needs)
    out += _capacity_reasons(cloud, needs, dest_host, dest_aggregate)
    return out
