#!/usr/bin/env python3
"""A terminal agent whose data plane is simulated (the scale benchmark).

    python tests/benchmarks/simulated_agent.py --config-file agent.conf

The real ``lsrp-agent`` (:mod:`fedex_manager.agent.agent`: its RPC
endpoint, its operation records, its heartbeats with the devices in its
slots, its progress and finished casts, its oslo.service launcher), with
each operation of :data:`fedex_manager.agent.ops.OPERATIONS` replaced by
one that takes a realistic time (scaled) and returns what the real one
returns. No Ceph, no lsrp-server: ``[agent] serve_lsrp = false``.

What stays real: the device directories (an export writes a label into
each, the seal reads them back, the custody check compares them with the
seal record, an erase empties them; the simulated courier moves them from
site to site) and the shipment keys (an erase destroys the key in the key
store).

Times (``[simulated_agent]``): an operation on the images of a migration
takes what it would on disks of ``image_gib`` at ``disk_mb_s`` (export,
import) and twice that (the read-back of the custody check), a catch-up
round ``round_seconds``, each multiplied by ``time_scale`` and by a
random factor in [0.8, 1.2]. Progress is reported as the engine does (at
most once a second per operation).
"""

import hashlib
import json
import os
import random
import sys
import threading
import time
import uuid

from oslo_config import cfg

from fedex_manager.agent import agent as agent_mod
from fedex_manager.agent import ops as ops_mod

CONF = cfg.CONF
LABEL = 'fedex-device.json'
GiB = 1 << 30

sim_opts = [
    cfg.FloatOpt('time_scale', default=0.05,
                 help='Real seconds per simulated second.'),
    cfg.FloatOpt('image_gib', default=20.0,
                 help='Size of each image the operations pretend to move.'),
    cfg.FloatOpt('disk_mb_s', default=200.0,
                 help='Export and import rate, MB/s (read-back: twice).'),
    cfg.FloatOpt('round_seconds', default=10.0,
                 help='Simulated seconds of a catch-up round.'),
    cfg.IntOpt('max_parallel', default=0,
               help='Operations a terminal runs at once (the others '
                    'queue, as on a real terminal\'s disks); 0: no limit.'),
]

_slots = None


def _busy():
    global _slots
    if _slots is None:
        n = CONF.simulated_agent.max_parallel
        _slots = threading.BoundedSemaphore(n) if n else None
    return _slots


def _work(progress, seconds, total_bytes=0):
    """Sleep ``seconds`` (scaled, jittered), reporting progress."""
    seconds *= CONF.simulated_agent.time_scale * random.uniform(0.8, 1.2)
    slots = _busy()
    if slots is not None:
        slots.acquire()
    try:
        end = time.monotonic() + seconds
        done = 0
        if total_bytes:
            progress.add(0, total_bytes)
        while True:
            progress.check()
            left = end - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(left, 0.5))
            if total_bytes:
                now = int(total_bytes * min(1.0, 1 - max(
                    0.0, end - time.monotonic()) / seconds))
                progress.add(now - done)
                done = now
    finally:
        if slots is not None:
            slots.release()


def _size():
    return int(CONF.simulated_agent.image_gib * GiB)


def _disk_seconds(n_images, factor=1.0):
    return n_images * _size() / (CONF.simulated_agent.disk_mb_s * 1e6) \
        / factor


def _read_label(path):
    try:
        with open(os.path.join(path, LABEL)) as f:
            return json.load(f).get('device_id')
    except (OSError, ValueError):
        return None


def _labels(devices):
    return {ops_mod.device_serial(p): _read_label(p) for p in devices}


def snapshot(terminal, params, progress):
    _work(progress, 2)
    sizes = {spec: _size() for spec in params['images']}
    return {'snapshot': params['snapshot'], 'created': list(params['images']),
            'bytes_total': sum(sizes.values()), 'sizes': sizes}


def export(terminal, params, progress):
    _work(progress, _disk_seconds(len(params['images'])),
          _size() * len(params['images']))
    for i, path in enumerate(params['devices']):
        os.makedirs(path, exist_ok=True)
        if _read_label(path) is None:
            with open(os.path.join(path, LABEL), 'w') as f:
                json.dump({'device_id': str(uuid.uuid4()),
                           'shipment': params['shipment_id'],
                           'index': i}, f)
    return {'shipment_id': params['shipment_id'],
            'labels': _labels(params['devices'])}


def consolidate(terminal, params, progress):
    _work(progress, _disk_seconds(len(params['images']), 10))
    return {'version': 2}


def seal(terminal, params, progress):
    _work(progress, 5)
    digest = hashlib.sha256(params['shipment_id'].encode()).hexdigest()
    found = _labels(params['devices'])
    return {'manifest_digest': digest, 'labels': found,
            'seal_digest': ops_mod.seal_digest(digest, found)}


def verify(terminal, params, progress):
    present = [d for d in params['devices'] if os.path.isdir(d)]
    found = _labels(present)
    sealed = params['labels']
    wrong = sorted(s for s, dev in found.items()
                   if s not in sealed or sealed[s] != dev)
    if wrong:
        raise ops_mod.exception.CustodyMismatch(
            shipment=params['shipment_id'], reason='devices %s do not match '
            'the seal record' % ', '.join(wrong))
    _work(progress, _disk_seconds(1, 2), _size())
    return {'chunks': 1000, 'repaired_chunks': 0,
            'missing_serials': sorted(set(sealed) - set(found))}


def import_(terminal, params, progress):
    _work(progress, _disk_seconds(1), _size())
    return {'images': {}}


def _round(params, progress, number, seconds):
    _work(progress, seconds)
    # A guest writing steadily: each round ships what the previous one
    # took to ship, an eighth as much each time.
    changed = int(512 * (1 << 20) / (8 ** (number - 1)))
    return {'round': number, 'snapshot': '%s-r%d' % (
        params['shipment_id'], number), 'changed_bytes': changed,
        'wire_bytes': changed // 2, 'seconds': round(seconds, 3),
        'wire_rate': 50e6, 'estimate': changed // 8}


def catchup_round(terminal, params, progress):
    return _round(params, progress, params['number'],
                  CONF.simulated_agent.round_seconds)


def final_delta(terminal, params, progress):
    return _round(params, progress, params['number'], 3)


def erase(terminal, params, progress):
    _work(progress, 2)
    return ops_mod.erase(terminal, params, progress)


def remove_snapshots(terminal, params, progress):
    _work(progress, 1)
    return {'removed': ['%s@%s' % (spec, p) for spec in params['images']
                        for p in ops_mod._prefixes(params)]}


def remove_images(terminal, params, progress):
    _work(progress, 1)
    return {'removed': list(params['images'])}


def authorize(terminal, params, progress):
    return {'authorized': sorted(params['images'])}


def seed_over_wan(terminal, params, progress):
    _work(progress, _disk_seconds(len(params['images']), 0.5))
    return {'images': {}, 'wire_bytes': 0}


SIMULATED = {
    'authorize': authorize, 'seed_over_wan': seed_over_wan,
    'snapshot': snapshot, 'export': export, 'consolidate': consolidate,
    'seal': seal, 'verify': verify, 'import': import_,
    'catchup_round': catchup_round, 'final_delta': final_delta,
    'erase': erase, 'remove_snapshots': remove_snapshots,
    'remove_images': remove_images,
}


def main(argv=None):
    # The same operations, by name: the manager sees no difference.
    assert set(SIMULATED) == set(ops_mod.OPERATIONS), \
        set(SIMULATED) ^ set(ops_mod.OPERATIONS)
    ops_mod.OPERATIONS.update(SIMULATED)
    CONF.register_opts(sim_opts, group='simulated_agent')
    return agent_mod.main(argv)


if __name__ == '__main__':
    sys.exit(main())
