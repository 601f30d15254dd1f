"""FedexRBDDriver: Cinder's RBD driver, one backend per site, aware of its peer.

Stock behaviour for every volume that is not in a FedEx migration. For a
volume that is (see cinder_fedex.marks):

* ``initialize_connection`` for a connector that says it is at the peer
  site (nova_fedex adds ``fedex_site`` to Nova's connector) answers with the
  *peer* cluster's connection info for the same volume name: the attachment
  Nova makes for the destination host of a cutover points at cluster B
  while the volume still belongs to this backend;
* extend, revert to snapshot, retype and delete are refused (also refused
  earlier, in cinder-api, by the fedex API extension): the copies at the two
  sites would diverge.

A volume moved here by a cutover keeps the migration's snapshots
(``fedex-*``) and the record of its final state (a clone,
``<volume>.fedex-final-<id>``) until the migration's cleanup, when its
retention ends (7 days by default). Cinder's RBD driver cannot remove an
image with a clone: a user deleting such a volume got ``error_deleting``,
the image stayed in the cluster and the volume in the project's quota.
``delete_volume`` removes them first (``_fedex_release``).

The ownership move to the peer backend after the final delta is not a
driver call: it is the ``os-fedex-cutover`` admin action.
"""

import json

from cinder import exception as cinder_exception
from cinder.volume.drivers import rbd
from oslo_log import log as logging

from cinder_fedex import marks
from cinder_fedex import opts as fedex_options
from lsrp import exception
from lsrp.server import records

LOG = logging.getLogger(__name__)

# Defined in cinder_fedex.opts, which imports without Cinder (the sample
# configuration is generated from it).
fedex_opts = fedex_options.fedex_opts
# The manager's names of a migration's snapshots and records
# (fedex_manager.flows.tasks: fedex-<id>-seed, -wan, ...; -final-).
PREFIX = 'fedex-'


class FedexRBDDriver(rbd.RBDDriver):
    """RBDDriver of one site, knowing its peer site's cluster."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.configuration.append_config_values(fedex_opts)

    def _fedex(self, name):
        # getattr: Cinder's own driver tests configure a spec'd mock.
        return getattr(self.configuration, name, None)

    def _fedex_migration(self, volume):
        if not self._fedex('fedex_site'):
            return None
        try:
            return marks.migration_of(volume)
        except Exception as e:     # a volume without its admin metadata
            LOG.debug('no admin metadata for %s: %s', volume.id, e)
            return None

    def _refuse(self, volume, operation):
        migration = self._fedex_migration(volume)
        if migration:
            msg = exception.VolumeInMigration(
                volume=volume.id, migration=migration, operation=operation)
            raise cinder_exception.VolumeBackendAPIException(data=str(msg))

    # --- the peer cluster ------------------------------------------------

    def _peer_mon_addrs(self):
        static = self._fedex('fedex_peer_mon_hosts')
        if static:
            hosts, ports = [], []
            for mon in static:
                host, port = mon.rsplit(':', 1)
                hosts.append(host.strip('[]'))
                ports.append(port)
            return hosts, ports
        args = ['ceph', 'mon', 'dump', '--format=json',
                '--cluster', self._fedex('fedex_peer_rbd_cluster_name'),
                '--conf', self._fedex('fedex_peer_rbd_ceph_conf')]
        user = self._fedex('fedex_peer_rbd_user') or \
            self.configuration.rbd_user
        if user:
            args.extend(['--id', user])
        out, _ = self._execute(*args)
        lines = out.split('\n')
        if lines[0].startswith('dumped monmap epoch'):
            lines = lines[1:]
        hosts, ports = [], []
        for mon in json.loads('\n'.join(lines))['mons']:
            host_port = mon['addr'][:mon['addr'].rindex('/')]
            host, port = host_port.rsplit(':', 1)
            hosts.append(host.strip('[]'))
            ports.append(port)
        return hosts, ports

    def _peer_connection(self, data, volume):
        conf = self.configuration
        hosts, ports = self._peer_mon_addrs()
        user = self._fedex('fedex_peer_rbd_user') or conf.rbd_user
        pool = self._fedex('fedex_peer_rbd_pool') or conf.rbd_pool
        info = dict(data['data'])
        info.update(
            name='%s/%s' % (pool, volume.name), hosts=hosts, ports=ports,
            cluster_name=self._fedex('fedex_peer_rbd_cluster_name'),
            auth_enabled=user is not None, auth_username=user,
            secret_uuid=(self._fedex('fedex_peer_rbd_secret_uuid') or
                         conf.rbd_secret_uuid),
            fedex_site=self._fedex('fedex_peer_site'))
        # This site's keyring never goes to the other site's computes.
        info.pop('keyring', None)
        return {'driver_volume_type': data['driver_volume_type'],
                'data': info}

    # --- overrides ---------------------------------------------------------

    def initialize_connection(self, volume, connector):
        data = super().initialize_connection(volume, connector)
        peer = self._fedex('fedex_peer_site')
        if (peer and (connector or {}).get('fedex_site') == peer and
                self._fedex_migration(volume)):
            data = self._peer_connection(data, volume)
            LOG.info('volume %s: connection for %s at site %s points at '
                     'the peer cluster (FedEx migration %s)', volume.id,
                     connector.get('host'), peer,
                     self._fedex_migration(volume))
        return data

    def extend_volume(self, volume, new_size):
        self._refuse(volume, 'extend')
        return super().extend_volume(volume, new_size)

    def revert_to_snapshot(self, context, volume, snapshot):
        self._refuse(volume, 'revert to snapshot')
        return super().revert_to_snapshot(context, volume, snapshot)

    def retype(self, context, volume, new_type, diff, host):
        self._refuse(volume, 'retype')
        return super().retype(context, volume, new_type, diff, host)

    def delete_volume(self, volume):
        self._refuse(volume, 'delete')
        self._fedex_release(volume)
        return super().delete_volume(volume)

    def _fedex_release(self, volume):
        """A migration's snapshots and records off the volume's image.

        Only when the image has a record, i.e. it arrived here by a cutover
        (:func:`lsrp.server.records.release_recorded`); logged, never
        raised: Cinder's delete then says what it says.
        """
        if not self._fedex('fedex_site'):
            return
        from lsrp.rbd import cluster as cluster_mod

        conf = self.configuration
        try:
            cluster = cluster_mod.Cluster(
                conf.rbd_ceph_conf,
                keyring=getattr(self, 'keyring_file', None) or None,
                client=conf.rbd_user or 'admin',
                site=self._fedex('fedex_site'))
            try:
                cluster.connect()
                with cluster.pool(conf.rbd_pool) as pool:
                    removed = records.release_recorded(pool, volume.name,
                                                       PREFIX)
            finally:
                cluster.close()
        except Exception as e:     # never stops a delete
            LOG.warning('volume %s: the snapshots and records of a FedEx '
                        'migration on its image were not removed (%s): '
                        'Cinder may fail to delete it', volume.id, e)
            return
        if removed:
            LOG.info('volume %s: removed %s (a FedEx migration keeps them '
                     'until its cleanup) so that Cinder can delete it',
                     volume.id, ', '.join(removed))

    def migrate_volume(self, context, volume, host):
        # Cinder's own migration would copy the volume and delete this copy:
        # a shipped volume moves with os-fedex-cutover only.
        if self._fedex_migration(volume):
            return False, None
        return super().migrate_volume(context, volume, host)

    def _update_volume_stats(self):
        super()._update_volume_stats()
        if self._fedex('fedex_site'):
            self._stats['fedex_site'] = self._fedex('fedex_site')
            self._stats['fedex_peer_site'] = self._fedex('fedex_peer_site')
