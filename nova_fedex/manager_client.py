"""The one place where nova_fedex talks to the FedEx migration manager.

Nova's side needs two things from the manager: the *cutover plan* of a
server (is its migration ready, where every disk lands at site B, which
terminal takes the final delta) and a way to *report* what happened during
the cutover. :class:`ManagerClient` is that interface; :class:`FedexApiClient`
implements it over fedex-api (Keystone service type ``vm-shipping``) with
fedexclient.

REST contract (implemented by the manager's API, see doc/source/nova.rst):

* ``GET /v1/servers/{server_id}/cutover`` -> 200 ``{"cutover": PLAN}``, or
  404 when no FedEx migration names the server.
* ``POST /v1/migrations/{migration_id}/cutover-events`` with
  ``{"event": EVENT, "host": HOST, "details": {...}}`` -> 202.
"""

import collections

from keystoneauth1 import loading as ks_loading
from oslo_log import log as logging

from fedexclient import client as fedex_client
from fedexclient import exceptions as fedex_exc
from lsrp import exception

LOG = logging.getLogger(__name__)

SERVICE_TYPE = fedex_client.SERVICE_TYPE
# The manager's migration state in which Nova may cut over (MANAGER.md:
# ready_for_cutover --'cutover'--> cutting_over, then the manager calls
# Nova's live migration).
READY_STATES = ('cutting_over',)

# Events reported to the manager, in the order a cutover goes through them.
EVENTS = ('dirty_rate', 'refused', 'migrating', 'paused_at_destination',
          'delta_applied', 'resumed', 'completed', 'rolled_back', 'stranded')

Terminal = collections.namedtuple('Terminal', 'host port server_name')
Disk = collections.namedtuple('Disk', 'kind source destination volume_id')


class Cluster(collections.namedtuple('Cluster', 'fsid monitors')):
    """The destination Ceph cluster: ``monitors`` is [(host, port), ...]."""


class CutoverPlan(collections.namedtuple(
        'CutoverPlan', 'migration_id state server_id source_site '
                       'destination_site destination_host shipment_id '
                       'cluster terminal disks convergence',
        defaults=(None,))):
    """What the manager says about one server's FedEx migration.

    ``disks``: every rbd image of the server (root, ephemeral, swap, config
    drive, attached volumes), ``source`` and ``destination`` as
    ``pool/image`` in clusters A and B. ``convergence``: the manager's
    verdict on the guest's memory copy once its dirty rate was reported
    (``means``, ``reason``, ``max_bandwidth``, ``copy_timeout``, the
    forecast), else None (nova_fedex.virt.libvirt.convergence).
    """

    @property
    def ready(self):
        return (self.state or '').lower() in READY_STATES

    def disk_for_source(self, spec):
        for disk in self.disks:
            if disk.source == spec:
                return disk
        return None

    def disk_for_destination(self, spec):
        for disk in self.disks:
            if disk.destination == spec:
                return disk
        return None

    def volume(self, volume_id):
        for disk in self.disks:
            if disk.volume_id == volume_id:
                return disk
        return None

    @classmethod
    def from_dict(cls, body):
        """Build a plan from fedex-api's JSON; a clear error if malformed."""
        try:
            cluster = body['destination_cluster']
            monitors = []
            for mon in cluster['monitors']:
                host, _, port = str(mon).rpartition(':')
                monitors.append((host.strip('[]'), port))
            terminal = body['terminal']
            return cls(
                migration_id=body['id'], state=body['state'],
                server_id=body['server_id'],
                source_site=body['source_site'],
                destination_site=body['destination_site'],
                destination_host=body.get('destination_host'),
                shipment_id=body['shipment_id'],
                cluster=Cluster(cluster.get('fsid'), monitors),
                terminal=Terminal(terminal['host'], int(terminal['port']),
                                  terminal['server_name']),
                disks=[Disk(d['kind'], d['source'], d['destination'],
                            d.get('volume_id')) for d in body['disks']],
                convergence=body.get('convergence'))
        except (KeyError, TypeError, ValueError) as e:
            raise exception.ManagerUnavailable(
                request='the cutover plan', reason='malformed answer '
                '(missing or bad %s)' % e)


class ManagerClient(object):
    """Interface: what nova_fedex asks of the manager."""

    def get_cutover(self, context, instance):
        """The :class:`CutoverPlan` of ``instance``, or None if none.

        Raises ManagerUnavailable when the manager cannot answer.
        """
        raise NotImplementedError()

    def report(self, context, plan, event, host, **details):
        """Tell the manager what the cutover of ``plan`` just did.

        Never raises: a report that cannot be sent is logged (the manager
        reconciles from Nova's migration record).
        """
        raise NotImplementedError()


class FedexApiClient(ManagerClient):
    """:class:`ManagerClient` over fedex-api, with fedexclient.

    The keystoneauth adapter is nova.conf's ``[fedex]``.
    """

    def __init__(self, conf, group='fedex'):
        auth = ks_loading.load_auth_from_conf_options(conf, group)
        session = ks_loading.load_session_from_conf_options(
            conf, group, auth=auth)
        adapter = ks_loading.load_adapter_from_conf_options(
            conf, group, session=session, auth=auth)
        self._client = fedex_client.Client(adapter=adapter)

    def get_cutover(self, context, instance):
        what = 'GET the cutover plan of server %s' % instance.uuid
        try:
            body = self._client.cutover.get(instance.uuid)
        except fedex_exc.NotFound:
            return None
        except fedex_exc.HttpError as e:
            raise exception.ManagerUnavailable(request=what,
                                               reason=e.summary)
        except fedex_exc.ClientException as e:
            raise exception.ManagerUnavailable(request=what, reason=e,
                                               cause=e)
        return CutoverPlan.from_dict(body)

    def report(self, context, plan, event, host, **details):
        what = 'the %s event of migration %s' % (event, plan.migration_id)
        try:
            self._client.cutover.report(plan.migration_id, event, host,
                                        details)
        except fedex_exc.ClientException as e:
            reason = ('HTTP %d' % e.status
                      if isinstance(e, fedex_exc.HttpError) else e)
            LOG.warning('%s (the manager reconciles from the Nova '
                        'migration record)', exception.ManagerUnavailable(
                            request=what, reason=reason, cause=e))


def register_opts(conf, group='fedex'):
    ks_loading.register_session_conf_options(conf, group)
    ks_loading.register_auth_conf_options(conf, group)
    ks_loading.register_adapter_conf_options(conf, group)
    conf.set_default('service_type', SERVICE_TYPE, group=group)


def list_opts():
    opts = (ks_loading.get_session_conf_options() +
            ks_loading.get_auth_common_conf_options() +
            ks_loading.get_adapter_conf_options(include_deprecated=False))
    return opts
