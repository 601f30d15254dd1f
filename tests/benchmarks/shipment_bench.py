#!/usr/bin/env python3
"""Benchmark of shipments against the rbd CLI, on the sandbox, same data.

    python tests/benchmarks/shipment_bench.py [--pairs 5] [--fs-gib 2]
        [--size-gib 1] [--sparse-gib 100] [--skip flock --skip remote ...]

Prints, for the same image in the same run:
  * fs: an RBD image holding an ext4 filesystem filled with a copy of /usr
    and a file of ``--fs-random-mib`` random bytes (``mkfs.ext4 -d``, then
    ``rbd import``): ``--pairs`` pairs of our export
    to 3 devices (compression (LZ4), encryption, parity) and ``rbd export
    <image>@<snap> <file>``, and of our import and ``rbd import <file>``;
    the median of the per-pair wall-time ratios (target <= 1.0), beside
    them ``rbd export`` with its ``sync`` (ours writes O_DIRECT) and ``rbd
    import`` of the file read from the disk (page cache dropped: ours reads
    its devices O_DIRECT), the import with ``--verify-readback``
    separately, and CPU seconds (user + system) of each command as the
    coarse profile;
  * image / sparse: the same on an image of random 4 MiB pieces and on a
    sparse one (0.1 % written): peak RSS (target <= 300 MB, flat in size);
  * a flock of clones of a template, each with distinct writes: bytes on the
    devices vs the sum of the ``rbd export`` sizes (target <= 0.20);
  * an export through the terminal the devices hang off (``lsrp export
    --remote`` into ``lsrp-server``) vs a local export and ``rbd export``;
  * throughput of the hash, cipher, compressor and parity codes.
The load average is printed at the start and the end: other work on the
machine moves every figure, but a ratio is taken within one pair.
Needs a running sandbox (``fedex-sandbox up``); uses pool vms on both sites.
"""

import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import blake3
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
import lz4.block
import numpy
from pyeclib import ec_iface
import zstandard

from fedex_sandbox import opts as sandbox_opts
from fedex_sandbox import sandbox as sandbox_mod
from lsrp.rbd import Cluster

MiB, GiB = 1 << 20, 1 << 30
BIN = os.path.dirname(sys.executable)


def drop_page_cache():
    """Written back and dropped: the next read of a file is from the disk."""
    subprocess.run(['sync'], check=True)
    with open('/proc/sys/vm/drop_caches', 'w') as f:
        f.write('1\n')


def run(cmd, stdout=None):
    """Run a command; return (seconds, peak RSS in MB, CPU seconds) of it.

    NOTE: the peak RSS comes from GNU time, a small parent: Linux starts a
    child's ru_maxrss at its parent's RSS, so wait4() here would report this
    (large) benchmark process instead.
    """
    with tempfile.NamedTemporaryFile('r') as rss:
        begin = time.monotonic()
        proc = subprocess.run(['/usr/bin/time', '-f', '%M %U %S', '-o',
                               rss.name] + cmd,
                              stdout=stdout or subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
        took = time.monotonic() - begin
        if proc.returncode != 0:
            sys.exit('failed: %s\n%s' % (' '.join(cmd),
                                         proc.stderr.decode()))
        peak, user, system = rss.read().split()[-3:]
        return took, int(peak) / 1024.0, float(user) + float(system)


def phases(path):
    """Seconds per task from ``lsrp --progress json`` output."""
    out = {}
    with open(path) as f:
        for line in f:
            event = json.loads(line)
            if event.get('event') == 'done':
                kind = event['task'].split()[0]
                out[kind] = out.get(kind, 0) + event['elapsed']
    return out


def fs_image_name(args):
    """The filesystem image's name: kept between runs of the same kind."""
    name = 'bench-fs-%gg' % args.fs_gib
    if args.fs_random_mib:
        name += '-r%d' % args.fs_random_mib
    return name


class Bench(object):

    def __init__(self, args):
        self.args = args
        sb = self.sandbox = sandbox_mod.Sandbox(os.environ.get(
            sandbox_opts.DIR_ENV, sandbox_opts.DEFAULT_DIR))
        self.a, self.b = sb.site('site-a'), sb.site('site-b')
        self.work = tempfile.mkdtemp(prefix='fedex-bench-',
                                     dir=args.work_dir)
        self.tag = 'bench-%d' % os.getpid()
        self.made = []

    def cluster(self, site):
        return Cluster(site.conf, site.keyring, site=site.name)

    def lsrp(self, *args, site=None):
        cmd = [os.path.join(BIN, 'lsrp'),
               '--shipment-state_dir', os.path.join(self.work, 'state'),
               '--shipment-key_dir', os.path.join(self.work, 'keys')]
        cmd += list(args)
        if site is not None:
            cmd += ['--ceph-conf', site.conf, '--keyring', site.keyring,
                    '--site', site.name]
        return cmd

    def rbd(self, site, *args):
        return ['rbd', '-c', site.conf, '--keyring', site.keyring,
                '--no-progress'] + list(args)

    def make_image(self, name, size, fill):
        """Half random 4 MiB pieces (by fill), the rest never written."""
        with self.cluster(self.a) as c, c.pool('vms') as pool:
            pool.create_image(name, size)
            self.made.append(('a', name))
            rng = random.Random(name)
            with pool.open_image(name) as img:
                for offset in range(0, size, 4 * MiB):
                    if rng.random() < fill:
                        img.write(offset, os.urandom(4 * MiB))
                img.create_snapshot('base')

    def devices(self, name):
        return [a for i in range(3)
                for a in ('--device', os.path.join(self.work, name, 'd%d' % i))]

    def du(self, path):
        total = 0
        for root, _, files in os.walk(path):
            for f in files:
                total += os.stat(os.path.join(root, f)).st_blocks * 512
        return total

    # --- the measurements ---------------------------------------------------

    def reference_export(self, name):
        """``rbd export`` of name@base to a file: (file, seconds, + sync)."""
        ref_file = os.path.join(self.work, name + '.raw')
        t_ref = run(self.rbd(self.a, 'export', 'vms/%s@base' % name,
                             ref_file))[0]
        # Our export returns with its data on stable storage (devices are
        # unplugged next); rbd export leaves it in the page cache.
        t_sync = run(['sync', '-f', ref_file])[0]
        return ref_file, t_ref, t_sync

    def export_import(self, label, size, fill):
        name = '%s-%s' % (self.tag, label)
        self.make_image(name, size, fill)
        if self.args.rss_only:
            return self.rss_only(label, name, size, fill)
        ref_file, t_ref_exp, t_sync = self.reference_export(name)
        ship = name
        t_exp, rss_exp, _ = run(self.lsrp(
            'export', 'vms/%s' % name, '--snapshot', 'base',
            '--shipment-id', ship, *self.devices(name), site=self.a))
        seal = subprocess.run(self.lsrp('seal', '--shipment-id', ship),
                              capture_output=True, text=True, check=True)
        digest = seal.stdout.split()[-1]
        t_ref_imp = run(self.rbd(self.b, 'import', ref_file,
                                 'vms/%s-ref' % name))[0]
        self.made.append(('b', name + '-ref'))
        os.unlink(ref_file)
        log = os.path.join(self.work, 'import.jsonl')
        with open(log, 'w') as out:
            t_imp, rss_imp, _ = run(self.lsrp(
                'import', *self.devices(name), '--expect-digest', digest,
                '--progress', 'json', site=self.b), stdout=out)
        split = phases(log)
        self.made.append(('b', name))
        on_devices = self.du(os.path.join(self.work, name))
        shutil.rmtree(os.path.join(self.work, name))
        print('%-10s export %6.1f s vs rbd export %6.1f s: ratio %.2f '
              '(target <= 1.0); vs rbd export + sync %6.1f s: ratio %.2f; '
              'peak RSS %.0f MB (target <= 300)' % (
                  label, t_exp, t_ref_exp, t_exp / t_ref_exp,
                  t_ref_exp + t_sync, t_exp / (t_ref_exp + t_sync), rss_exp))
        print('%-10s import %6.1f s vs rbd import %6.1f s: ratio %.2f '
              '(target <= 1.0); peak RSS %.0f MB (target <= 300); of '
              'which writing %.1f s, verifying after writing %.1f s' % (
                  label, t_imp, t_ref_imp, t_imp / t_ref_imp, rss_imp,
                  split.get('import', 0), split.get('verify', 0)
                  + split.get('readback', 0)))
        print('%-10s %.0f MiB of data, %.0f MiB on 3 devices with parity' % (
            label, size * fill / MiB, on_devices / MiB))
        sys.stdout.flush()

    def rss_only(self, label, name, size, fill):
        """Our export and import alone: their peak RSS (and times).

        Without the rbd CLI's reference, which reads and writes every byte
        of a sparse image (14 minutes for 100 GiB on a busy machine).
        """
        t_exp, rss_exp, c_exp = run(self.lsrp(
            'export', 'vms/%s' % name, '--snapshot', 'base',
            '--shipment-id', name, *self.devices(name), site=self.a))
        seal = subprocess.run(self.lsrp('seal', '--shipment-id', name),
                              capture_output=True, text=True, check=True)
        t_imp, rss_imp, c_imp = run(self.lsrp(
            'import', *self.devices(name), '--expect-digest',
            seal.stdout.split()[-1], site=self.b))
        self.made.append(('b', name))
        shutil.rmtree(os.path.join(self.work, name))
        print('%-10s %.1f GiB, %.0f MiB of data: export %.1f s (cpu %.1f), '
              'peak RSS %.0f MB; import %.1f s (cpu %.1f), peak RSS %.0f MB '
              '(target <= 300); load %.1f' % (
                  label, size / GiB, size * fill / MiB, t_exp, c_exp,
                  rss_exp, t_imp, c_imp, rss_imp, os.getloadavg()[0]))
        sys.stdout.flush()

    def make_fs_image(self, name, size, dirs, random_mib):
        """An image holding ext4 filled with a copy of ``dirs`` (of /usr).

        ``mkfs.ext4 -d`` fills the filesystem from a directory (hard links
        of the originals: nothing is copied twice), then ``rbd import``.
        ``random_mib`` MiB of random bytes in one more file: data that
        neither compresses nor repeats (a guest's encrypted or compressed
        files), the issue's measure.
        """
        tree = os.path.join(self.work, 'tree')
        os.makedirs(tree)
        for d in dirs:
            dest = os.path.join(tree, d.strip('/').replace('/', '_'))
            if subprocess.run(['cp', '-al', d, dest],
                              capture_output=True).returncode:
                subprocess.run(['cp', '-a', d, dest], check=True)
        with open(os.path.join(tree, 'random.bin'), 'wb') as f:
            for _ in range(random_mib):
                f.write(os.urandom(MiB))
        fs = os.path.join(self.work, 'fs.img')
        with open(fs, 'wb') as f:
            f.truncate(size)
        subprocess.run(['mkfs.ext4', '-q', '-F', '-d', tree, fs], check=True)
        shutil.rmtree(tree)
        subprocess.run(self.rbd(self.a, 'import', fs, 'vms/' + name),
                       check=True)
        os.unlink(fs)
        if self.args.remove_fs:
            self.made.append(('a', name))
        subprocess.run(self.rbd(self.a, 'snap', 'create',
                                'vms/%s@base' % name), check=True)
        return self.used(name)

    def used(self, name):
        # NOTE: rbd diff takes no --no-progress.
        extents = json.loads(subprocess.run(
            ['rbd', '-c', self.a.conf, '--keyring', self.a.keyring, 'diff',
             '--format', 'json', 'vms/%s@base' % name],
            capture_output=True, check=True, text=True).stdout)
        return sum(e['length'] for e in extents)

    def remove(self, site, name):
        site = self.a if site == 'a' else self.b
        subprocess.run(self.rbd(site, 'snap', 'purge', 'vms/' + name),
                       capture_output=True)
        subprocess.run(self.rbd(site, 'rm', 'vms/' + name),
                       capture_output=True)

    def fs_pairs(self):
        """Pairs of (rbd, lsrp) on a filesystem image; medians of ratios."""
        args = self.args
        # Kept between runs (mkfs and rbd import of it take minutes here):
        # --remove-fs removes it at the end.
        name = fs_image_name(args)
        with self.cluster(self.a) as c, c.pool('vms') as pool:
            exists = pool.image_exists(name)
            if exists:
                with pool.open_image(name) as img:
                    exists = img.snapshot_exists('base')
        if not exists:
            self.remove('a', name)   # a run stopped while making it
        if exists:
            used = self.used(name)
            if args.remove_fs:
                self.made.append(('a', name))
        else:
            used = self.make_fs_image(name, int(args.fs_gib * GiB),
                                      args.fs_dirs, args.fs_random_mib)
        rows = []
        for i in range(args.pairs):
            ref_file = os.path.join(self.work, 'ref.raw')
            t_rexp, _, c_rexp = run(self.rbd(self.a, 'export',
                                             'vms/%s@base' % name, ref_file))
            t_sync = run(['sync', '-f', ref_file])[0]
            ship = '%s-%d' % (name, i)
            t_exp, rss_exp, c_exp = run(self.lsrp(
                'export', 'vms/%s' % name, '--snapshot', 'base',
                '--shipment-id', ship, *self.devices(ship), site=self.a))
            seal = subprocess.run(self.lsrp('seal', '--shipment-id', ship),
                                  capture_output=True, text=True, check=True)
            digest = seal.stdout.split()[-1]
            t_rimp, _, c_rimp = run(self.rbd(self.b, 'import', ref_file,
                                             'vms/%s-ref' % name))
            self.remove('b', name + '-ref')
            # rbd export's file was still in the page cache; our import
            # reads its devices with O_DIRECT, from the disk. The same import
            # again with the file read from the disk too.
            drop_page_cache()
            t_rimp_cold = run(self.rbd(self.b, 'import', ref_file,
                                       'vms/%s-ref' % name))[0]
            os.unlink(ref_file)
            self.remove('b', name + '-ref')
            imp = self.lsrp('import', *self.devices(ship), '--expect-digest',
                            digest, site=self.b)
            t_imp, rss_imp, c_imp = run(imp)
            self.remove('b', name)
            # The same import again (a stale journal: the image was removed)
            # with the read-back from Ceph.
            t_rb, rss_rb, c_rb = float('nan'), 0, float('nan')
            if 'readback' not in args.skip:
                t_rb, rss_rb, c_rb = run(imp + ['--verify-readback'])
                self.remove('b', name)
            on_devices = self.du(os.path.join(self.work, ship))
            shutil.rmtree(os.path.join(self.work, ship))
            rows.append(dict(
                rexp=t_rexp, sync=t_sync, exp=t_exp, rimp=t_rimp, imp=t_imp,
                rimp_cold=t_rimp_cold,
                rb=t_rb, rss_exp=rss_exp, rss_imp=rss_imp, rss_rb=rss_rb,
                c_rexp=c_rexp, c_exp=c_exp, c_rimp=c_rimp, c_imp=c_imp,
                c_rb=c_rb, dev=on_devices))
            print('fs pair %d: export %.1f s (cpu %.1f) vs rbd export %.1f s '
                  '(cpu %.1f, +sync %.1f s); import %.1f s (cpu %.1f) vs rbd '
                  'import %.1f s (cpu %.1f, from a cold file %.1f s); import '
                  'with read-back %.1f s; load %.1f' % (
                      i + 1, t_exp, c_exp, t_rexp, c_rexp, t_sync, t_imp,
                      c_imp, t_rimp, c_rimp, t_rimp_cold, t_rb,
                      os.getloadavg()[0]))
            sys.stdout.flush()

        def med(fn):
            return statistics.median(fn(r) for r in rows)
        print('fs         %.0f MiB used of a %.1f GiB ext4 image (%s, %d MiB '
              'random); %.0f MiB on 3 devices with parity; median of %d '
              'pairs:' % (
                  used / MiB, args.fs_gib, ' '.join(args.fs_dirs),
                  args.fs_random_mib, med(lambda r: r['dev']) / MiB,
                  len(rows)))

        def rss(key):
            # The measure is the median; the largest is shown too.
            return 'peak RSS %.0f MB (largest %.0f; target <= 300)' % (
                med(lambda r: r[key]), max(r[key] for r in rows))
        print('fs         export %6.1f s vs rbd export %6.1f s: ratio %.2f '
              '(target <= 1.0); vs rbd export + sync: ratio %.2f; %s' % (
                  med(lambda r: r['exp']), med(lambda r: r['rexp']),
                  med(lambda r: r['exp'] / r['rexp']),
                  med(lambda r: r['exp'] / (r['rexp'] + r['sync'])),
                  rss('rss_exp')))
        print('fs         import %6.1f s vs rbd import %6.1f s: ratio %.2f '
              '(target <= 1.0); vs rbd import from a cold file: ratio %.2f; '
              '%s' % (
                  med(lambda r: r['imp']), med(lambda r: r['rimp']),
                  med(lambda r: r['imp'] / r['rimp']),
                  med(lambda r: r['imp'] / r['rimp_cold']),
                  rss('rss_imp')))
        if 'readback' not in args.skip:
            print('fs         import --verify-readback %6.1f s: ratio %.2f to '
                  'rbd import; %s' % (
                      med(lambda r: r['rb']),
                      med(lambda r: r['rb'] / r['rimp']), rss('rss_rb')))
        print('fs         CPU seconds (user+sys): export %.1f vs rbd export '
              '%.1f; import %.1f vs rbd import %.1f; with read-back %.1f' % (
                  med(lambda r: r['c_exp']), med(lambda r: r['c_rexp']),
                  med(lambda r: r['c_imp']), med(lambda r: r['c_rimp']),
                  med(lambda r: r['c_rb'])))
        sys.stdout.flush()

    def remote_export(self, label, size, fill):
        """Export through the terminal the devices hang off (TLS, loopback).

        Against a local export and ``rbd export`` + sync of the same image.
        """
        name = '%s-%s' % (self.tag, label)
        self.make_image(name, size, fill)
        ref_file, t_ref, t_sync = self.reference_export(name)
        os.unlink(ref_file)
        t_local = run(self.lsrp(
            'export', 'vms/%s' % name, '--snapshot', 'base',
            '--shipment-id', name + '-local', *self.devices(name + '-local'),
            site=self.a))[0]
        shutil.rmtree(os.path.join(self.work, name + '-local'))
        # The device terminal: its own state and keys, no cluster.
        term = os.path.join(self.work, 'terminal')
        state = ['--shipment-state_dir', os.path.join(term, 'state'),
                 '--shipment-key_dir', os.path.join(term, 'keys')]
        ship = name + '-remote'
        subprocess.run([os.path.join(BIN, 'lsrp')] + state + [
            'authorize', '--shipment-id', ship, 'vms/' + name]
            + self.devices(ship), check=True, capture_output=True)
        t_name, ca, cert, key = self.sandbox.terminal('site-b')
        port = self.sandbox.port(662)   # the tests' own +600..+999
        server = subprocess.Popen(
            [os.path.join(BIN, 'lsrp-server'), '--name', t_name,
             '--server-port', str(port), '--tls-ca', ca,
             '--tls-cert', cert, '--tls-key', key,
             '--devices-only'] + state,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            server.stdout.readline()   # listening
            s_name, ca, cert, key = self.sandbox.terminal('site-a')
            t_remote, rss, _ = run(self.lsrp(
                'export', '--remote', '127.0.0.1:%d' % port,
                '--server-name', t_name, '--tls-ca', ca, '--tls-cert', cert,
                '--tls-key', key, '--name', s_name, '--shipment-id', ship,
                '--snapshot', 'base', 'vms/' + name, site=self.a))
            with open('/proc/%d/status' % server.pid) as f:
                hwm = [int(line.split()[1]) for line in f
                       if line.startswith('VmHWM')][0] / 1024.0
        finally:
            server.terminate()
            server.wait()
        shutil.rmtree(os.path.join(self.work, ship))
        print('%-10s export through the device terminal %6.1f s vs local '
              'export %6.1f s: ratio %.2f; vs rbd export + sync %6.1f s: '
              'ratio %.2f; peak RSS sender %.0f MB, terminal %.0f MB' % (
                  label, t_remote, t_local, t_remote / t_local,
                  t_ref + t_sync, t_remote / (t_ref + t_sync), rss, hwm))
        sys.stdout.flush()

    def flock(self):
        args = self.args
        size = int(args.flock_gib * GiB)
        template = '%s-template' % self.tag
        self.make_image(template, size, args.template_fill)
        clones = []
        with self.cluster(self.a) as c, c.pool('vms') as pool:
            with pool.open_image(template) as img:
                img.protect_snapshot('base')
            for i in range(args.flock_clones):
                clone = '%s-clone%d' % (self.tag, i)
                pool.clone_image(template, 'base', clone)
                self.made.insert(0, ('a', clone))
                clones.append(clone)
                rng = random.Random(clone)
                with pool.open_image(clone) as img:
                    # 5% distinct writes, in 1 MiB runs like files.
                    for _ in range(int(size * 0.05) // MiB):
                        img.write(rng.randrange(0, size // MiB) * MiB,
                                  os.urandom(MiB))
                    img.create_snapshot('base')
        exports = 0
        for clone in clones:
            path = os.path.join(self.work, 'ref.raw')
            run(self.rbd(self.a, 'export', 'vms/%s@base' % clone, path))
            exports += os.path.getsize(path)
            os.unlink(path)
        run(self.lsrp('export', *['vms/%s' % c for c in clones], '--snapshot',
                      'base', '--shipment-id', self.tag + '-flock',
                      *self.devices('flock'), site=self.a))
        on_devices = self.du(os.path.join(self.work, 'flock'))
        print('flock      %d clones of a %.1f GiB template (%.0f%% data), 5%% '
              'distinct writes each: %.0f MiB on 3 devices vs %.0f MiB of '
              'rbd export: ratio %.3f (target <= 0.20)' % (
                  args.flock_clones, args.flock_gib,
                  args.template_fill * 100, on_devices / MiB, exports / MiB,
                  on_devices / exports))

    def stages(self):
        """CPU seconds per GiB of each stage, on the filesystem image's data.

        The coarse profile behind the ratios: one thread each, CPU time of
        the whole process (librbd's threads included), on the first
        ``--stage-mib`` MiB of allocated data of the filesystem image.
        """
        from lsrp.device import crypto as crypto_mod
        from lsrp.device import erasure
        name = fs_image_name(self.args)
        want = self.args.stage_mib * MiB
        pieces = []
        got = 0
        begin = time.process_time()
        with self.cluster(self.a) as c, c.pool('vms') as pool:
            with pool.open_image(name, snapshot='base') as img:
                for piece, data in img.iter_content():
                    if data is not None:
                        pieces.append(data)
                        got += len(data)
                        if got >= want:
                            break
        cost = {'librbd read (4 MiB pieces)': time.process_time() - begin}
        chunks = [memoryview(p)[i:i + 65536] for p in pieces
                  for i in range(0, len(p), 65536)]
        crypto = crypto_mod.ShipmentCrypto(os.urandom(32), 'bench')

        def timed(label, fn):
            begin = time.process_time()
            out = fn()
            cost[label] = time.process_time() - begin
            return out
        digests = timed('keyed BLAKE3 of each chunk',
                        lambda: [crypto.digest(c) for c in chunks])
        zc = zstandard.ZstdCompressor(level=1)
        timed('zstd level 1 of each chunk ([shipment] compression=zstd)',
              lambda: [zc.compress(c) for c in chunks])
        packed = timed('LZ4 block of each chunk (the default)',
                       lambda: [lz4.block.compress(c, store_size=False)
                                for c in chunks])
        aes = AESGCM(os.urandom(32))
        nonce = os.urandom(12)
        timed('AES-256-GCM of the compressed chunks',
              lambda: [aes.encrypt(nonce, p, None) for p in packed])
        records = timed('seal_chunk (probe, LZ4, AES, record)',
                        lambda: [crypto.seal_chunk(d, c)
                                 for d, c in zip(digests, chunks)])
        stripes = []
        buf, size = [], 0
        for r in records:
            buf.append(r)
            size += len(r)
            if size >= 8 * MiB:
                stripes.append(b''.join(buf))
                buf, size = [], 0
        coder = erasure.StripeCoder(2, 1)
        shards = timed('XOR parity (2+1) of the stripes',
                       lambda: [coder.encode(s) for s in stripes])
        hasher = blake3.blake3()
        timed('BLAKE3 image digest',
              lambda: [hasher.update(p) for p in pieces])

        def write():
            path = os.path.join(self.work, 'stage-%d.dat')
            files = [open(path % i, 'wb', buffering=0) for i in range(3)]
            for stripe in shards:
                for f, shard in zip(files, stripe):
                    f.write(shard)
            for f in files:
                os.fsync(f.fileno())
                f.close()
                os.unlink(f.name)
        timed('writing 3 shard files + fsync', write)
        timed('open_chunk (AES, unLZ4, keyed BLAKE3: import)',
              lambda: [crypto.open_chunk(d, r)
                       for d, r in zip(digests, records)])
        gib = got / GiB
        print('stages     CPU seconds per GiB of filesystem data (%d MiB, '
              'compressed to %.0f %%):' % (
                  got / MiB, 100.0 * sum(map(len, records)) / got))
        for label, seconds in cost.items():
            print('stages       %-50s %5.2f' % (label, seconds / gib))
        sys.stdout.flush()

    def primitives(self):
        data = os.urandom(64 << 20)
        text = (b'the quick brown fox jumps over the lazy dog ' * 2000000)[
            :64 << 20]

        def rate(fn, payload, n=64):
            begin = time.monotonic()
            for off in range(0, len(payload), len(payload) // n):
                fn(payload[off:off + len(payload) // n])
            return len(payload) / (time.monotonic() - begin) / MiB

        key = blake3.blake3(b'k').digest()
        aes = AESGCM(os.urandom(32))
        nonce = os.urandom(12)
        zc = zstandard.ZstdCompressor(level=3)
        rs = ec_iface.ECDriver(k=2, m=2, ec_type='isa_l_rs_cauchy')

        def xor(b):
            half = len(b) // 16 * 8
            return numpy.bitwise_xor(
                numpy.frombuffer(b, numpy.uint64, half // 8),
                numpy.frombuffer(b, numpy.uint64, half // 8, half))
        print('primitives (MiB/s, one thread, 1 MiB calls): '
              'blake3-keyed %.0f, sha256 %.0f, AES-256-GCM %.0f, '
              'zstd-3 random %.0f, zstd-3 text %.0f, zstd-1 text %.0f, '
              'xor 2+1 %.0f, isa-l rs 2+2 %.0f' % (
                  rate(lambda b: blake3.blake3(b, key=key).digest(), data),
                  rate(lambda b: hashlib.sha256(b).digest(), data),
                  rate(lambda b: aes.encrypt(nonce, b, None), data),
                  rate(zc.compress, data), rate(zc.compress, text),
                  rate(zstandard.ZstdCompressor(level=1).compress, text),
                  rate(xor, data), rate(rs.encode, data)))

    def cleanup(self):
        for where, name in self.made:
            site = self.a if where == 'a' else self.b
            subprocess.run(self.rbd(site, 'snap', 'unprotect',
                                    'vms/%s@base' % name),
                           capture_output=True)
            subprocess.run(self.rbd(site, 'snap', 'purge', 'vms/' + name),
                           capture_output=True)
            subprocess.run(self.rbd(site, 'rm', 'vms/' + name),
                           capture_output=True)
        shutil.rmtree(self.work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--pairs', type=int, default=5,
                        help='Pairs (rbd, lsrp) of the filesystem image.')
    parser.add_argument('--fs-gib', type=float, default=2)
    parser.add_argument('--fs-dirs', nargs='+',
                        default=['/usr/bin', '/usr/share'],
                        help='What the filesystem image holds.')
    parser.add_argument('--fs-random-mib', type=int, default=256,
                        help='A file of this many MiB of random bytes in '
                        'the filesystem image too (0: none; the images of '
                        'runs before 2026-12 had none).')
    parser.add_argument('--remove-fs', action='store_true',
                        help='Remove the filesystem image at the end (by '
                        'default it is kept for the next run).')
    parser.add_argument('--size-gib', type=float, default=1)
    parser.add_argument('--fill', type=float, default=0.5,
                        help='Share of the image that is random data.')
    parser.add_argument('--sparse-gib', type=float, default=100)
    parser.add_argument('--rss-only', action='store_true',
                        help='image and sparse: our export and import '
                        'alone, for peak RSS, without the rbd reference.')
    parser.add_argument('--flock-gib', type=float, default=2)
    parser.add_argument('--flock-clones', type=int, default=8)
    parser.add_argument('--template-fill', type=float, default=0.5)
    parser.add_argument('--work-dir', default='/var/tmp')
    parser.add_argument('--skip', action='append', default=[],
                        choices=['fs', 'stages', 'image', 'sparse',
                                 'flock', 'primitives', 'remote',
                                 'readback'])
    parser.add_argument('--stage-mib', type=int, default=512)
    parser.add_argument('--remote-gib', type=float, default=1)
    args = parser.parse_args()
    bench = Bench(args)
    print('load average at start: %.2f %.2f %.2f; %d cores' % (
        os.getloadavg() + (os.cpu_count(),)))
    try:
        if 'fs' not in args.skip:
            bench.fs_pairs()
        if 'stages' not in args.skip:
            bench.stages()
        if 'primitives' not in args.skip:
            bench.primitives()
        if 'image' not in args.skip:
            bench.export_import('image', int(args.size_gib * GiB), args.fill)
        if 'sparse' not in args.skip:
            bench.export_import('sparse', int(args.sparse_gib * GiB), 0.001)
        if 'flock' not in args.skip:
            bench.flock()
        if 'remote' not in args.skip:
            bench.remote_export('remote', int(args.remote_gib * GiB),
                                args.fill)
    finally:
        bench.cleanup()
        print('load average at the end: %.2f %.2f %.2f' % os.getloadavg())


if __name__ == '__main__':
    main()
