"""Options of cinder_fedex (in each backend's section of cinder.conf).

Importable without Cinder: ``oslo-config-generator --namespace
cinder_fedex`` reads them from here.
"""

from oslo_config import cfg

fedex_opts = [
    cfg.StrOpt('fedex_site',
               help='Name of this backend\'s site (its Ceph cluster), as in '
                    'nova.conf [fedex] site of the computes there. Unset: '
                    'the stock RBD driver.'),
    cfg.StrOpt('fedex_peer_site',
               help='Name of the other site.'),
    cfg.StrOpt('fedex_peer_backend_host',
               help='The peer site\'s backend, host@backend#pool (as in '
                    '"openstack volume backend pool list"): where volumes of '
                    'this backend move at a cutover.'),
    cfg.StrOpt('fedex_peer_rbd_pool',
               help='Pool of the peer cluster holding the shipped volumes '
                    '(default: rbd_pool).'),
    cfg.StrOpt('fedex_peer_rbd_ceph_conf',
               help='ceph.conf of the peer cluster (to find its monitors).'),
    cfg.StrOpt('fedex_peer_rbd_cluster_name', default='ceph',
               help='Cluster name of the peer cluster.'),
    cfg.StrOpt('fedex_peer_rbd_user',
               help='cephx user the peer site\'s computes use for volumes '
                    '(default: rbd_user).'),
    cfg.StrOpt('fedex_peer_rbd_secret_uuid',
               help='libvirt secret of that user on the peer site\'s '
                    'computes.'),
    cfg.ListOpt('fedex_peer_mon_hosts', default=[],
                help='Monitors of the peer cluster as host:port; set, no '
                     '"ceph mon dump" of the peer is needed.'),
]


def list_opts():
    return [('backend_defaults', fedex_opts)]
