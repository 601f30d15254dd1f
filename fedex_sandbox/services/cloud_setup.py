"""Keystone and cloud resources of the mini-cloud, through openstacksdk.

Runs with the OpenStack virtualenv's Python (``python -m
fedex_sandbox.services.cloud_setup identity|resources < spec.json``): one
process for the whole step, since each ``openstack`` CLI call costs 5-7 s
here. Every action is idempotent: a second ``up`` finds what exists.
"""

import json
import sys
import time

import openstack


def connect(spec):
    a = spec['admin']
    return openstack.connect(
        auth_url=a['auth_url'], username='admin', password=a['password'],
        project_name='admin', user_domain_name='Default',
        project_domain_name='Default', region_name='RegionOne',
        identity_interface='public')


def identity(conn, spec):
    idc = conn.identity
    roles = {r.name: r for r in idc.roles()}
    for name in ('admin', 'member', 'reader', 'service'):
        if name not in roles:
            roles[name] = idc.create_role(name=name)
    projects = {p.name: p for p in idc.projects()}
    for name in ('service', 'demo'):
        if name not in projects:
            projects[name] = idc.create_project(
                name=name, domain_id='default',
                description='fedex-sandbox %s project' % name)
    users = {u.name: u for u in idc.users()}
    for u in spec['users']:
        user = users.get(u['name'])
        if user is None:
            user = idc.create_user(name=u['name'], password=u['password'],
                                   domain_id='default',
                                   default_project_id=projects[
                                       u['project']].id)
        else:
            idc.update_user(user, password=u['password'])
        for role in u['roles']:
            idc.assign_project_role_to_user(projects[u['project']], user,
                                            roles[role])
    services = {(s.type, s.name): s for s in idc.services()}
    endpoints = list(idc.endpoints())
    for s in spec['services']:
        svc = services.get((s['type'], s['name']))
        if svc is None:
            svc = idc.create_service(type=s['type'], name=s['name'],
                                     description=s.get('description', ''))
        for interface in ('public', 'internal', 'admin'):
            have = [e for e in endpoints if e.service_id == svc.id
                    and e.interface == interface]
            if have and have[0].url == s['url']:
                continue
            for e in have:
                idc.delete_endpoint(e)
            idc.create_endpoint(service_id=svc.id, interface=interface,
                                url=s['url'], region_id='RegionOne')


def resources(conn, spec):
    """Aggregates (one AZ per site), flavors, volume types, the guest."""
    for agg in spec['aggregates']:
        found = [a for a in conn.compute.aggregates()
                 if a.name == agg['name']]
        a = found[0] if found else conn.compute.create_aggregate(
            name=agg['name'], availability_zone=agg['zone'])
        for host in agg['hosts']:
            if host not in (a.hosts or []):
                conn.compute.add_host_to_aggregate(a, host)
    flavors = {f.name for f in conn.compute.flavors()}
    for f in spec['flavors']:
        if f['name'] not in flavors:
            conn.compute.create_flavor(name=f['name'], ram=f['ram'],
                                       vcpus=f['vcpus'], disk=f['disk'],
                                       is_public=True)
    types = {t.name for t in conn.block_storage.types()}
    for t in spec['volume_types']:
        if t['name'] not in types:
            specs = {'volume_backend_name': t['backend']}
            if t.get('zone'):
                specs['RESKEY:availability_zones'] = t['zone']
            conn.block_storage.create_type(name=t['name'], is_public=True,
                                           extra_specs=specs)
    images = {i.name: i for i in conn.image.images()}
    ids = {}
    for img in spec['images']:
        have = images.get(img['name'])
        if have is not None and have.status == 'active':
            ids[img['name']] = have.id
            continue
        if have is not None:
            conn.image.delete_image(have)
        props = {k: ids[v] for k, v in img.get('refer', {}).items()}
        with open(img['file'], 'rb') as f:
            image = conn.image.create_image(
                name=img['name'], data=f,
                disk_format=img['disk_format'],
                container_format=img['container_format'],
                visibility='public', allow_duplicates=True, **props)
        ids[img['name']] = conn.image.wait_for_status(
            image, 'active', wait=120).id
    return ids


def main():
    action = sys.argv[1]
    spec = json.load(sys.stdin)
    begin = time.monotonic()
    conn = connect(spec)
    result = {'identity': identity, 'resources': resources}[action](
        conn, spec)
    json.dump({'result': result, 'seconds': time.monotonic() - begin},
              sys.stdout)


if __name__ == '__main__':
    main()
