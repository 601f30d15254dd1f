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

Nova's API answers a refused move with its bare "No valid host was found"
and has no room for a filter's reason. When the refused host is the one
the move asked for (``--host``: the request's ``requested_destination``),
the refusal is the whole answer: the filter then logs it at WARNING and
records it as an event of the server's instance action
(``fedex_site_filter``, result Error, the reason in its details), where
``openstack server event show`` shows it (doc/source/nova.rst). A host of
the other site filtered out of a move the scheduler chooses for is normal
and logged at INFO.
"""

from oslo_log import log as logging

from nova import conf as nova_conf
from nova import context as nova_context
from nova import exception as nova_exception
from nova import objects
from nova.scheduler import filters
from nova.scheduler.filters import utils

CONF = nova_conf.CONF
LOG = logging.getLogger(__name__)

SITE_KEY = 'fedex_site'
_CACHE = '_fedex_server_site'
_RECORDED = '_fedex_refusal_recorded'
# The instance action's event that says why (its details: the reason).
EVENT = 'fedex_site_filter'
USE = "use 'openstack server migrate --live-migration --fedex'"
# Nova keeps the first 255 characters of an event's details.
REASON = ('server at site %(mine)s, host %(host)s at site %(site)s: only a '
          'FedEx migration moves a server between sites; ' + USE)


def host_site(host_state):
    sites = utils.aggregate_values_from_key(host_state, SITE_KEY)
    return sites.pop() if len(sites) == 1 else (
        ','.join(sorted(sites)) if sites else None)


def _sites_of_aggregates(aggregates):
    return {a.metadata[SITE_KEY] for a in aggregates if SITE_KEY in a.metadata}


def _cell(context, instance_uuid):
    """The server's cell mapping, or None (unknown, or still a build)."""
    try:
        mapping = objects.InstanceMapping.get_by_instance_uuid(
            context, instance_uuid)
    except nova_exception.InstanceMappingNotFound:
        return None
    return mapping.cell_mapping


def server_site(context, instance_uuid):
    """Site of the server's disks, or None (a new server, or no site)."""
    cell = _cell(context, instance_uuid)
    if cell is None:
        return None                       # still a build request
    with nova_context.target_cell(context, cell) as cctxt:
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
        asked = _asked_for(spec_obj, host_state)
        (LOG.warning if asked else LOG.info)(
            'FedexSiteFilter: server %s is at site %s and host %s at site '
            '%s: only a FedEx migration moves a server between sites; %s',
            spec_obj.instance_uuid, mine, host_state.host, site, USE)
        if asked and not getattr(spec_obj, _RECORDED, False):
            setattr(spec_obj, _RECORDED, True)
            record_refusal(spec_obj, REASON % {
                'mine': mine, 'host': host_state.host, 'site': site})
        return False


def _asked_for(spec_obj, host_state):
    """True if the move asked for this host (``--host``): no other one."""
    if not spec_obj.obj_attr_is_set('requested_destination'):
        return False
    dest = spec_obj.requested_destination
    if dest is None:
        return False
    host = dest.host if dest.obj_attr_is_set('host') else None
    node = dest.node if dest.obj_attr_is_set('node') else None
    return bool(host or node) and host in (None, host_state.host) and \
        node in (None, host_state.nodename)


def record_refusal(spec_obj, reason):
    """The reason, as an Error event of the server's instance action.

    The action of the request (its request id), else the server's newest
    one (Nova's own fallback for an admin context). Never raises: the
    log line says it too.
    """
    uuid = spec_obj.instance_uuid
    try:
        context = nova_context.get_admin_context()
        request = getattr(spec_obj, '_context', None)
        if getattr(request, 'request_id', None):
            context.request_id = request.request_id
        cell = _cell(context, uuid)
        if cell is None:
            return
        with nova_context.target_cell(context, cell) as cctxt:
            objects.InstanceActionEvent.event_start(
                cctxt, uuid, EVENT, want_result=False, host=CONF.host)
            # A traceback marks the event Error; the reason is its
            # details (shown from microversion 2.84).
            objects.InstanceActionEvent.event_finish_with_failure(
                cctxt, uuid, EVENT, exc_val=reason, exc_tb=reason,
                want_result=False)
    except Exception as e:  # noqa: scheduling goes on regardless
        LOG.warning('FedexSiteFilter: the refusal of server %s not '
                    'recorded in its instance action: %s', uuid, e)
