"""FedexSiteFilter: no scheduled move ever crosses to the other Ceph cluster.

A site is a set of hosts in host aggregates whose metadata says
``fedex_site=<name>`` (the name in those computes' ``[fedex] site``). A
cold migration, resize, evacuation, unshelve or scheduled live migration
that would put a server on a host of another site is refused: Nova would
boot it there from a stale retained image, or a missing one. FedEx
cutovers do not go through the scheduler: the manager forces the
destination host (API microversion 2.30 to 2.67, ``force``), and
nova_fedex's driver checks them instead.

The server's site is the site of its current host, or, for a server
without a host (shelved offloaded), of its availability zone. New servers
and hosts outside every site pass.
"""

from oslo_log import log as logging

from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from nova.scheduler import filters
from nova.scheduler.filters import utils

LOG = logging.getLogger(__name__)

SITE_KEY = 'fedex_site'
_CACHE = '_fedex_server_site'


def host_site(host_state):
    sites = utils.aggregate_values_from_key(host_state, SITE_KEY)
    return sites.pop() if len(sites) == 1 else (
        ','.join(sorted(sites)) if sites else None)


def _sites_of_aggregates(aggregates):
    return {a.metadata[SITE_KEY] for a in aggregates if SITE_KEY in a.metadata}


def server_site(context, instance_uuid):
    """Site of the server's disks, or None (a new server, or no site)."""
    try:
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            context, instance_uuid)
    except nova_exception.InstanceMappingNotFound:
        return None
    if mapping.cell_mapping is None:
        return None                       # still a build request
    with nova_context.target_cell(context, mapping.cell_mapping) as cctxt:
        try:
            instance = objects.Instance.get_by_uuid(cctxt, instance_uuid,
                                                    expected_attrs=[])
        except nova_exception.InstanceNotFound:
            return None
    if instance.host:
        sites = _sites_of_aggregates(
            objects.AggregateList.get_by_host(context, instance.host))
    elif instance.availability_zone:
        sites = _sites_of_aggregates(
            a for a in objects.AggregateList.get_by_metadata_key(
                context, 'availability_zone')
            if a.metadata.get('availability_zone') ==
            instance.availability_zone)
    else:
        return None
    return ','.join(sorted(sites)) if sites else None


class FedexSiteFilter(filters.BaseHostFilter):
    """Only hosts of the server's own site (Ceph cluster) pass."""

    # A rebuild stays on its host: nothing to check.
    RUN_ON_REBUILD = False

    def _server_site(self, spec_obj):
        if not hasattr(spec_obj, _CACHE):
            site = None
            if spec_obj.obj_attr_is_set('instance_uuid'):
                # A context of our own: the request's may be inside a
                # database transaction of the scheduler's.
                site = server_site(nova_context.get_admin_context(),
                                   spec_obj.instance_uuid)
            setattr(spec_obj, _CACHE, site)
        return getattr(spec_obj, _CACHE)

    def host_passes(self, host_state, spec_obj):
        site = host_site(host_state)
        if site is None:
            return True
        mine = self._server_site(spec_obj)
        if mine is None or mine == site:
            return True
        LOG.info('FedexSiteFilter: %s is at site %s and server %s at site '
                 '%s: only a FedEx cutover moves a server between sites',
                 host_state.host, site, spec_obj.instance_uuid, mine)
        return False
