"""The tiny guest of the mini-cloud, built at set-up from Debian packages.

A Debian kernel and a busybox initramfs (no root filesystem): its init loads
the virtio modules and then, forever, writes a tick record (an increasing
counter and the guest's uptime) every ~20 ms with fsync to its root disk
(/dev/vda) and, when a volume is attached, to /dev/vdb. The records go to a
ring of 512-byte slots, so a reader through librbd, at either site, sees
where the guest is and the history of its last ticks (see guest_reader).

Artifacts are cached by kernel version in ``FEDEX_GUEST_CACHE`` (default
/var/tmp/fedex-guest-cache): the kernel package is fetched once per machine.
"""

import glob
import lzma
import os
import shutil
import subprocess
import tempfile

from lsrp import exception

KERNEL_META = 'linux-image-amd64'
CACHE_ENV = 'FEDEX_GUEST_CACHE'
DEFAULT_CACHE = '/var/tmp/fedex-guest-cache'
DISK_MIB = 16
# Ring of tick records: slot i at byte RING_OFFSET + i*SLOT.
RING_OFFSET = 1 << 20
SLOT = 512
SLOTS = 256
PERIOD_US = 20000
MODULES = ('virtio_ring', 'virtio', 'virtio_pci_legacy_dev',
           'virtio_pci_modern_dev', 'virtio_pci', 'virtio_blk')

INIT = """\
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in {modules}; do insmod /lib/modules/$m.ko 2>/dev/null; done
echo "fedex-guest: up, ticking to /dev/vda (and /dev/vdb when attached)" \\
    > /dev/ttyS0
n=0
while true; do
    n=$((n + 1))
    read up idle < /proc/uptime
    slot=$((n % {slots} + {first_slot}))
    rec=$(printf 'FEDEXTICK %d %s' $n $up)
    for d in vda vdb; do
        # dd opens with O_CREAT: one that lost the race with a hot-unplug
        # (the node gone between the test and its open) left a regular file
        # in the node's place, and devtmpfs does not replace a file with the
        # node of the disk attached next: remove it, make the node.
        if [ -f /dev/$d ]; then
            rm -f /dev/$d
            echo "fedex-guest: /dev/$d was a file (a write raced its" \\
                "unplug); removed" > /dev/ttyS0
        fi
        if [ ! -b /dev/$d ] && [ -r /sys/block/$d/dev ]; then
            IFS=: read major minor < /sys/block/$d/dev
            mknod /dev/$d b $major $minor 2>/dev/null
        fi
        [ -b /dev/$d ] && printf '%-{pad}s\\n' "$rec" | \\
            dd of=/dev/$d bs={slot} seek=$slot count=1 conv=notrunc,fsync \\
            2>/dev/null
    done
    [ $((n % 500)) -eq 1 ] && echo "fedex-guest: tick $n" > /dev/ttyS0
    usleep {period}
done
"""


def cache_dir():
    return os.environ.get(CACHE_ENV, DEFAULT_CACHE)


def _run(argv, cwd=None):
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=cwd)
    if proc.returncode != 0:
        raise exception.SandboxError(
            reason='guest build: "%s" failed: %s' % (
                ' '.join(argv), proc.stderr.strip()[-400:]))
    return proc.stdout


def kernel_package():
    """The versioned kernel package the meta package depends on."""
    out = _run(['apt-cache', 'depends', KERNEL_META])
    for line in out.splitlines():
        line = line.strip()
        if line.startswith('Depends: linux-image-'):
            return line.split()[1]
    raise exception.SandboxError(reason='guest build: no kernel package '
                                 'behind %s' % KERNEL_META)


def build(target):
    """Build (or reuse) kernel, initramfs and disk; returns their paths."""
    os.makedirs(target, exist_ok=True)
    files = {'kernel': os.path.join(target, 'vmlinuz'),
             'initrd': os.path.join(target, 'initrd.cpio'),
             'disk': os.path.join(target, 'disk.raw')}
    if all(os.path.exists(p) for p in files.values()):
        return files
    busybox = '/bin/busybox'
    if not os.path.exists(busybox):
        raise exception.PackageMissing(program=busybox,
                                       package='busybox-static')
    package = kernel_package()
    cache = os.path.join(cache_dir(), package)
    if not os.path.exists(os.path.join(cache, 'done')):
        _fetch_kernel(package, cache)
    shutil.copy(os.path.join(cache, 'vmlinuz'), files['kernel'])
    with tempfile.TemporaryDirectory(dir=target) as root:
        for sub in ('bin', 'proc', 'sys', 'dev', 'lib/modules'):
            os.makedirs(os.path.join(root, sub))
        shutil.copy(busybox, os.path.join(root, 'bin', 'busybox'))
        for m in MODULES:
            shutil.copy(os.path.join(cache, m + '.ko'),
                        os.path.join(root, 'lib', 'modules'))
        init = os.path.join(root, 'init')
        with open(init, 'w') as f:
            f.write(INIT.format(modules=' '.join(MODULES), slots=SLOTS,
                                first_slot=RING_OFFSET // SLOT,
                                pad=SLOT - 1, slot=SLOT, period=PERIOD_US))
        os.chmod(init, 0o755)
        names = _run(['find', '.'], cwd=root)
        with open(files['initrd'] + '.tmp', 'wb') as out:
            subprocess.run([busybox, 'cpio', '-o', '-H', 'newc'],
                           input=names.encode(), stdout=out, cwd=root,
                           check=True, stderr=subprocess.DEVNULL)
        os.replace(files['initrd'] + '.tmp', files['initrd'])
    with open(files['disk'], 'wb') as f:
        f.truncate(DISK_MIB << 20)
    return files


def _fetch_kernel(package, cache):
    os.makedirs(cache, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        _run(['apt-get', 'download', package], cwd=tmp)
        deb = glob.glob(os.path.join(tmp, '*.deb'))[0]
        tree = os.path.join(tmp, 'x')
        _run(['dpkg-deb', '-x', deb, tree])
        kernel = glob.glob(os.path.join(tree, 'boot', 'vmlinuz-*'))[0]
        shutil.copy(kernel, os.path.join(cache, 'vmlinuz'))
        for m in MODULES:
            found = glob.glob(os.path.join(tree, 'lib', 'modules', '*',
                                           'kernel', '**', m + '.ko*'),
                              recursive=True)
            if not found:
                raise exception.SandboxError(
                    reason='guest build: module %s not in %s' % (m, package))
            data = open(found[0], 'rb').read()
            if found[0].endswith('.xz'):
                data = lzma.decompress(data)
            with open(os.path.join(cache, m + '.ko'), 'wb') as f:
                f.write(data)
    open(os.path.join(cache, 'done'), 'w').close()
