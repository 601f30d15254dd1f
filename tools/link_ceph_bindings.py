#!/usr/bin/env python3
"""Make Debian's Ceph bindings (rados, rbd) importable in this virtualenv.

They are not on PyPI. We link just the two extension modules into a private
directory and add that directory with a .pth file, so that none of Debian's
other packages leak into the virtualenv. Run with the venv's python.
"""

import glob
import importlib.machinery
import os
import sys
import sysconfig

DIST = '/usr/lib/python3/dist-packages'
MODULES = ('rados', 'rbd')
# With --libvirt (the mini-cloud's venv: nova-compute): Debian's
# python3-libvirt, whose pure-Python modules go with its extensions.
LIBVIRT = ('libvirtmod', 'libvirtmod_qemu', 'libvirtmod_lxc')
LIBVIRT_PY = ('libvirt.py', 'libvirt_qemu.py', 'libvirt_lxc.py',
              'libvirtaio.py')


def main():
    if sys.prefix == sys.base_prefix:
        sys.exit('%s: run me with the python of a virtualenv' % sys.argv[0])
    target = os.path.join(sys.prefix, 'ceph-bindings')
    os.makedirs(target, exist_ok=True)
    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    modules = MODULES + (LIBVIRT if '--libvirt' in sys.argv else ())
    for module in modules:
        found = [p for p in glob.glob(os.path.join(DIST, module + '.*'))
                 if any(p.endswith(s) for s in suffixes)]
        if not found:
            sys.exit('%s: no %s module for this Python (%s) in %s; install '
                     'python3-%s (apt-get install -y python3-%s) and use a '
                     'Python %d.%d virtualenv' % (
                         sys.argv[0], module, suffixes[0], DIST, module,
                         module, *sys.version_info[:2]))
        link = os.path.join(target, os.path.basename(found[0]))
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(found[0], link)
    if '--libvirt' in sys.argv:
        for name in LIBVIRT_PY:
            link = os.path.join(target, name)
            if os.path.lexists(link):
                os.unlink(link)
            os.symlink(os.path.join(DIST, name), link)
    pth = os.path.join(sysconfig.get_paths()['purelib'], 'ceph-bindings.pth')
    with open(pth, 'w') as f:
        f.write(target + '\n')


if __name__ == '__main__':
    main()
