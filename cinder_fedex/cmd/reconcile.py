"""cinder-fedex-reconcile: finish a volume ownership move lost in a crash.

For every volume marked by a FedEx migration, compare where it is attached
(the site in Nova's connector) with the backend that owns it: a volume
used at its peer site only gets the cutover, one flipped but used at its
previous site only gets the revert. Prints what it finds; ``--apply``
changes it. Run with cinder.conf (it reads Cinder's database, like
cinder-manage).
"""

import sys

from oslo_config import cfg

from cinder_fedex import marks
from cinder_fedex import ownership

CONF = cfg.CONF
cli_opts = [
    cfg.BoolOpt('apply', default=False,
                help='Make the changes (default: only say them).'),
    cfg.StrOpt('volume', help='Only this volume id.'),
]


def run(context, apply=False, volume_id=None, out=sys.stdout):
    """Returns the list of (volume id, action) found (and done if apply)."""
    from cinder import objects

    if volume_id:
        volumes = [objects.Volume.get_by_id(context, volume_id)]
    else:
        volumes = objects.VolumeList.get_all(context)
    found = []
    for volume in volumes:
        if not marks.migration_of(volume):
            continue
        action = ownership.reconcile(context, volume)
        if action is None:
            continue
        found.append((volume.id, action))
        out.write('volume %s (FedEx migration %s, host %s, attached at %s): '
                  '%s%s\n' % (volume.id, marks.migration_of(volume),
                              volume.host,
                              ','.join(sorted(ownership.attached_sites(
                                  volume))),
                              action, '' if apply else ' (dry run)'))
        if apply:
            getattr(ownership, action)(context, volume)
    return found


def main():
    from cinder.common import config  # noqa: F401 (registers options)
    from cinder import context as cinder_context
    from cinder import objects

    CONF.register_cli_opts(cli_opts)
    CONF(sys.argv[1:], project='cinder')
    objects.register_all()
    found = run(cinder_context.get_admin_context(), CONF.apply, CONF.volume)
    if not found:
        print('nothing to reconcile')
    return 0
