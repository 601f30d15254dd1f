"""The directories of a shipment's devices: labels, shard files, manifests.

Each device directory holds::

    fedex-device.json    label: shipment id, device index and id, layout
    shards.dat           one shard of every stripe, at the stripe's offset
    manifest.v<N>        every version of the sealed manifest (see manifest.py)

Shard j of stripe s lives on device (j + s) mod n, so parity rotates over the
devices as in RAID-5 and each device holds an equal share.
"""

import concurrent.futures
import errno
import json
import os
import re
import threading
import uuid

from lsrp.device import erasure
from lsrp import exception
from lsrp import fileutils

FORMAT = 'fedex-device'
# Version 2: parity by XOR (one parity device) or ISA-L Reed-Solomon
# (several), shards padded to 64 bytes; version 1 used zfec.
FORMAT_VERSION = 2
LABEL = 'fedex-device.json'
SHARDS = 'shards.dat'
MANIFEST_RE = re.compile(r'^manifest\.v(\d{6})$')
# O_DIRECT writes need offsets, lengths and memory aligned to the device's
# logical block (512 or 4096 bytes): the page size covers both.
DIRECT_ALIGN = 4096


def manifest_name(version):
    return 'manifest.v%06d' % version


def read_label(path):
    try:
        with open(os.path.join(path, LABEL)) as f:
            label = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise exception.NotADevice(path=path, reason='unreadable label: %s' % e)
    if label.get('format') != FORMAT:
        raise exception.NotADevice(path=path, reason='label of another format')
    if label.get('format_version') != FORMAT_VERSION:
        raise exception.NotADevice(
            path=path, reason='device format version %s, this program reads '
            'only version %d%s' % (
                label.get('format_version'), FORMAT_VERSION,
                ' (version 1 has zfec parity): import it with the lsrp '
                'release that wrote it' if label.get('format_version') == 1
                else ''))
    return label


def _open_direct(path, flags):
    """``path`` opened with O_DIRECT, or None where the filesystem refuses it."""
    try:
        return os.open(path, flags | getattr(os, 'O_DIRECT', 0))
    except OSError as e:
        if e.errno != errno.EINVAL:
            raise
        return None


class DeviceSet(object):
    """The devices of one shipment that are at hand (some may be missing)."""

    def __init__(self, shipment_id, k, m, labels):
        self.shipment_id = shipment_id
        self.k, self.m = k, m
        self.n = k + m
        self.code = (next(iter(labels.values())).get('erasure_code')
                     if labels else None) or erasure.code_for(m)
        # {device index: path} of the devices we have.
        self.paths = {label['device_index']: path
                      for path, label in labels.items()}
        self.labels = {label['device_index']: label
                       for label in labels.values()}
        self._files = {}
        self._direct = {}  # device index -> O_DIRECT fd, or None
        self._direct_read = {}  # the same, for reading
        # Shards are read and written on several threads: a file is opened
        # once (two threads opening it at once would leak one descriptor).
        self._opening = threading.RLock()
        self._io = None    # threads writing the shards of a stripe

    # --- creation and opening --------------------------------------------

    @classmethod
    def create(cls, paths, shipment_id, k, m, key_check):
        """Label empty directories as the devices of a new shipment.

        Directories already labelled for this shipment, at the same index,
        are kept (an export being resumed).
        """
        if len(paths) != k + m:
            raise exception.ShipmentError(
                shipment=shipment_id, reason='%d devices given for %d data + '
                '%d parity shards' % (len(paths), k, m))
        labels = {}
        for index, path in enumerate(paths):
            os.makedirs(path, exist_ok=True)
            label = read_label(path)
            if label is not None:
                if (label['shipment_id'] != shipment_id
                        or label['device_index'] != index):
                    raise exception.MixedShipments(
                        detail='%s is device %d of shipment %s, not device %d '
                        'of %s' % (path, label['device_index'],
                                   label['shipment_id'], index, shipment_id))
            else:
                # A label being written when the exporter was killed (-9):
                # its temporary file is ours, not someone's data.
                partial = os.path.join(path, LABEL + '.tmp')
                if os.path.exists(partial):
                    os.unlink(partial)
                if os.listdir(path):
                    raise exception.NotADevice(
                        path=path, reason='not empty and has no label; '
                        'refusing to write to it')
                label = {'format': FORMAT, 'format_version': FORMAT_VERSION,
                         'shipment_id': shipment_id, 'device_index': index,
                         'device_id': str(uuid.uuid4()), 'devices': k + m,
                         'data_shards': k, 'parity_shards': m,
                         'erasure_code': erasure.code_for(m),
                         'key_check': key_check}
                try:
                    fileutils.write_atomic(os.path.join(path, LABEL),
                                           json.dumps(label, indent=1))
                except OSError as e:
                    raise cls._os_error(shipment_id, path, e)
            labels[path] = label
        return cls(shipment_id, k, m, labels)

    @classmethod
    def open(cls, paths):
        """Open the devices at hand; they must all be of one shipment."""
        labels = {}
        for path in paths:
            if not os.path.isdir(path):
                continue  # a missing device; parity may cover it
            label = read_label(path)
            if label is None:
                raise exception.NotADevice(path=path, reason='no label')
            labels[path] = label
        if not labels:
            raise exception.ShipmentError(
                shipment='?', reason='none of the devices %s is readable'
                % ', '.join(paths))
        shipments = {}
        for path, label in labels.items():
            shipments.setdefault(label['shipment_id'], []).append(path)
        if len(shipments) > 1:
            raise exception.MixedShipments(detail='; '.join(
                '%s: %s' % (sid, ', '.join(p)) for sid, p in
                sorted(shipments.items())))
        seen = {}
        for path, label in labels.items():
            if label['device_index'] in seen:
                raise exception.ShipmentError(
                    shipment=label['shipment_id'], reason='%s and %s are both '
                    'device %d' % (seen[label['device_index']], path,
                                   label['device_index']))
            seen[label['device_index']] = path
        first = next(iter(labels.values()))
        return cls(first['shipment_id'], first['data_shards'],
                   first['parity_shards'], labels)

    @property
    def key_check(self):
        return next(iter(self.labels.values()))['key_check']

    def missing(self):
        return sorted(set(range(self.n)) - set(self.paths))

    def require_readable(self):
        missing = self.missing()
        if len(missing) > self.m:
            raise exception.DevicesMissing(
                shipment=self.shipment_id, missing=', '.join(
                    'device %d' % i for i in missing), parity=self.m,
                total=self.n)

    def describe(self, index):
        return self.paths.get(index, 'device %d (missing)' % index)

    @staticmethod
    def _os_error(shipment_id, path, error):
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            return exception.DeviceFull(shipment=shipment_id, device=path,
                                        reason=error.strerror)
        return exception.ShipmentError(shipment=shipment_id,
                                       reason='device %s: %s' % (path, error))

    # --- shards ---------------------------------------------------------

    def device_of(self, stripe, shard):
        return (shard + stripe) % self.n

    def _file(self, index, mode):
        key = (index, mode)
        if key not in self._files:
            with self._opening:
                return self._open_file(index, mode)
        return self._files[key]

    def _open_file(self, index, mode):
        key = (index, mode)
        if key not in self._files:
            path = os.path.join(self.paths[index], SHARDS)
            if mode == 'w':
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
                self._files[key] = os.fdopen(fd, 'r+b', buffering=0)
            else:
                self._files[key] = open(path, 'rb', buffering=0)
        return self._files[key]

    def _direct_fd(self, index):
        """An O_DIRECT descriptor of a shard file, or None where refused.

        Writing around the page cache saves copying every byte into it
        (tmpfs, for one, refuses O_DIRECT: buffered writes then).
        """
        if index not in self._direct:
            with self._opening:
                if index not in self._direct:
                    path = os.path.join(self.paths[index], SHARDS)
                    self._file(index, 'w')  # creates the file
                    self._direct[index] = _open_direct(path, os.O_WRONLY)
        return self._direct[index]

    def write_stripe(self, stripe, offset, shards, direct=False):
        """Write the shards of a stripe at ``offset`` of each shard file.

        With ``direct``, shards are page-aligned memory: those whose offset
        and length are multiples of DIRECT_ALIGN bypass the page cache.
        The shards are written at once, one thread per device: separate
        disks write in parallel, and even one disk gets a deeper queue
        than one synchronous O_DIRECT write at a time.
        """
        jobs = [(self.device_of(stripe, shard), data, offset, direct)
                for shard, data in enumerate(shards)]
        if len(jobs) < 2:
            for job in jobs:
                self._write_shard(*job)
            return
        if self._io is None:
            self._io = concurrent.futures.ThreadPoolExecutor(
                self.n, thread_name_prefix='shard-io')
        futures = [self._io.submit(self._write_shard, *job) for job in jobs]
        concurrent.futures.wait(futures)
        for future in futures:
            future.result()   # the first device's error, if any

    def _write_shard(self, index, data, at, direct):
        view = memoryview(data)
        try:
            if (direct and at % DIRECT_ALIGN == 0
                    and len(view) % DIRECT_ALIGN == 0):
                view, at = self._write_direct(index, view, at)
            if view:
                fd = self._file(index, 'w').fileno()
                while view:
                    written = os.pwrite(fd, view, at)
                    view, at = view[written:], at + written
        except OSError as e:
            raise self._os_error(self.shipment_id, self.paths[index], e)

    def _write_direct(self, index, view, at):
        """Write what O_DIRECT takes; returns what is left, and where."""
        while view:
            fd = self._direct_fd(index)
            if fd is None:
                break
            try:
                written = os.pwrite(fd, view, at)
            except OSError as e:
                if e.errno != errno.EINVAL:
                    raise
                # The filesystem took the flag but not this I/O.
                os.close(fd)
                self._direct[index] = None
                break
            view, at = view[written:], at + written
            if written % DIRECT_ALIGN:
                break  # a short write left the rest unaligned
        return view, at

    def sync(self):
        for (index, mode), f in self._files.items():
            if mode == 'w':
                try:
                    os.fsync(f.fileno())
                except OSError as e:
                    raise self._os_error(self.shipment_id, self.paths[index], e)

    def truncate(self, length):
        """Drop shard bytes past ``length`` (work not yet journaled)."""
        for index in self.paths:
            path = os.path.join(self.paths[index], SHARDS)
            if os.path.exists(path) and os.path.getsize(path) > length:
                os.truncate(path, length)

    def shard_file_size(self, index):
        """Bytes in the shard file of device ``index``; None if it has none."""
        try:
            return os.path.getsize(os.path.join(self.paths[index], SHARDS))
        except (KeyError, OSError):
            return None

    def read_shard(self, stripe, shard, offset, start, length):
        """Bytes of one shard, or None when its device is missing or short."""
        index = self.device_of(stripe, shard)
        if index not in self.paths:
            return None
        try:
            # Positional: readers on several threads share the file.
            data = os.pread(self._file(index, 'r').fileno(), length,
                            offset + start)
        except OSError:
            return None
        return data if len(data) == length else None

    def _direct_read_fd(self, index):
        """An O_DIRECT descriptor to read a shard file, or None."""
        if index not in self._direct_read:
            with self._opening:
                if index not in self._direct_read:
                    path = os.path.join(self.paths[index], SHARDS)
                    self._direct_read[index] = _open_direct(path,
                                                            os.O_RDONLY)
        return self._direct_read[index]

    def read_shard_into(self, stripe, shard, offset, buf, direct=False):
        """Read one shard into ``buf``; False if its device is missing/short.

        Reads straight into the caller's buffer: no copy. With ``direct``
        (``buf`` page-aligned), an aligned read bypasses the page cache: an
        export wrote the shards with O_DIRECT, so they are not cached, and
        a buffered read would copy every byte through it.
        """
        index = self.device_of(stripe, shard)
        if index not in self.paths:
            return False
        view = memoryview(buf)
        try:
            while view:
                fd = None
                if (direct and offset % DIRECT_ALIGN == 0
                        and len(view) % DIRECT_ALIGN == 0):
                    fd = self._direct_read_fd(index)
                try:
                    if fd is not None:
                        got = os.preadv(fd, [view], offset)
                    else:
                        got = os.preadv(self._file(index, 'r').fileno(),
                                        [view], offset)
                except OSError as e:
                    if fd is None or e.errno != errno.EINVAL:
                        raise
                    # The filesystem took the flag but not this read.
                    os.close(fd)
                    self._direct_read[index] = None
                    continue
                if got <= 0:
                    return False
                view, offset = view[got:], offset + got
        except OSError:
            return False
        return True

    def close(self):
        if self._io is not None:
            self._io.shutdown()
            self._io = None
        for f in self._files.values():
            f.close()
        for fd in list(self._direct.values()) + list(
                self._direct_read.values()):
            if fd is not None:
                os.close(fd)
        self._files, self._direct, self._direct_read = {}, {}, {}

    # --- manifests ------------------------------------------------------------

    def write_manifest(self, version, blob):
        for index, path in sorted(self.paths.items()):
            try:
                fileutils.write_atomic(
                    os.path.join(path, manifest_name(version)), blob)
            except OSError as e:
                raise self._os_error(self.shipment_id, path, e)

    def manifest_blobs(self):
        """{device index: (version, blob)} of the newest manifest on each."""
        found = {}
        for index, path in self.paths.items():
            versions = [int(m.group(1)) for m in
                        map(MANIFEST_RE.match, os.listdir(path)) if m]
            if versions:
                version = max(versions)
                with open(os.path.join(path, manifest_name(version)),
                          'rb') as f:
                    found[index] = (version, f.read())
        return found
