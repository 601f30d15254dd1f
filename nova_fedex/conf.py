"""Options of nova_fedex, in nova.conf's ``[fedex]`` group.

Every compute of both sites carries them; ``site`` is what tells two Ceph
clusters apart (Nova itself assumes one cluster for all rbd computes).
"""

from oslo_config import cfg

from nova_fedex import manager_client

GROUP = 'fedex'

fedex_opts = [
    cfg.StrOpt('site',
               help='Name of this compute\'s site, i.e. of the Ceph cluster '
                    'its [libvirt] images_rbd_* options name (e.g. site-a). '
                    'Unset: the driver behaves exactly like the stock '
                    'LibvirtDriver and knows nothing of other sites; set it '
                    'on every compute of both sites.'),
    cfg.BoolOpt('require_peer_site',
                default=True,
                help='Refuse a live migration to a destination that does not '
                     'say which site it belongs to (a compute without '
                     'nova_fedex, or without [fedex] site): Nova would '
                     'otherwise run the guest at the destination with this '
                     'site\'s disks if the two were in different clusters.'),
    cfg.StrOpt('terminal_name',
               help='Name this compute gives itself to the destination '
                    'terminal (its TLS client certificate\'s name). Default: '
                    '[DEFAULT] host.'),
    cfg.StrOpt('tls_ca',
               help='CA certificate (PEM) that signed the terminals\' '
                    'certificates.'),
    cfg.StrOpt('tls_cert',
               help='This compute\'s TLS client certificate (PEM) for the '
                    'terminals.'),
    cfg.StrOpt('tls_key',
               help='Private key of tls_cert.'),
    cfg.StrOpt('ceph_keyring',
               help='Keyring of [libvirt] rbd_user for reading the source '
                    'images during the final delta. Unset: the keyring named '
                    'in [libvirt] images_rbd_ceph_conf.'),
    cfg.IntOpt('final_delta_streams',
               default=1, min=1, max=16,
               help='Connections per disk to the destination terminal for '
                    'the final delta, all opened before the guest pauses.'),
    cfg.IntOpt('final_delta_retries',
               default=3, min=0,
               help='How many times a final delta that lost its connection '
                    'is resumed before the cutover rolls back.'),
    cfg.FloatOpt('final_delta_timeout',
                 default=120.0, min=1.0,
                 help='Seconds the final delta of all disks may take before '
                      'the cutover rolls back (the guest is paused all that '
                      'time).'),
    cfg.StrOpt('final_delta_verify',
               default='blocks', choices=('blocks', 'image'),
               help='blocks: every block carries its digest and the terminal '
                    'checks each one and the group commit (cheap, inside the '
                    'pause). image: also compare a digest of each whole image '
                    '(reads every disk: only for small disks or tests).'),
    cfg.FloatOpt('final_state_check_timeout',
                 default=900.0, min=0.0,
                 help='After the resume, off the pause: seconds the '
                      'comparison of each whole disk (the source\'s final '
                      'state against the destination\'s final snapshot, '
                      'both read whole) may take; a mismatch is an instance '
                      'fault and the manager\'s event final_state_mismatch. '
                      '0: not compared.'),
    cfg.FloatOpt('early_report_delay',
                 default=3.0, min=0.0,
                 help='Seconds after the resume at the destination before '
                      'the cutover\'s reports so far (the final delta '
                      'applied, the resume) are sent to the manager, unless '
                      'Nova\'s post-migration ended first (they then go at '
                      'its end, as always). The manager needs them when '
                      'that post-migration fails, or this compute dies in '
                      'it, after the destination took the server: they say '
                      'B holds the final state. 0: only at its end.'),
    cfg.StrOpt('wan_address',
               help='Address at which computes of other sites reach this '
                    'compute\'s libvirtd and QEMU incoming migrations '
                    '(the same ports as on [libvirt] '
                    'live_migration_inbound_addr), when the sites are '
                    'joined by another network than the one inside a site. '
                    'Used as the destination of a FedEx cutover to this '
                    'host and of its rollback back to it; a live migration '
                    'inside the site keeps live_migration_inbound_addr. '
                    'Unset: live_migration_inbound_addr for every '
                    'migration.'),
    cfg.BoolOpt('wan_for_every_migration',
                default=False,
                help='Use wan_address for every live migration to this '
                     'host, also from a compute of its own site: a plain '
                     'live migration over the same link as a cutover (the '
                     'benchmarks\' reference).'),
    cfg.DictOpt('terminal_hosts',
                default={},
                help='host:other_host pairs: reach a terminal the manager '
                     'names at host (its lsrp_address, where terminals '
                     'reach each other) at other_host instead, with the '
                     'same port, for the final delta. For a final delta '
                     'that takes another path between the sites than the '
                     'catch-up (the sandbox counts their bytes apart).'),
    cfg.FloatOpt('migrate_back_timeout',
                 default=600.0, min=1.0,
                 help='Seconds to wait for a paused guest migrated back to '
                      'this host after a failed final delta.'),
    cfg.IntOpt('dirty_rate_samples',
               default=3, min=0, max=10,
               help='Before a cutover copies the memory: 1-second '
                    'page-sampling dirty-rate calculations of the guest '
                    '(their median is reported to the manager, whose '
                    'forecast decides how the memory crosses, or refuses; '
                    'doc/source/nova.rst "Convergence"). 0: not measured, '
                    'stock pre-copy.'),
    cfg.IntOpt('dirty_rate_window',
               default=3, min=0, max=60,
               help='Seconds of one more dirty-rate calculation, which gives '
                    'the guest\'s working set (the distinct memory it '
                    'dirties in that long). 0: the working set is one '
                    'second\'s worth of the rate.'),
]


def register_opts(conf):
    conf.register_opts(fedex_opts, group=GROUP)
    manager_client.register_opts(conf, GROUP)


def list_opts():
    return [(GROUP, fedex_opts + manager_client.list_opts())]
