"""FedexLibvirtDriver: Nova's libvirt driver, plus the cross-cluster cutover.

Without ``[fedex] site`` (or for a live migration between two computes of
the same site) every method below is the stock LibvirtDriver's. A live
migration to a compute of *another* site is a FedEx cutover, and only that:

1. ``check_can_live_migrate_destination`` (dest) adds a marker with its site,
   cephx user and libvirt secret to the migrate data;
   ``check_can_live_migrate_source`` (source) refuses, with the server left
   ACTIVE where it is, unless the manager says the server's migration is
   cutting over and the server has nothing this version cannot move.
2. ``live_migration`` (source) opens the terminal connections for the final
   delta and a libvirt connection to the destination *before* the guest
   pauses, then runs the stock migration with a guest proxy: the destination
   XML names cluster B for every rbd disk (it is the persistent definition
   too) and ``VIR_MIGRATE_PAUSED`` is set, so the guest arrives paused.
3. At libvirt's COMPLETED (the source QEMU has stopped), the wrapped
   ``post_method`` applies the final delta of every disk, resumes the guest
   at B, and only then lets Nova's post-migration run. Any failure before
   the resume migrates the paused guest back and resumes it at the source,
   then runs Nova's rollback: the server is ACTIVE at the source, its
   migration ``failed``, with an instance fault saying why.
"""

import functools
import threading
import time

from nova.compute import power_state
from nova.compute import task_states
from nova.compute import utils as compute_utils
from nova.compute import vm_states
import nova.conf
from nova import exception as nova_exception
from nova import objects
from nova.virt import driver as virt_driver
from nova.virt import hardware
from nova.virt.libvirt import driver as libvirt_driver
from oslo_log import log as logging

from lsrp import exception
from nova_fedex import conf as fedex_conf
from nova_fedex import final_delta
from nova_fedex import manager_client
from nova_fedex.virt.libvirt import convergence
from nova_fedex.virt.libvirt import leftovers
from nova_fedex.virt.libvirt import rbd_xml

CONF = nova.conf.CONF
fedex_conf.register_opts(CONF)
LOG = logging.getLogger(__name__)

# libvirt's VIR_MIGRATE_PAUSED (1 << 5); nova's fake libvirt lacks it.
VIR_MIGRATE_PAUSED = 32
MARKER_SERIAL = 'fedex-site'
MARKER_TYPE = 'fedex-site'


def _libvirt():
    # At call time: nova's LibvirtFixture swaps the module in the driver.
    return libvirt_driver.libvirt


def _add_marker(migrate_data, site, target):
    """Put this compute's site and rbd identity into ``migrate_data.bdms``.

    LibvirtLiveMigrateData has no free-form field and out-of-tree code
    cannot add one; ``bdms`` entries whose serial matches no disk are
    ignored by Nova's ``_update_volume_xml``, its only reader.
    """
    bdms = [b for b in (migrate_data.bdms if 'bdms' in migrate_data else [])
            if b.serial != MARKER_SERIAL]
    marker = objects.LibvirtLiveMigrateBDMInfo(
        serial=MARKER_SERIAL, bus='none', dev='none', type=MARKER_TYPE,
        format=None, boot_index=None)
    marker.connection_info = {'driver_volume_type': MARKER_TYPE,
                              'data': {'site': site,
                                       'rbd_user': target.user,
                                       'rbd_secret_uuid': target.secret_uuid,
                                       # Where another site reaches us.
                                       'wan_address': CONF.fedex.wan_address}}
    bdms.append(marker)
    migrate_data.bdms = bdms


def _record_fault(context, instance, error):
    """An instance fault whose message says what happened.

    Nova keeps only the class name of an exception that is not one of its
    own: wrap ours so that ``openstack server show`` tells the reason.
    """
    compute_utils.add_instance_fault_from_exc(
        context, instance, nova_exception.MigrationError(
            reason='FedEx cutover: %s' % error))


def peer_of(migrate_data):
    """(site, RbdTarget) the destination reported, or None."""
    if migrate_data is None or 'bdms' not in migrate_data:
        return None
    for bdm in migrate_data.bdms:
        if bdm.serial == MARKER_SERIAL and bdm.type == MARKER_TYPE:
            data = bdm.connection_info['data']
            return data['site'], rbd_xml.RbdTarget(data['rbd_user'],
                                                   data['rbd_secret_uuid'])
    return None


def peer_wan_address(migrate_data):
    """The destination's ``[fedex] wan_address`` from its marker, or None."""
    if migrate_data is None or 'bdms' not in migrate_data:
        return None
    for bdm in migrate_data.bdms:
        if bdm.serial == MARKER_SERIAL and bdm.type == MARKER_TYPE:
            return bdm.connection_info['data'].get('wan_address')
    return None


class _Cutover(object):
    """What the source keeps for one FedEx cutover in flight."""

    def __init__(self, plan, peer_site, target, src_xml, was_paused):
        self.plan = plan
        self.peer_site = peer_site
        self.target = target
        self.src_xml = src_xml
        self.was_paused = was_paused
        self.delta = None
        self.peer = None          # libvirt connection to the destination
        # ... and one to this host's libvirt, for the check inside the
        # pause: Nova's own goes through eventlet's tpool, whose answer a
        # thread outside the hub waited up to 0.2 s for.
        self.local = None
        self.refused = None       # why the guest proxy did not migrate
        self.migrating = False    # libvirt's migration call was made
        self.flags = None         # the flags the migration ran with
        self.timings = {}
        # The pause's work (final delta, resume) runs once, in whichever
        # thread reaches it first: libvirt's migration call returning
        # (the exact end of the memory copy) or Nova's monitor, which
        # polls the job every 0.5 s.
        self.pause_lock = threading.Lock()
        self.pause_claimed = False
        self.pause_done = threading.Event()
        self.failure = None       # why the pause's work failed
        self.reports = []         # (event, details) to send after it
        self.sent = 0             # how many of them were sent
        self.send_lock = threading.Lock()
        self.early_reports = None  # the timer that sends them early
        self.context = None       # Nova's request context, for them
        self.after_copy = None    # callable(): the pause's work
        self.peer_events = None   # the destination's lifecycle callback
        self.trigger = None       # what started the pause's work
        self.copy_watchdog = None
        self.recovered = False    # Nova's rollback ran: the guest is here

    def watchdog(self, guest):
        """The bound of the memory copy (the manager's), started; or None."""
        timeout = (self.plan.convergence or {}).get('copy_timeout')
        domain = getattr(guest, '_domain', None)
        if not timeout or domain is None:
            return None
        self.copy_watchdog = convergence.Watchdog(
            domain, timeout, lambda: self.pause_claimed,
            describe='server %s' % self.plan.server_id).start()
        return self.copy_watchdog

    def close(self):
        if self.early_reports is not None:
            self.early_reports.cancel()
        if self.peer_events is not None:
            try:
                self.peer.domainEventDeregisterAny(self.peer_events)
            except Exception as e:
                LOG.debug('deregistering the destination\'s events: %s', e)
            self.peer_events = None
        if self.delta is not None:
            self.delta.close()
            cluster = getattr(self.delta, 'owned_cluster', None)
            if cluster is not None:
                cluster.close()
        for conn in (self.peer, self.local):
            if conn is None:
                continue
            try:
                conn.close()
            except Exception as e:
                LOG.debug('closing a libvirt connection: %s', e)


class _FedexGuest(object):
    """The source Guest, with a migrate() for a FedEx cutover."""

    def __init__(self, guest, cutover):
        self._guest = guest
        self._cutover = cutover

    def __getattr__(self, name):
        return getattr(self._guest, name)

    def migrate(self, destination, migrate_uri=None, migrate_disks=None,
                destination_xml=None, flags=0, bandwidth=0, parallel=0):
        lv = _libvirt()
        cutover = self._cutover
        try:
            if flags & lv.VIR_MIGRATE_NON_SHARED_INC:
                raise exception.CutoverRefused(
                    server=cutover.plan.server_id,
                    reason='a block migration would copy the disks')
            if not destination_xml:
                raise exception.CutoverRefused(
                    server=cutover.plan.server_id,
                    reason='no destination XML to point at cluster B')
            destination_xml = rbd_xml.rewrite(destination_xml, cutover.plan,
                                              cutover.target)
        except exception.FedexException as e:
            # Not raised: Nova would set the server to ERROR. The job never
            # started, so Nova's monitor finds the guest running here and
            # rolls back; live_migration() records why.
            LOG.error('FedEx: migration not started: %s', e)
            cutover.refused = e
            return
        flags = (flags | VIR_MIGRATE_PAUSED) & ~lv.VIR_MIGRATE_POSTCOPY
        flags, bandwidth = convergence.apply(cutover.plan.convergence, flags,
                                             bandwidth)
        cutover.flags = flags
        cutover.timings['migrate'] = time.monotonic()
        cutover.migrating = True
        watchdog = cutover.watchdog(self._guest)
        try:
            result = self._guest.migrate(
                destination, migrate_uri=migrate_uri,
                migrate_disks=migrate_disks, destination_xml=destination_xml,
                flags=flags, bandwidth=bandwidth, parallel=parallel)
        finally:
            if watchdog is not None:
                watchdog.stop()
        # The memory is copied and the source QEMU stopped: the pause has
        # begun. Do its work now rather than at Nova's next poll (usually
        # begun already, on the destination's event: see _fedex_watch).
        if cutover.after_copy is not None:
            cutover.after_copy('migrate returned')
        return result


class FedexLibvirtDriver(libvirt_driver.LibvirtDriver):
    """LibvirtDriver with the FedEx cutover; stock otherwise."""

    def __init__(self, virtapi, read_only=False):
        super().__init__(virtapi, read_only)
        self._fedex_cutovers = {}
        self._fedex_manager = None

    # --- per-host values (overridable: tests share one CONF) ---------------

    def _fedex_site(self):
        return CONF.fedex.site

    def _fedex_rbd_target(self):
        return rbd_xml.RbdTarget(CONF.libvirt.rbd_user,
                                 CONF.libvirt.rbd_secret_uuid)

    def _fedex_manager_client(self):
        if self._fedex_manager is None:
            self._fedex_manager = manager_client.FedexApiClient(CONF)
        return self._fedex_manager

    def _fedex_connect_peer(self, uri):
        """A libvirt connection to the destination (resume, migrate back)."""
        return _libvirt().open(uri)

    # --- the network between the sites ---------------------------------------

    def _fedex_use_wan(self, migrate_data, instance=None):
        """A cutover goes to the destination's ``[fedex] wan_address``.

        The destination reported it in its marker; Nova builds the libvirt
        URI of the destination and QEMU's migration URI from
        ``target_connect_addr``, and so does ``_fedex_prepare`` for its own
        connection (resume, events, migrate back). Unset there: the stock
        address (``live_migration_inbound_addr``).
        """
        addr = peer_wan_address(migrate_data)
        if addr:
            LOG.info('FedEx: cutover over the WAN to %s', addr,
                     instance=instance)
            migrate_data.target_connect_addr = addr

    @staticmethod
    def _fedex_inbound_addr():
        """Where the destination reaches this host to migrate a guest back."""
        return (CONF.fedex.wan_address or
                CONF.libvirt.live_migration_inbound_addr or CONF.host)

    @staticmethod
    def _fedex_terminal_host(host):
        """The host to reach a terminal at for the final delta."""
        return (CONF.fedex.terminal_hosts or {}).get(host, host)

    def _fedex_cluster(self):
        """This site's Ceph cluster, connected, as Nova's rbd user."""
        from lsrp.rbd import cluster as cluster_mod

        cluster = cluster_mod.Cluster(
            CONF.libvirt.images_rbd_ceph_conf,
            keyring=CONF.fedex.ceph_keyring,
            client=CONF.libvirt.rbd_user or 'admin', site=self._fedex_site())
        cluster.connect()
        return cluster

    def _fedex_final_delta(self, plan):
        """A FinalDelta for ``plan``, from this compute's configuration."""
        from lsrp import tls

        conf = CONF.fedex
        cluster = self._fedex_cluster()
        ctx = tls.client_context(conf.tls_ca, conf.tls_cert, conf.tls_key)
        terminal = plan.terminal
        name = conf.terminal_name or CONF.host
        from lsrp import catchup

        host = self._fedex_terminal_host(terminal.host)

        async def connect():
            return await catchup.TerminalClient(
                host, terminal.port, ctx, terminal.server_name,
                name).connect()

        delta = final_delta.FinalDelta(
            cluster, connect, plan.shipment_id,
            [d.source for d in plan.disks],
            'fedex-final-%s' % plan.migration_id[:8],
            streams=conf.final_delta_streams,
            retries=conf.final_delta_retries,
            verify=conf.final_delta_verify,
            describe=(terminal.server_name, plan.server_id))
        delta.owned_cluster = cluster
        return delta

    # --- a migrated server deleted ----------------------------------------

    def _cleanup_rbd(self, instance):
        """Nova's removal of the disks, once FedEx's copies are off them.

        See :mod:`nova_fedex.virt.libvirt.leftovers`. Not on a resize
        revert, whose root disk Nova keeps.
        """
        if self._fedex_site() and \
                instance.task_state != task_states.RESIZE_REVERTING:
            self._fedex_release_disks(instance)
        super()._cleanup_rbd(instance)

    def _fedex_release_disks(self, instance):
        try:
            cluster = self._fedex_cluster()
            try:
                with cluster.pool(CONF.libvirt.images_rbd_pool) as pool:
                    removed = leftovers.release(pool, instance.uuid)
            finally:
                cluster.close()
            if removed:
                LOG.info('FedEx: removed %s (a migration keeps them until '
                         'its cleanup) so that Nova can remove the disks',
                         ', '.join(removed), instance=instance)
        except Exception as e:     # never stops a delete
            LOG.warning('FedEx: the snapshots and records of a migration '
                        'on the disks were not removed (%s): Nova may fail '
                        'to remove the disks', e, instance=instance)

    # --- helpers -------------------------------------------------------------

    def _fedex_report(self, context, plan, event, **details):
        # Which server: a migration may move several, and the manager reads
        # each one's reports (a final delta applied) back on its own.
        details.setdefault('server_id', plan.server_id)
        try:
            self._fedex_manager_client().report(context, plan, event,
                                                CONF.host, **details)
        except Exception as e:     # reports never stop a cutover
            LOG.warning('FedEx: cannot report %s of migration %s: %s',
                        event, plan.migration_id, e)

    def _fedex_send(self, context, cutover):
        """The cutover's reports not sent yet, in order, each once."""
        with cutover.send_lock:
            while cutover.sent < len(cutover.reports):
                event, details = cutover.reports[cutover.sent]
                cutover.sent += 1
                self._fedex_report(context, cutover.plan, event, **details)

    def _fedex_send_later(self, cutover):
        """The reports so far, sent a while after the resume, if not yet.

        ``[fedex] early_report_delay`` after it, unless Nova's
        post-migration sent them first. Their time is the end of that
        post-migration: the guest's first moments at B need the CPU more.
        But a post-migration that fails after the destination took the
        server (RabbitMQ restarting under its call to the destination, in
        the soak), or a compute killed in it, would lose them, and without
        ``delta_applied`` the manager cannot tell that B holds the final
        state.
        """
        delay = CONF.fedex.early_report_delay
        if not delay:
            return
        timer = threading.Timer(delay, self._fedex_send,
                                args=(cutover.context, cutover))
        timer.daemon = True
        cutover.early_reports = timer
        timer.start()

    def _fedex_unsupported(self, instance, plan, migrate_data,
                           block_device_info):
        """What this server has that a FedEx cutover cannot move."""
        found = []
        if migrate_data.block_migration:
            found.append('a block migration (the disks are shipped, never '
                         'copied by QEMU)')
        if CONF.libvirt.images_type != 'rbd':
            found.append('local disks of [libvirt] images_type=%s (only rbd '
                         'disks are shipped)' % CONF.libvirt.images_type)
        if self._is_post_copy_enabled(self._live_migration_flags):
            found.append('post-copy ([libvirt] '
                         'live_migration_permit_post_copy): the guest must '
                         'arrive paused')
        if instance.numa_topology:
            found.append('a NUMA topology (pinned CPUs, huge pages)')
        if instance.pci_requests and instance.pci_requests.requests:
            found.append('PCI devices (passthrough or SR-IOV ports)')
        if hardware.get_vtpm_constraint(instance.flavor, instance.image_meta):
            found.append('a vTPM')
        if hardware.get_ephemeral_encryption_constraint(instance.flavor,
                                                        instance.image_meta):
            found.append('encrypted ephemeral disks')
        if self._get_all_assigned_mediated_devices(instance):
            found.append('mediated devices (vGPU)')
        if self._get_vpmems(instance):
            found.append('persistent memory (vPMEM)')
        for bdm in virt_driver.block_device_info_get_mapping(
                block_device_info):
            info = bdm['connection_info'] or {}
            volume = info.get('serial') or info.get('data', {}).get(
                'volume_id')
            kind = info.get('driver_volume_type')
            if kind != 'rbd':
                found.append('volume %s of type %s (only rbd volumes are '
                             'shipped)' % (volume, kind))
            if info.get('multiattach'):
                found.append('multiattach volume %s' % volume)
            if info.get('data', {}).get('encrypted') or bdm.get('encrypted'):
                found.append('encrypted volume %s' % volume)
            if plan is not None and plan.volume(volume) is None:
                found.append('volume %s, which migration %s does not ship'
                             % (volume, plan.migration_id))
        return found

    def _fedex_plan_for(self, context, instance, peer_site):
        """The ready plan of a cross-site migration; CutoverRefused if none."""
        site = self._fedex_site()
        try:
            plan = self._fedex_manager_client().get_cutover(context, instance)
        except exception.ManagerUnavailable as e:
            raise exception.CutoverRefused(server=instance.uuid, reason=str(e))
        if plan is None:
            raise exception.CutoverRefused(
                server=instance.uuid, reason='a live migration from site %s '
                'to site %s is only possible as a FedEx cutover, and no FedEx '
                'migration names this server (Nova would run it at site %s '
                'on the disks of site %s): start it with openstack server '
                'migrate --live-migration --fedex' % (
                    site, peer_site, peer_site, site))
        if not plan.ready:
            self._fedex_report(context, plan, 'refused', reason='not ready',
                               state=plan.state)
            raise exception.CutoverRefused(
                server=instance.uuid, reason='FedEx migration %s is %s, not '
                'cutting over' % (plan.migration_id, plan.state))
        if (plan.source_site != site or
                plan.destination_site != peer_site):
            raise exception.CutoverRefused(
                server=instance.uuid, reason='FedEx migration %s goes from '
                '%s to %s, not from %s to %s' % (
                    plan.migration_id, plan.source_site,
                    plan.destination_site, site, peer_site))
        return plan

    def _fedex_check_convergence(self, context, instance, plan):
        """The guest's dirty rate, measured now; the manager's verdict.

        Before anything pauses (the server runs here): measured on a
        libvirt connection of this call's own, reported (``dirty_rate``),
        and the plan asked again, which carries the manager's forecast
        and means (``convergence``). A refusal raises CutoverRefused with
        the forecast. A guest that cannot be measured, or a manager that
        gives no verdict, is cut over with the stock pre-copy (and logged).
        """
        if not CONF.fedex.dirty_rate_samples:
            return
        conn = None
        try:
            conn = self._fedex_connect_peer(self._uri())
            dom = conn.lookupByUUIDString(instance.uuid)
            figures = convergence.measure(
                conn, dom, samples=CONF.fedex.dirty_rate_samples,
                window=CONF.fedex.dirty_rate_window)
        except Exception as e:
            LOG.warning('FedEx: the dirty rate was not measured (%s): the '
                        'memory is copied with the stock pre-copy', e,
                        instance=instance)
            return
        finally:
            if conn is not None:
                try:
                    conn.close()
                except Exception as e:
                    LOG.debug('closing a libvirt connection: %s', e)
        self._fedex_report(context, plan, 'dirty_rate',
                           server_id=instance.uuid, **figures)
        # Raises CutoverRefused itself if the manager changed its mind.
        verdict = self._fedex_plan_for(
            context, instance, plan.destination_site).convergence
        if not verdict:
            LOG.warning('FedEx: the manager gave no verdict on the memory '
                        'copy: stock pre-copy', instance=instance)
            return
        LOG.info('FedEx: dirty rate %.1f MiB/s; memory copy: %s',
                 figures['dirty_rate'] / convergence.MIB,
                 verdict.get('means') or 'refused: %s' % verdict.get(
                     'reason'), instance=instance)
        if not verdict.get('means'):
            self._fedex_report(context, plan, 'refused',
                               reason='the guest would not converge: %s' %
                               verdict.get('reason'),
                               forecast=verdict.get('forecast'))
            raise exception.CutoverRefused(
                server=instance.uuid, reason='the guest would not converge: '
                '%s (migration %s, convergence %s)' % (
                    verdict.get('reason'), plan.migration_id,
                    verdict.get('policy')))

    def get_volume_connector(self, instance):
        # cinder_fedex answers a connector from the peer site with the peer
        # cluster's connection info for volumes that are being shipped.
        connector = super().get_volume_connector(instance)
        site = self._fedex_site()
        if site:
            connector['fedex_site'] = site
        return connector

    # --- destination side ---------------------------------------------------

    def check_can_live_migrate_destination(self, context, instance,
                                           *args, **kwargs):
        data = super().check_can_live_migrate_destination(
            context, instance, *args, **kwargs)
        site = self._fedex_site()
        if site:
            _add_marker(data, site, self._fedex_rbd_target())
        return data

    def pre_live_migration(self, context, instance, block_device_info,
                           network_info, disk_info, migrate_data):
        migrate_data = super().pre_live_migration(
            context, instance, block_device_info, network_info, disk_info,
            migrate_data)
        site = self._fedex_site()
        if site:
            # The stock method rebuilt ``bdms`` from the volumes.
            _add_marker(migrate_data, site, self._fedex_rbd_target())
        if CONF.fedex.wan_address and CONF.fedex.wan_for_every_migration:
            migrate_data.target_connect_addr = CONF.fedex.wan_address
        return migrate_data

    def post_live_migration_at_destination(self, context, instance,
                                           network_info,
                                           block_migration=False,
                                           block_device_info=None):
        # A FedEx guest arrives paused; the source resumes it after the
        # final delta. If that resume did not reach us, resume here, before
        # Nova records the power state. A stock migration never gets here
        # with a paused guest and an ACTIVE server.
        if self._fedex_site() and instance.vm_state == vm_states.ACTIVE:
            try:
                guest = self._host.get_guest(instance)
                if guest.get_power_state(self._host) == power_state.PAUSED:
                    LOG.warning('FedEx: the guest arrived paused and was not '
                                'resumed by the source; resuming it',
                                instance=instance)
                    guest.resume()
            except nova_exception.InstanceNotFound:
                pass
        return super().post_live_migration_at_destination(
            context, instance, network_info, block_migration,
            block_device_info)

    # --- source side ----------------------------------------------------------

    def check_can_live_migrate_source(self, context, instance,
                                      dest_check_data,
                                      block_device_info=None):
        data = super().check_can_live_migrate_source(
            context, instance, dest_check_data, block_device_info)
        site = self._fedex_site()
        if not site:
            return data
        peer = peer_of(data)
        if peer is None:
            if CONF.fedex.require_peer_site:
                raise nova_exception.MigrationPreCheckError(
                    reason='the destination does not say which site (Ceph '
                    'cluster) it belongs to: is nova_fedex with [fedex] site '
                    'configured there? ([fedex] require_peer_site)')
            return data
        if peer[0] == site:
            return data
        try:
            plan = self._fedex_plan_for(context, instance, peer[0])
            unsupported = self._fedex_unsupported(instance, plan, data,
                                                  block_device_info)
            if unsupported:
                self._fedex_report(context, plan, 'refused',
                                   reason='unsupported',
                                   unsupported=unsupported)
                raise exception.CutoverRefused(
                    server=instance.uuid, reason='this version cannot cut '
                    'over a server with %s' % '; '.join(unsupported))
            self._fedex_check_convergence(context, instance, plan)
        except exception.CutoverRefused as e:
            LOG.warning('FedEx: %s', e, instance=instance)
            raise nova_exception.MigrationPreCheckError(reason=str(e))
        return data

    def live_migration(self, context, instance, dest, post_method,
                       recover_method, block_migration=False,
                       migrate_data=None):
        site = self._fedex_site()
        peer = peer_of(migrate_data) if site else None
        if peer is None or peer[0] == site:
            return super().live_migration(
                context, instance, dest, post_method, recover_method,
                block_migration, migrate_data)
        self._fedex_use_wan(migrate_data, instance)
        try:
            cutover = self._fedex_prepare(context, instance, dest, peer,
                                          migrate_data)
        except Exception as e:
            # Nothing moved yet: Nova's rollback keeps the server here.
            LOG.error('FedEx: cutover not started: %s', e, instance=instance)
            _record_fault(context, instance, e)
            recover_method(context, instance, dest, migrate_data)
            return
        self._fedex_cutovers[instance.uuid] = cutover
        cutover.context = context
        cutover.after_copy = functools.partial(self._fedex_pause_work,
                                               cutover, instance)
        self._fedex_report(context, cutover.plan, 'migrating', dest=dest)
        try:
            super().live_migration(
                context, instance, dest,
                functools.partial(self._fedex_post, cutover, post_method,
                                  recover_method),
                functools.partial(self._fedex_recover, cutover,
                                  recover_method),
                block_migration, migrate_data)
        except Exception as e:
            if not cutover.recovered:
                raise
            # Nova 34's _live_migration re-raises the migration call's
            # error after its monitor has already rolled back (libvirtd at
            # B killed in the memory copy: "client socket is closed"); its
            # caller would put the server, which runs here, in ERROR. The
            # rollback is done and reported: the server stays ACTIVE.
            LOG.warning('FedEx: the memory copy failed (%s); rolled back, '
                        'the guest runs here', e, instance=instance)
        finally:
            self._fedex_cutovers.pop(instance.uuid, None)
            cutover.close()

    def _fedex_prepare(self, context, instance, dest, peer, migrate_data):
        """Everything a cutover needs, ready before the guest pauses."""
        plan = self._fedex_plan_for(context, instance, peer[0])
        guest = self._host.get_guest(instance)
        cutover = _Cutover(
            plan, peer[0], peer[1],
            guest.get_xml_desc(dump_migratable=True),
            instance.vm_state == vm_states.PAUSED)
        try:
            cutover.delta = self._fedex_final_delta(plan).open()
            addr = migrate_data.target_connect_addr or dest
            cutover.peer = self._fedex_connect_peer(
                self._live_migration_uri(addr))
            cutover.local = self._fedex_connect_peer(self._uri())
        except Exception:
            cutover.close()
            raise
        self._fedex_watch(cutover, instance)
        return cutover

    def _fedex_watch(self, cutover, instance):
        """Start the pause's work on the destination's "paused" event.

        libvirt's migration call returns only after its Finish at B and its
        Confirm at A (which kills the source QEMU): a few hundred ms the
        guest sits paused for nothing. B's QEMU finishes loading only after
        the source QEMU sent its last bytes, and it sends them only after it
        flushed and inactivated its disks (the same guarantee that lets a
        stock migration resume the destination before Confirm): so once
        libvirt at B reports the guest paused at the end of the incoming
        migration, A's images are final. Without the event (it never comes,
        or cannot be registered) the work starts when the call returns.
        """
        lv = _libvirt()

        def lifecycle(conn, dom, event, detail, opaque):
            # libvirt's event thread: hand over at once.
            if (cutover.migrating and event == lv.VIR_DOMAIN_EVENT_SUSPENDED
                    and dom.UUIDString() == instance.uuid):
                threading.Thread(
                    target=cutover.after_copy, name='fedex-pause',
                    args=('destination paused (detail %d)' % detail,),
                    daemon=True).start()
        try:
            cutover.peer_events = cutover.peer.domainEventRegisterAny(
                None, lv.VIR_DOMAIN_EVENT_ID_LIFECYCLE, lifecycle, None)
        except Exception as e:
            LOG.warning('FedEx: no lifecycle events from the destination '
                        '(%s): the final delta starts when libvirt\'s '
                        'migration call returns', e, instance=instance)

    def _live_migration_monitor(self, context, instance, guest, *args,
                                **kwargs):
        cutover = self._fedex_cutovers.get(instance.uuid)
        if cutover is not None:
            # Nova's downtime steps start at the forecast's limit, not a
            # tenth of it (convergence.downtime_floor_ms).
            floor = convergence.downtime_floor_ms(
                cutover.plan.convergence,
                CONF.libvirt.live_migration_downtime)
            LOG.info('FedEx: downtime limit of the memory copy at least '
                     '%d ms', floor, instance=instance)
            guest = convergence.DowntimeFloor(guest, floor)
        return super()._live_migration_monitor(context, instance, guest,
                                               *args, **kwargs)

    def _live_migration_operation(self, context, instance, dest,
                                  block_migration, migrate_data, guest,
                                  device_names):
        cutover = self._fedex_cutovers.get(instance.uuid)
        if cutover is not None:
            guest = _FedexGuest(guest, cutover)
            # Once before the memory copy: the first of these calls in a
            # nova-compute took 0.21 s (twice in two fresh processes, 2 ms
            # after), and inside the pause it would be the guest's. Only a
            # warm-up: whatever it says or raises, the copy goes ahead.
            try:
                self._fedex_source_running(instance)
            except Exception as e:
                LOG.debug('FedEx: warm-up check of the source: %s', e,
                          instance=instance)
        return super()._live_migration_operation(
            context, instance, dest, block_migration, migrate_data, guest,
            device_names)

    def _fedex_recover(self, cutover, recover_method, context, instance,
                       dest, migrate_data, *args, **kwargs):
        """libvirt's migration failed or was cancelled: stock rollback."""
        reason = cutover.refused or 'the memory migration failed'
        watchdog = cutover.copy_watchdog
        if watchdog is not None and watchdog.fired and cutover.refused is None:
            cutover.refused = exception.CutoverError(
                server=instance.uuid, migration=cutover.plan.migration_id,
                reason='the memory copy did not end within its bound of %d s '
                '(forecast: %s); aborted, the guest runs here' % (
                    watchdog.timeout, cutover.plan.convergence.get('reason')
                    or 'converges'))
            reason = cutover.refused
        if cutover.refused is not None:
            _record_fault(context, instance, cutover.refused)
        self._fedex_report(context, cutover.plan, 'rolled_back',
                           reason=str(reason), guest='never left')
        result = recover_method(context, instance, dest, migrate_data,
                                *args, **kwargs)
        cutover.recovered = True
        return result

    def _fedex_pause_work(self, cutover, instance, trigger='monitor'):
        """Inside the pause: the final delta, then the resume at B.

        Runs once (see ``_Cutover.pause_lock``); never raises: a failure is
        kept in ``cutover.failure`` for ``_fedex_post`` to roll back. The
        reports wait until Nova's post-migration is done: each is an HTTP
        call to fedex-api, and inside the pause, and in the guest's first
        moments at B, every millisecond counts.
        """
        with cutover.pause_lock:
            if cutover.pause_claimed:
                claimed = False
            else:
                cutover.pause_claimed = claimed = True
                cutover.trigger = trigger
        if not claimed:
            cutover.pause_done.wait(CONF.fedex.final_delta_timeout + 60)
            return
        try:
            self._fedex_pause_work_once(cutover, instance)
            if cutover.failure is None:
                self._fedex_send_later(cutover)
        except Exception as e:     # kept for _fedex_post
            cutover.failure = cutover.failure or e
        finally:
            cutover.pause_done.set()

    def _fedex_pause_work_once(self, cutover, instance):
        paused_at = time.monotonic()
        cutover.reports.append(('paused_at_destination', {
            'trigger': cutover.trigger, 'at': time.time()}))
        try:
            self._fedex_wait_source_stopped(instance, conn=cutover.local)
            cutover.delta.apply(CONF.fedex.final_delta_timeout)
        except Exception as e:
            LOG.error('FedEx: cutover fails before the resume: %s; moving '
                      'the guest back', e, instance=instance)
            cutover.failure = e
            return
        delta_done = time.monotonic()
        cutover.timings['delta'] = delta_done - paused_at
        cutover.reports.append(('delta_applied', dict(
            changed=cutover.delta.changed, wire=cutover.delta.wire,
            seconds=cutover.delta.seconds,
            # Its parts: every disk's blocks up to REPLICATION_COMPLETE
            # (flushed at B), then the group commit (B's snapshots).
            blocks_seconds=cutover.delta.timings.get('blocks'),
            commit_seconds=cutover.delta.timings.get('commit'))))
        # From here on site B holds the only current state: go forward.
        if cutover.was_paused:
            return
        try:
            cutover.peer.lookupByUUIDString(instance.uuid).resume()
        except Exception as e:
            LOG.warning('FedEx: resuming at the destination failed (%s); '
                        'it resumes the guest in '
                        'post_live_migration_at_destination', e,
                        instance=instance)
            return
        now = time.monotonic()
        cutover.reports.append(('resumed', dict(
            at=time.time(), pause_seconds=now - paused_at,
            resume_seconds=now - delta_done,
            wait_source_seconds=cutover.timings['delta'] -
            cutover.delta.seconds)))

    def _fedex_post(self, cutover, post_method, recover_method, context,
                    instance, dest, block_migration, migrate_data):
        """At libvirt COMPLETED: the pause's work done, then Nova's post."""
        plan = cutover.plan
        # Usually done already, in libvirt's migration thread.
        self._fedex_pause_work(cutover, instance)
        if not cutover.pause_done.is_set() and cutover.failure is None:
            cutover.failure = exception.CutoverError(
                server=instance.uuid, migration=plan.migration_id,
                reason='the final delta did not end within %d s' %
                CONF.fedex.final_delta_timeout)
        if cutover.failure is not None:
            self._fedex_send(context, cutover)
            self._fedex_roll_back(cutover, context, instance,
                                  cutover.failure)
            _record_fault(context, instance, cutover.failure)
            return recover_method(context, instance, dest, migrate_data)
        try:
            result = post_method(context, instance, dest, block_migration,
                                 migrate_data)
        finally:
            # After Nova's post-migration, not at the resume: on a busy
            # host the guest's first moments at B need the CPU more than
            # these reports (events of the manager) need to be early
            # (unless that post-migration is slow: _fedex_send_later).
            if cutover.early_reports is not None:
                cutover.early_reports.cancel()
            self._fedex_send(context, cutover)
        zone = self._fedex_follow_zone(context, instance, dest)
        # The check's bound, for the manager: its cleanup removes what the
        # check reads, and waits for the check's report or this long.
        self._fedex_report(context, plan, 'completed', dest=dest,
                           availability_zone=zone,
                           final_state_check_timeout=(
                               CONF.fedex.final_state_check_timeout))
        if CONF.fedex.final_state_check_timeout:
            self._fedex_check_final_state(cutover, context, instance)
        return result

    def _fedex_check_final_state(self, cutover, context, instance):
        """After the resume: each disk whole, A's final state against B's.

        Off the pause (the guest runs at B): A's image is stable (its QEMU
        stopped) and B's final snapshot is B's state at the resume. A
        mismatch cannot be undone any more (the guest writes B): it is
        reported loudly, as an instance fault and the manager's event
        ``final_state_mismatch``, and A's retained images are the evidence.
        Never raises.
        """
        plan = cutover.plan
        began = time.monotonic()
        try:
            compared = cutover.delta.compare(
                CONF.fedex.final_state_check_timeout)
        except Exception as e:
            LOG.error('FedEx: the final state was not compared (%s); A\'s '
                      'images are kept until the retention ends',
                      e or type(e).__name__, instance=instance)
            self._fedex_report(context, plan, 'final_state_unchecked',
                               reason='%s: %s' % (type(e).__name__, e))
            return
        seconds = time.monotonic() - began
        differ = [(spec, a, b) for spec, a, b in compared if a != b]
        if differ:
            error = exception.FinalStateMismatch(
                server=instance.uuid, migration=plan.migration_id,
                reason='; '.join('%s: %s %s at site %s, %s at %s' % (
                    spec, final_delta.DIGEST, a, plan.source_site, b,
                    cutover.delta.snapshot) for spec, a, b in differ))
            LOG.critical('FedEx: %s', error, instance=instance)
            _record_fault(context, instance, error)
            self._fedex_report(context, plan, 'final_state_mismatch',
                               reason=str(error), seconds=seconds,
                               disks={s: {'source': a, 'destination': b}
                                      for s, a, b in compared})
            return
        LOG.info('FedEx: the destination equals the source\'s final state '
                 '(%s of %d disks, read whole in %.1f s)',
                 final_delta.DIGEST, len(compared), seconds,
                 instance=instance)
        self._fedex_report(context, plan, 'final_state_checked',
                           seconds=seconds, algorithm=final_delta.DIGEST,
                           disks={s: a for s, a, _ in compared})

    def _fedex_follow_zone(self, context, instance, dest):
        """The server's RequestSpec asks for B's zone, if it asked for A's.

        A server booted with ``--availability-zone`` keeps that zone in its
        RequestSpec (nova_api), and a later scheduled move would look for a
        host there: at site A. Nova has no API to change it; the compute
        reads and saves the RequestSpec through nova-conductor (the objects'
        indirection API), which holds the API database. Returns the zone
        written, or None. A failure is logged, never raised: the guest
        already runs at B.
        """
        from nova import availability_zones

        try:
            spec = objects.RequestSpec.get_by_instance_uuid(context,
                                                            instance.uuid)
            zone = availability_zones.get_host_availability_zone(context,
                                                                 dest)
            if not spec.obj_attr_is_set('availability_zone') or \
                    not spec.availability_zone or \
                    spec.availability_zone == zone:
                return None
            LOG.info('FedEx: the RequestSpec asked for zone %s; now %s',
                     spec.availability_zone, zone, instance=instance)
            spec.availability_zone = zone
            spec.save()
            return zone
        except Exception as e:
            LOG.error('FedEx: the RequestSpec still names the source zone '
                      '(%s): a scheduled move will look for a host there; '
                      'see doc/source/nova.rst', e, instance=instance)
            return None

    def _fedex_wait_source_stopped(self, instance, timeout=10, conn=None):
        """The source guest's vCPUs are stopped (paused or gone).

        A check, not the proof: that is the destination's end of the
        incoming migration or libvirt's call returning (_fedex_watch).
        ``conn``: a libvirt connection of this thread's own.
        """
        deadline = time.monotonic() + timeout
        # Every 10 ms: the guest waits paused at B meanwhile.
        while self._fedex_source_running(instance, conn):
            if time.monotonic() > deadline:
                raise exception.CutoverError(
                    server=instance.uuid, migration='?', reason='libvirt '
                    'reports the migration completed but the source guest '
                    'still runs')
            time.sleep(0.01)

    def _fedex_source_running(self, instance, conn=None):
        """Whether the source guest's vCPUs run (not when paused or gone)."""
        if conn is not None:
            lv = _libvirt()
            try:
                dom = conn.lookupByUUIDString(instance.uuid)
                return bool(dom.isActive()) and (
                    dom.state()[0] == lv.VIR_DOMAIN_RUNNING)
            except lv.libvirtError as e:
                if e.get_error_code() == lv.VIR_ERR_NO_DOMAIN:
                    return False
                raise
        try:
            guest = self._host.get_guest(instance)
            return bool(guest.is_active()) and guest.get_power_state(
                self._host) == power_state.RUNNING
        except nova_exception.InstanceNotFound:
            return False

    def _fedex_roll_back(self, cutover, context, instance, cause):
        """Bring the guest back here, running (or paused if it was)."""
        lv = _libvirt()
        try:
            source = self._host.get_guest(instance)
            if source.is_active():
                # It never left: drop the paused copy at B.
                dom = cutover.peer.lookupByUUIDString(instance.uuid)
                dom.destroy()
                self._fedex_report(context, cutover.plan, 'rolled_back',
                                   reason=str(cause), guest='never left')
                return
        except nova_exception.InstanceNotFound:
            pass
        try:
            dom = cutover.peer.lookupByUUIDString(instance.uuid)
            addr = self._fedex_inbound_addr()
            flags = ((self._live_migration_flags | VIR_MIGRATE_PAUSED) &
                     ~(lv.VIR_MIGRATE_POSTCOPY |
                       lv.VIR_MIGRATE_NON_SHARED_INC))
            params = {'destination_xml': cutover.src_xml,
                      'persistent_xml': cutover.src_xml}
            migrate_uri = None
            if not flags & lv.VIR_MIGRATE_TUNNELLED:
                migrate_uri = self._migrate_uri(addr)
            if migrate_uri:
                params['migrate_uri'] = migrate_uri
            dom.migrateToURI3(self._live_migration_uri(addr), params, flags)
            guest = self._host.get_guest(instance)
            if not cutover.was_paused:
                guest.resume()
        except Exception as e:
            LOG.critical('FedEx: the guest is paused at the destination and '
                         'could not be moved back (%s); its disks at this '
                         'site are intact: resume it here after moving it '
                         'back by hand (virsh migrate), or resume it at the '
                         'destination once the final delta is applied', e,
                         instance=instance)
            self._fedex_report(context, cutover.plan, 'stranded',
                               reason=str(cause), error=str(e))
            raise
        self._fedex_report(context, cutover.plan, 'rolled_back',
                           reason=str(cause), guest='migrated back')
