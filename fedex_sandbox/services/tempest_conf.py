"""tempest.conf for the sandbox's mini-cloud (``fedex-sandbox tempest-conf``).

The fedex tempest plugin (fedex_tempest_plugin) runs against the cloud's
own services: Keystone's admin makes the tests' users and projects
(dynamic credentials), Nova boots the tiny ``guest`` image with flavor
``m1.mini`` in zone ``site-a`` without networks (the sandbox's Neutron is a
stand-in: guests have no NIC), and the fedex-api of the catalog (type
``vm-shipping``, fedex_sandbox/manager/api_service.py) is driven by the
sandbox's conductor and terminal agents. Site A's terminal gets blank
devices for the scenario's seed, as ``fedex-sandbox up`` made them first:
those of earlier migrations stay at site B until their retention ends.
"""

import configparser
import io
import os

# The scenario waits at most this long for a migration's phases: on a
# quiet machine one takes a few minutes (doc/source/tempest.rst).
MIGRATION_TIMEOUT = 1800


def sections(cloud, image_id, flavor_id, workspace):
    """{section: {option: value}} of tempest.conf for ``cloud``."""
    admin = cloud.credentials()['fedex-admin']
    return {
        'DEFAULT': {'log_file': 'tempest.log', 'use_stderr': 'false'},
        'oslo_concurrency': {'lock_path': os.path.join(workspace, 'lock')},
        'auth': {
            'use_dynamic_credentials': 'true',
            # No Neutron: no network, subnet and router per project.
            'create_isolated_networks': 'false',
            'admin_username': admin['username'],
            'admin_password': admin['password'],
            'admin_project_name': admin['project_name'],
            'admin_domain_name': admin['user_domain_name'],
            'default_credentials_domain_name': 'Default',
        },
        'identity': {'uri_v3': cloud.keystone_url, 'auth_version': 'v3',
                     'region': 'RegionOne', 'v3_endpoint_type': 'public'},
        'identity-feature-enabled': {'api_v2': 'false', 'api_v3': 'true'},
        'compute': {'image_ref': image_id, 'image_ref_alt': image_id,
                    'flavor_ref': flavor_id, 'flavor_ref_alt': flavor_id,
                    # No fixed_network_name: the scenario boots with
                    # networks='none' (microversion 2.37).
                    'build_timeout': '600', 'build_interval': '2'},
        'validation': {'run_validation': 'false'},
        'service_available': {'nova': 'true', 'cinder': 'true',
                              'glance': 'true', 'neutron': 'false',
                              'swift': 'false', 'horizon': 'false',
                              'fedex': 'true'},
        'fedex': {'catalog_type': 'vm-shipping', 'endpoint_type': 'public',
                  'site_a_name': 'site-a', 'site_a_zone': 'site-a',
                  'site_b_name': 'site-b', 'site_b_zone': 'site-b',
                  'run_scenario': 'true',
                  # The test host is the sandbox's: rbd reaches both
                  # clusters with the sites' confs and keyrings.
                  'compare_disks': 'true',
                  'build_timeout': '300', 'build_interval': '2',
                  'migration_timeout': str(MIGRATION_TIMEOUT)},
    }


def render(values):
    parser = configparser.ConfigParser(interpolation=None)
    parser.optionxform = str
    for name, options in values.items():
        if name != 'DEFAULT':
            parser.add_section(name)
        for key, value in options.items():
            parser.set(name, key, value)
    out = io.StringIO()
    parser.write(out)
    return out.getvalue()


def write(sb, path):
    """Write tempest.conf for ``sb``'s mini-cloud at ``path``; its path.

    The cloud must be up (``fedex-sandbox up --openstack``): the ids of
    the image and the flavor are asked from it. Site A's terminal is
    given its blank devices for the scenario.
    """
    from fedex_sandbox import manager as manager_mod

    cloud = sb.cloud()
    image = cloud.openstack('image', 'show', 'guest')
    flavor = cloud.openstack('flavor', 'show', 'm1.mini')
    path = os.path.abspath(path)
    workspace = os.path.dirname(os.path.dirname(path)) \
        if os.path.basename(os.path.dirname(path)) == 'etc' \
        else os.path.dirname(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = render(sections(cloud, image['id'], flavor['id'], workspace))
    # It holds the admin's password.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, 'w') as f:
        f.write(text)
    mgr = manager_mod.SandboxManager(sb)
    mgr.dep.make_slots('site-a', manager_mod.DEVICES_PER_SITE)
    return path
