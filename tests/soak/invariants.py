"""The soak's invariants, checked by means the product did not write.

After every migration: ``rbd export | sha256sum`` of every disk (the real
rbd CLI), the guest's counter read from its disk (tests.soak.ring, its own
process), Nova's and Cinder's records through the real ``openstack``
client, ``rbd ls``/``snap ls``/``lock ls`` of cluster B, and the terminal
agents' own logs. Each check returns a list of (invariant, detail) of what
it found wrong; empty when all is well.
"""

import datetime
import json
import os
import re
import subprocess
import sys
import time
from xml.etree import ElementTree as etree

from lsrp.server import records

COMPLETED = 'COMPLETED'
ABORTED = 'ABORTED'
# What an agent logs when it (re)starts an operation (fedex_manager/agent).
STARTED_RE = re.compile(r'^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) .* '
                        r'(\S+): started (\S+) (\S+) \(attempt (\d+)\)')
FAILED_RE = re.compile(r'^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+) .* '
                       r'(\S+): (\S+) (\S+) failed: ')


def ring(site, pool, image, snap=None, advance=0, timeout=60):
    """The guest's ring at ``site`` (tests.soak.ring in its own process)."""
    argv = [sys.executable, '-m', 'tests.soak.ring', '--conf', site.conf,
            '--pool', pool, '--image', image]
    if snap:
        argv += ['--snap', snap]
    if advance:
        argv += ['--advance', str(advance), '--timeout', str(timeout)]
    proc = subprocess.run(argv, capture_output=True, text=True,
                          timeout=timeout + 120,
                          cwd=os.path.dirname(os.path.dirname(
                              os.path.dirname(os.path.abspath(__file__)))))
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {'error': 'ring reader: exit %d %s' % (proc.returncode,
                                                      proc.stderr[-500:])}


def rbd(site, *args):
    proc = subprocess.run(['rbd', '-c', site.conf, '--keyring',
                           site.keyring] + list(args),
                          capture_output=True, text=True, timeout=300)
    return proc


def images_of(site, pool, ids):
    """Images of ``pool`` at ``site`` whose names contain one of ``ids``."""
    proc = rbd(site, 'ls', '--format', 'json', pool)
    if proc.returncode:
        return ['(rbd ls %s failed: %s)' % (pool, proc.stderr.strip())]
    return [n for n in json.loads(proc.stdout or '[]')
            if any(i and i in n for i in ids)]


def check_disks_equal(sb, m):
    """A's last state of every disk == B's first (the resume's record)."""
    out = []
    final = 'fedex-final-%s' % m['id'][:8]
    a, b = sb.site('site-a'), sb.site('site-b')
    for v in m['volumes']:
        try:
            ha = a.export_sha256(v['source_image'])
            hb = b.export_sha256(records.record_spec(v['dest_image'], final))
        except subprocess.CalledProcessError as e:
            out.append(('disk-exact', '%s: rbd export failed: %s' % (
                v['source_image'], (e.stderr or '')[-300:])))
            continue
        if ha != hb:
            out.append(('disk-exact', '%s: A %s != B@%s %s' % (
                v['source_image'], ha[:16], final, hb[:16])))
    return out


def check_counter_completed(sb, track, m):
    """The guest went on at B from where A stopped, no tick lost."""
    out = []
    image = '%s_disk' % track.server_id
    at_a = ring(sb.site('site-a'), 'vms', image)
    at_b = ring(sb.site('site-b'), 'vms', image, advance=20, timeout=120)
    for where, r in (('A', at_a), ('B', at_b)):
        if r.get('error'):
            out.append(('guest-counter', '%s: %s' % (where, r['error'])))
    if out:
        return out
    if not at_a['contiguous']:
        out.append(('guest-counter', 'A\'s last ring has a hole: %s' %
                    at_a['counters'][:5]))
    if not at_b.get('advanced'):
        out.append(('guest-alive', 'not counting at B (last %s)'
                    % at_b['last']))
    elif not at_b['contiguous']:
        out.append(('guest-counter', 'B\'s ring has a hole'))
    if at_a['last'] is not None and at_b['last'] is not None and \
            at_b['last'] <= at_a['last']:
        out.append(('guest-counter', 'B at %s, not past A\'s last %s (the '
                    'guest restarted?)' % (at_b['last'], at_a['last'])))
    if track.counter_at_start is not None and at_a['last'] is not None \
            and at_a['last'] < track.counter_at_start:
        out.append(('guest-counter', 'A\'s last %s below the count at the '
                    'start %s' % (at_a['last'], track.counter_at_start)))
    return out


def check_counter_at_a(sb, track):
    """After an abort or rollback: alive at A, counting on from before."""
    r = ring(sb.site('site-a'), 'vms', '%s_disk' % track.server_id,
             advance=20, timeout=120)
    if r.get('error'):
        return [('guest-alive', 'A: %s' % r['error'])]
    out = []
    if not r.get('advanced'):
        out.append(('guest-alive', 'not counting at A (last %s)'
                    % r['last']))
    elif not r['contiguous']:
        out.append(('guest-counter', 'A\'s ring has a hole'))
    if track.counter_at_start is not None and r['last'] is not None and \
            r['last'] < track.counter_at_start:
        out.append(('guest-counter', 'A at %s below the count at the start '
                    '%s (the guest restarted)' % (r['last'],
                                                  track.counter_at_start)))
    return out


def check_records_at_b(env, track):
    """Nova: ACTIVE on a site-B host reading cluster B; Cinder: site B's."""
    out = []
    shown = env.openstack('server', 'show', track.server_id)
    host = shown.get('OS-EXT-SRV-ATTR:host') or ''
    if (shown['status'], shown.get('OS-EXT-AZ:availability_zone')) != (
            'ACTIVE', 'site-b') or not host.startswith('site-b'):
        out.append(('nova-record', 'server %s on %s zone %s' % (
            shown['status'], host, shown.get('OS-EXT-AZ:availability_zone'))))
    else:
        out += check_domain_reads_b(env, track, host)
    if track.volume_id and not track.volume_detached:
        vol = env.openstack('volume', 'show', track.volume_id)
        if not (vol.get('os-vol-host-attr:host') or '').startswith(
                'cinder@site-b') or vol.get('availability_zone') != 'site-b':
            out.append(('cinder-record', 'volume %s on %s zone %s' % (
                vol['status'], vol.get('os-vol-host-attr:host'),
                vol.get('availability_zone'))))
    return out


def check_domain_reads_b(env, track, host_name):
    """``virsh dumpxml`` at B: every rbd disk on cluster B's monitors."""
    host = [h for h in env.cloud.hosts if h.name == host_name][0]
    xml = host.virsh('dumpxml', track.server_id, check=False)
    if not xml.strip():
        return [('nova-record', 'no domain %s on %s' % (
            track.server_id, host_name))]
    b_conf = open(env.sandbox.site('site-b').conf).read()
    secret = env.cloud.load_state()['secrets']['site-b']
    out = []
    for d in etree.fromstring(xml.encode()).findall('./devices/disk'):
        source = d.find('source')
        if source is None or source.get('protocol') != 'rbd':
            continue
        mons = ['%s:%s' % (h.get('name'), h.get('port'))
                for h in source.findall('host')]
        auth = d.find('auth/secret')
        if not all(x in b_conf for x in mons) or auth is None or \
                auth.get('uuid') != secret:
            out.append(('nova-record', '%s on %s reads %s (not cluster B)'
                        % (source.get('name'), host_name, mons)))
    return out


def stop_took_effect(env, track):
    """Whether Nova carried out the user's last stop of the server.

    Nova accepts a stop (202) and may then fail it: once, libvirtd had
    just been killed (HypervisorUnavailable), the guest ran on and the
    server stayed ACTIVE, as Nova leaves it. Its instance action says so.
    """
    stops = sorted((e for e in env.openstack(
        'server', 'event', 'list', '--long', track.server_id) or ()
        if e.get('Action') == 'stop'), key=lambda e: e.get('Start Time'))
    return bool(stops) and stops[-1].get('Message') != 'Error'


def check_records_at_a(env, track):
    """After an abort: the server where it was, its volume A's."""
    out = []
    if track.server_gone:
        return out
    shown = env.openstack('server', 'show', track.server_id)
    host = shown.get('OS-EXT-SRV-ATTR:host') or ''
    want = 'SHUTOFF' if track.server_stopped and \
        stop_took_effect(env, track) else 'ACTIVE'
    if shown['status'] != want or not host.startswith('site-a'):
        # Nova's fault says why it is in ERROR: the report is often all
        # that is left of a CI run.
        fault = (shown.get('fault') or {}).get('message') or '-'
        out.append(('nova-record', 'server %s on %s after the abort (%s at '
                    'site A expected; power state %s, Nova\'s fault: %s)' % (
                        shown['status'], host, want,
                        shown.get('OS-EXT-STS:power_state'), fault)))
    if track.volume_id:
        vol = env.openstack('volume', 'show', track.volume_id)
        if not (vol.get('os-vol-host-attr:host') or '').startswith(
                'cinder@site-a'):
            out.append(('cinder-record', 'volume on %s after the abort'
                        % vol.get('os-vol-host-attr:host')))
    return out


def check_nothing_at_b(sb, track, timeout=120):
    """No image, snapshot, record (clone) or lock of it left at B."""
    b = sb.site('site-b')
    ids = [track.server_id, track.volume_id]
    deadline = time.monotonic() + timeout
    while True:
        left = []
        for pool in ('vms', 'volumes'):
            for name in images_of(b, pool, ids):
                spec = '%s/%s' % (pool, name)
                snaps = rbd(b, 'snap', 'ls', '--format', 'json', spec)
                locks = rbd(b, 'lock', 'ls', '--format', 'json', spec)
                left.append('%s (snapshots %s, locks %s)' % (
                    spec, [s['name'] for s in json.loads(
                        snaps.stdout or '[]')] if not snaps.returncode
                    else '?', locks.stdout.strip() or '-'))
        if not left or time.monotonic() > deadline:
            break
        time.sleep(5)
    return [('nothing-at-b', 'left at B: %s' % '; '.join(left))] if left \
        else []


def _log_matches(log_path, pattern):
    """[(time, match)] of an agent log's lines that ``pattern`` matches."""
    out = []
    try:
        with open(log_path, errors='replace') as f:
            for line in f:
                mt = pattern.match(line)
                if mt:
                    out.append((datetime.datetime.strptime(
                        mt.group(1), '%Y-%m-%d %H:%M:%S.%f').timestamp(), mt))
    except FileNotFoundError:
        pass
    return out


def agent_starts(log_path):
    """[(time, terminal, kind, op_id, attempt)] an agent's log records."""
    return [(when, mt.group(2), mt.group(3), mt.group(4), int(mt.group(5)))
            for when, mt in _log_matches(log_path, STARTED_RE)]


def agent_failures(log_path):
    """[(time, terminal, op_id)]: the operations an agent's log says failed.

    The conductor runs a failed operation again under the same id (the
    next attempt): that is a retry, not a second execution.
    """
    return [(when, mt.group(2), mt.group(4))
            for when, mt in _log_matches(log_path, FAILED_RE)]


def check_ops_once(starts, kills, op_ids, failures=()):
    """Each operation ran once per terminal life: no second execution.

    ``starts``: agent_starts() of both terminals; ``kills``: {terminal:
    [wall times it was killed]}; ``op_ids``: the migration's operations.
    A terminal starts an operation again only after it died running it
    (its record says INTERRUPTED) or after the operation failed there
    (``failures``: agent_failures(), the conductor's retry): two starts of
    one id with neither between them is an operation executed twice.
    """
    out = []
    per = {}
    for when, term, kind, op_id, attempt in starts:
        if op_id in op_ids:
            per.setdefault((term, op_id), []).append((when, kind, attempt))
    for (term, op_id), runs in per.items():
        runs.sort()
        for (t0, kind, _), (t1, _, attempt) in zip(runs, runs[1:]):
            if not any(t0 <= k <= t1 for k in kills.get(term, ())) and \
                    not any(t0 <= w <= t1 and (ft, fid) == (term, op_id)
                            for w, ft, fid in failures):
                out.append(('op-once', '%s %s started again at attempt %d '
                            'by %s with no crash of it in between' % (
                                kind, op_id, attempt, term)))
    return out
