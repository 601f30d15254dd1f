"""The tiny guest of the mini-cloud, built at set-up from Debian packages.

A Debian kernel and a busybox initramfs (no root filesystem): its init loads
the virtio modules and then, forever, writes a tick record (an increasing
counter and the guest's uptime) every 100 ms (``fedex_tick_ms`` on its
kernel command line changes it) with fsync to its root disk (/dev/vda) and,
when a volume is attached, to /dev/vdb. The records go to a
ring of 512-byte slots, so a reader through librbd, at either site, sees
where the guest is and the history of its last ticks (see guest_reader).

Artifacts are cached by kernel version in ``FEDEX_GUEST_CACHE`` (default
/var/tmp/fedex-guest-cache): the kernel package is fetched once per machine.
"""

import glob
import hashlib
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
# The tick's period: fedex_tick_ms=N on the kernel command line (10..1000),
# else PERIOD_MS. Each tick costs the TCG guest a fork, an exec of dd and an
# fsync per disk: at 20 ms one guest took two thirds of a core (the wave's
# three most of this 2-core machine), at 100 ms a fifth (QEMU alone, 30 s
# measured). 100 ms still times a pause of about a second to a tenth of
# it; the pause benchmark asks for 20.
TICK_PARAM = 'fedex_tick_ms'
PERIOD_MS = 100
TICK_MIN_MS, TICK_MAX_MS = 10, 1000
# The memory-dirtying knob (see DIRTIER): fedex_dirty_mb_s=N on the kernel
# command line, at most this many MiB/s (the guest has 256 MiB).
DIRTY_PARAM = 'fedex_dirty_mb_s'
DIRTY_MAX_MIB_S = 64
# The kernel command line of a guest that dirties ``n`` MiB/s: Glance's
# ``os_command_line`` replaces Nova's whole default, so it repeats it.
BASE_CMDLINE = 'root=/dev/vda console=tty0 console=ttyS0 console=hvc0'
MODULES = ('virtio_ring', 'virtio', 'virtio_pci_legacy_dev',
           'virtio_pci_modern_dev', 'virtio_pci', 'virtio_blk')

# With fedex_dirty_mb_s=N (1..64) on /proc/cmdline, a second loop rewrites
# an N MiB working set in a tmpfs every second: distinct pages, N MiB/s,
# what QEMU's pre-copy must send again and libvirt's dirty-rate calculation
# sees. Non-zero bytes (QEMU sends zero pages as a flag), and two seeds
# written in turn: page-sampling compares page digests, and a page
# rewritten with the same bytes would not count as dirty. Niced below the
# tick loop, so the counter keeps its period.
DIRTIER = """\
dirty=0
for w in $(cat /proc/cmdline); do
    case $w in {param}=*) dirty=${{w#{param}=}};; esac
done
case $dirty in ''|*[!0-9]*) dirty=0;; esac
[ "$dirty" -gt {max} ] && dirty={max}
if [ "$dirty" -gt 0 ]; then
    mkdir -p /dirty
    mount -t tmpfs -o size=$((dirty + 4))m tmpfs /dirty
    dd if=/dev/urandom of=/dirty/seed0 bs=1048576 count=1 2>/dev/null
    dd if=/dev/urandom of=/dirty/seed1 bs=1048576 count=1 2>/dev/null
    echo "fedex-guest: dirtying $dirty MiB/s of memory" > /dev/ttyS0
    (
        k=0
        while true; do
            read t0 rest < /proc/uptime
            k=$((1 - k))
            i=0
            while [ $i -lt $dirty ]; do
                dd if=/dirty/seed$k of=/dirty/ws bs=1048576 seek=$i \\
                    count=1 conv=notrunc 2>/dev/null
                i=$((i + 1))
            done
            # The rest of the second (uptime in centiseconds).
            read t1 rest < /proc/uptime
            left=$((100 - (${{t1%.*}}${{t1#*.}} - ${{t0%.*}}${{t0#*.}})))
            [ $left -gt 0 ] && usleep $((left * 10000))
        done
    ) &
    renice -n 19 $! >/dev/null 2>&1
fi
"""

INIT = """\
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in {modules}; do insmod /lib/modules/$m.ko 2>/dev/null; done
tick_ms={period_ms}
for w in $(cat /proc/cmdline); do
    case $w in {tick_param}=*) tick_ms=${{w#{tick_param}=}};; esac
done
case $tick_ms in ''|*[!0-9]*) tick_ms={period_ms};; esac
[ "$tick_ms" -lt {tick_min} ] && tick_ms={tick_min}
[ "$tick_ms" -gt {tick_max} ] && tick_ms={tick_max}
echo "fedex-guest: up, ticking every $tick_ms ms to /dev/vda (and /dev/vdb" \\
    "when attached)" > /dev/ttyS0
{dirtier}n=0
while true; do
    n=$((n + 1))
    read up idle < /proc/uptime
    slot=$((n % {slots} + {first_slot}))
    # (No $(printf): a command substitution forks, dear under TCG.)
    rec="FEDEXTICK $n $up"
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
        # A here-document, not 'printf | dd': ash writes a short one into
        # the pipe itself, where a pipeline forks once more. conv=sync pads
        # the record to its slot with NULs.
        [ -b /dev/$d ] && dd of=/dev/$d bs={slot} seek=$slot count=1 \\
            conv=sync,notrunc,fsync 2>/dev/null <<EOF
$rec
EOF
    done
    [ $((n % 500)) -eq 1 ] && echo "fedex-guest: tick $n" > /dev/ttyS0
    usleep $((tick_ms * 1000))
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


def init_script():
    """The initramfs's /init, as built now."""
    return INIT.format(modules=' '.join(MODULES), slots=SLOTS,
                       dirtier=DIRTIER.format(param=DIRTY_PARAM,
                                              max=DIRTY_MAX_MIB_S),
                       first_slot=RING_OFFSET // SLOT,
                       slot=SLOT, period_ms=PERIOD_MS, tick_param=TICK_PARAM,
                       tick_min=TICK_MIN_MS, tick_max=TICK_MAX_MS)


def init_digest():
    """Short digest of :func:`init_script`: names an initramfs's version."""
    return hashlib.sha256(init_script().encode()).hexdigest()[:12]


def cmdline(dirty_mib_s=0, tick_ms=None):
    """The kernel command line of a guest dirtying ``dirty_mib_s`` MiB/s.

    ``tick_ms``: its tick's period (default :data:`PERIOD_MS`). For
    Glance's ``os_command_line`` image property, which replaces Nova's
    whole default command line (:data:`BASE_CMDLINE`).
    """
    words = [BASE_CMDLINE]
    if dirty_mib_s:
        words.append('%s=%d' % (DIRTY_PARAM, int(dirty_mib_s)))
    if tick_ms:
        words.append('%s=%d' % (TICK_PARAM, int(tick_ms)))
    return ' '.join(words)


def build(target):
    """Build (or reuse) kernel, initramfs and disk; returns their paths.

    The initramfs is built again when its /init changed (``initrd.init``
    keeps the digest it was built from). A cloud that registered an older
    one in Glance keeps booting that one: Glance images are immutable and
    ``fedex-sandbox up`` re-uploads none that is active. A test that needs
    this init registers its own (see ``tests/scenarios/test_convergence``).
    """
    os.makedirs(target, exist_ok=True)
    files = {'kernel': os.path.join(target, 'vmlinuz'),
             'initrd': os.path.join(target, 'initrd.cpio'),
             'disk': os.path.join(target, 'disk.raw')}
    stamp = os.path.join(target, 'initrd.init')
    digest = init_digest()
    try:
        with open(stamp) as f:
            current = f.read().strip() == digest
    except OSError:
        current = False
    if current and all(os.path.exists(p) for p in files.values()):
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
            f.write(init_script())
        os.chmod(init, 0o755)
        names = _run(['find', '.'], cwd=root)
        with open(files['initrd'] + '.tmp', 'wb') as out:
            subprocess.run([busybox, 'cpio', '-o', '-H', 'newc'],
                           input=names.encode(), stdout=out, cwd=root,
                           check=True, stderr=subprocess.DEVNULL)
        os.replace(files['initrd'] + '.tmp', files['initrd'])
    if not os.path.exists(files['disk']):
        with open(files['disk'], 'wb') as f:
            f.truncate(DISK_MIB << 20)
    with open(stamp, 'w') as f:
        f.write(digest + '\n')
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
