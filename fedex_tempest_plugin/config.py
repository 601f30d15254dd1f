"""tempest.conf options of the fedex tests.

``[service_available] fedex`` says whether fedex-api is deployed; the
``[fedex]`` group says where it is in the catalog, how long to wait, and
what the two sites of the cloud are called.
"""

from oslo_config import cfg

service_available_group = cfg.OptGroup(
    name='service_available', title='Available OpenStack Services')

service_option = cfg.BoolOpt(
    'fedex', default=True,
    help='Whether fedex-api (Migration over FedEx, service type '
         'vm-shipping) is expected to be available.')

fedex_group = cfg.OptGroup(
    name='fedex', title='Migration over FedEx (fedex-api) options')

FedexGroup = [
    cfg.StrOpt('catalog_type', default='vm-shipping',
               help='Catalog type of fedex-api.'),
    cfg.StrOpt('endpoint_type', default='public',
               choices=['public', 'admin', 'internal', 'publicURL',
                        'adminURL', 'internalURL'],
               help='The endpoint type of fedex-api to use.'),
    cfg.StrOpt('region', default='',
               help='The region of fedex-api; empty: [identity] region.'),
    cfg.IntOpt('build_interval', default=2,
               help='Seconds between two polls of a migration or a '
                    'server.'),
    cfg.IntOpt('build_timeout', default=300,
               help='Seconds a server may take to boot or to be deleted, '
                    'and the devices of site A to be BLANK.'),
    cfg.IntOpt('migration_timeout', default=1800,
               help='Seconds a FedEx migration may take from its creation '
                    'to READY_FOR_CUTOVER, and again to COMPLETED.'),
    cfg.StrOpt('site_a_name', default='site-a',
               help='Name of the source site (GET /v1/sites).'),
    cfg.StrOpt('site_a_zone', default='site-a',
               help='Nova availability zone of the source site: the '
                    'scenario boots its server there.'),
    cfg.StrOpt('site_b_name', default='site-b',
               help='Name of the destination site.'),
    cfg.StrOpt('site_b_zone', default='site-b',
               help='Nova availability zone of the destination site: the '
                    'migrated server runs on a host of it.'),
    cfg.BoolOpt('run_scenario', default=True,
                help='Whether the scenario runs: a server booted at site A '
                     'and moved to site B by a FedEx migration (it needs '
                     'blank devices at site A\'s terminal, a conductor and '
                     'a terminal agent per site).'),
    cfg.BoolOpt('compare_disks', default=True,
                help='Whether the scenario compares the disks itself, '
                     'rbd export | sha256sum of the source image at site '
                     'A and of the final state at site B: the test host '
                     'needs the rbd command and the sites\' Ceph confs and '
                     'keyrings (their paths as fedex-api\'s sites give '
                     'them to an admin). Without it, nova_fedex\'s own '
                     'comparison (its final_state_checked event) is what '
                     'is checked.'),
]


def list_opts():
    return [(fedex_group, FedexGroup),
            (service_available_group, [service_option])]
