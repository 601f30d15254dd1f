"""Point every rbd disk of a destination domain XML at cluster B.

Nova builds the destination XML on the source: ``_update_rbd_xml`` only
swaps the monitor hosts of local rbd disks (for the *source's* cluster), and
``_update_volume_xml`` writes Cinder volumes from the destination
attachment's connection_info. For a FedEx cutover every rbd disk must name
cluster B: local disks are rewritten here from the manager's plan (pool,
image, monitors) and the destination's own cephx user and libvirt secret;
volumes must already point at B (cinder_fedex answers the destination's
connector with cluster-B connection_info) and are only checked.
"""

import collections

from lxml import etree

from lsrp import exception

RbdTarget = collections.namedtuple('RbdTarget', 'user secret_uuid')


def _refuse(plan, reason):
    return exception.CutoverError(server=plan.server_id,
                                  migration=plan.migration_id, reason=reason)


def _set_hosts(source, monitors):
    for host in source.findall('host'):
        source.remove(host)
    for name, port in monitors:
        etree.SubElement(source, 'host', name=name, port=str(port))


def _set_auth(disk, target):
    auth = disk.find('auth')
    if auth is None:
        auth = etree.SubElement(disk, 'auth')
    auth.set('username', target.user)
    secret = auth.find('secret')
    if secret is None:
        secret = etree.SubElement(auth, 'secret', type='ceph')
    secret.set('uuid', target.secret_uuid)
    for attr in list(secret.attrib):
        if attr not in ('type', 'uuid'):
            del secret.attrib[attr]


def _alias_volume(disk):
    alias = disk.find('alias')
    name = alias.get('name', '') if alias is not None else ''
    return name[3:] if name.startswith('ua-') else None


def _is_volume(disk):
    alias = disk.find('alias')
    if alias is not None and alias.get('name', '').startswith('ua-'):
        return True
    return disk.find('serial') is not None


def rewrite(xml, plan, target):
    """Return ``xml`` with every rbd disk at cluster B; raise if impossible.

    ``plan``: the manager's CutoverPlan; ``target``: RbdTarget of the
    destination compute (its cephx user and libvirt secret for cluster B).
    Every disk of the domain must be an rbd image listed in the plan: a
    local file disk, or an image the migration did not ship, would be lost
    or stale at site B.
    """
    doc = etree.fromstring(xml.encode('utf-8') if isinstance(xml, str)
                           else xml)
    monitors = sorted((h, str(p)) for h, p in plan.cluster.monitors)
    for disk in doc.findall('./devices/disk'):
        source = disk.find('source')
        device = disk.get('device', 'disk')
        target_dev = disk.find('target')
        dev = target_dev.get('dev') if target_dev is not None else '?'
        if source is None:
            if device in ('cdrom', 'floppy'):
                continue      # an empty drive carries no data
            raise _refuse(plan, 'disk %s has no source' % dev)
        if disk.get('type') != 'network' or source.get('protocol') != 'rbd':
            raise _refuse(plan, 'disk %s is not an rbd image (%s %s): only '
                          'rbd disks can be cut over' % (
                              dev, disk.get('type'),
                              source.get('file') or source.get('dev') or
                              source.get('protocol')))
        name = source.get('name')
        if _is_volume(disk):
            serial = disk.findtext('serial') or _alias_volume(disk)
            planned = plan.volume(serial) if serial else None
            if planned is None:
                planned = plan.disk_for_destination(name)
                serial = serial or (planned and planned.volume_id)
            if planned is None:
                raise _refuse(plan, 'volume %s (disk %s) is not part of the '
                              'migration' % (serial or name, dev))
            hosts = sorted((h.get('name'), str(h.get('port')))
                           for h in source.findall('host'))
            if name != planned.destination or hosts != monitors:
                raise _refuse(plan, 'volume %s (disk %s) would still use %s '
                              'at %s, not %s at site %s: is its Cinder '
                              'backend a cinder_fedex backend that knows '
                              'site %s?' % (
                                  serial, dev, name,
                                  ','.join(':'.join(h) for h in hosts),
                                  planned.destination, plan.destination_site,
                                  plan.destination_site))
            continue
        planned = plan.disk_for_source(name)
        if planned is None or planned.volume_id:
            raise _refuse(plan, 'image %s (disk %s) is not part of the '
                          'migration' % (name, dev))
        source.set('name', planned.destination)
        _set_hosts(source, plan.cluster.monitors)
        _set_auth(disk, target)
    return etree.tostring(doc, encoding='unicode')


def rbd_disks(xml):
    """[(dev, name, [(host, port)], user, secret uuid)] of every rbd disk."""
    doc = etree.fromstring(xml.encode('utf-8') if isinstance(xml, str)
                           else xml)
    found = []
    for disk in doc.findall('./devices/disk'):
        source = disk.find('source')
        if source is None or source.get('protocol') != 'rbd':
            continue
        auth = disk.find('auth')
        secret = auth.find('secret') if auth is not None else None
        found.append((disk.find('target').get('dev'), source.get('name'),
                      [(h.get('name'), h.get('port'))
                       for h in source.findall('host')],
                      auth.get('username') if auth is not None else None,
                      secret.get('uuid') if secret is not None else None))
    return found
