#!/usr/bin/env python3
"""A wave of servers against one server's migration, in the same run.

Run by hand against a running mini-cloud (``fedex-sandbox up --openstack``),
under the mini-cloud's lock:

    FEDEX_SANDBOX_DIR=/var/tmp/fedex-dev FEDEX_SANDBOX_BASE_PORT=20000 \\
        flock /tmp/minicloud.lock .venv/bin/python -u \\
        tests/benchmarks/wave_bench.py [--servers 8] \\
        [--max-parallel-cutovers 2] [--rate-cap B/S] \\
        [--export-rate RATE] [--import-rate RATE] \\
        [--dirty-rate RATE] [--write-rate RATE]

It runs as tests/openstack/test_wave.py does (its own fedex-api, a
conductor with ``compute_driver = nova``, the two terminals; tiny guests,
m1.mini, booted from the Glance image ``guest-wave``: 48 MiB of data, so
the root disks are clones holding it): first ONE server alone
(``openstack server migrate --live-migration --fedex --host site-b-h1
--cutover automatic --wait``), then ``--servers`` servers as one wave
(``openstack fedex wave create ... --cutover automatic --wait``; the first
server with one attached volume, the second with two). It prints one JSON
line per migration and a summary:

* wall time: the wave's command to its last COMPLETED, against the one
  server's (goal: at most 2x);
* device bytes: the wave's shipment against the one server's (goal: at
  most 1.15x; the clones' common chunks stored once);
* cutovers: each one's start and end (the migrations' state events),
  the pairs that overlapped, the most at once (at most
  ``--max-parallel-cutovers``);
* every disk bit-exact (``rbd export | sha256sum``, A's final image
  against B's state at the resume) and every guest counting at B.

The plan against the run: before the wave starts it asks this fedex-api
for the forecast of exactly the wave's request (POST /v1/plans with the
request as ``migration``: the same servers and images, sites, host and
options) and prints it (``{"event": "forecast", ...}``). The forecast
reads its figures from fedex-api's configuration, which this script gives
the run's own: the conductor's courier and its timetable, the sweeper's
and the rounds' intervals, ``[nova]`` (the flavors' memory) and, when the
sandbox's WAN is up, ``[planner] wan_link`` with the link's rate and
round trip. The guests' dirty and write rates are the ones measured on the
one server's migration (nova_fedex's check before its pause; its first
catch-up round) unless given. What remains the planner's own figures
(export and import rates unless given, Nova's steps, the fixed part of
the pause) is listed as assumed. After the wave, a table "forecast vs
measured" (JSON lines ``{"event": "plan_vs_run", ...}`` and a text table):
total time, each phase (the members' state events, the wave as its
slowest member), bytes over the WAN (the relay's counters per path; the
catch-up rounds and final deltas from the migrations' events), devices
and shipments, each server's pause (nova_fedex's report), with
measured/forecast and whether it is within 20 %
(tests/benchmarks/plan_vs_run.py).
"""

import argparse
import datetime
import faulthandler
import itertools
import json
import os
import signal
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))

from keystoneauth1.identity import v3  # noqa: E402
from keystoneauth1 import session as ks_session  # noqa: E402

from fedex_manager.actions import forecast as forecast_model  # noqa: E402
from fedex_manager.db import api as db  # noqa: E402
from fedex_manager import states  # noqa: E402
from fedex_manager import waves  # noqa: E402
from fedex_sandbox import relay  # noqa: E402
from fedex_sandbox.services import confs  # noqa: E402
from fedex_sandbox import wan  # noqa: E402
from fedexclient import client as fedex_client  # noqa: E402
from fedexclient import exceptions as fedex_exc  # noqa: E402
from lsrp.server import records  # noqa: E402
from nova_fedex.osc.v1 import common as osc_common  # noqa: E402
from tests.benchmarks import plan_vs_run  # noqa: E402
from tests.openstack import test_cutover_nova as nova_t  # noqa: E402
from tests.openstack import test_wave  # noqa: E402

ARGS = None
EPOCH = datetime.datetime(1970, 1, 1)
# The WAN's paths the wave's data crosses (not libvirt's control
# connections: no figure of the forecast).
DATA_PATHS = ('catch-up', 'final-delta', 'memory')
# The forecast's notes are kept as fedex-api wrote them; these say which
# of the planner's own figures the run does not measure.
PLANNER_FIGURES = ('cutover_setup', 'pause_fixed', 'memory_downtime')


def epoch(value):
    """Seconds since 1970 of a time as the manager stores it (UTC)."""
    return (db.utcfromiso(value) - EPOCH).total_seconds()


def wan_shape(sandbox):
    """(rate in Mbit/s, one-way delay in ms) of the sandbox's WAN, or None.

    None: the WAN is not up, the sites talk over loopback.
    """
    link = wan.SandboxWan(sandbox)
    if not link.enabled():
        return None
    shape = link.link.shape() if link.link.exists() else None
    if shape is None:
        saved = link.settings() or {}
        if not saved.get('rate_mbit'):
            return None
        shape = (saved['rate_mbit'], saved.get('delay_ms') or 0.0)
    return shape


def wan_counters(sandbox):
    """Bytes per path the WAN's relay counted so far, or None."""
    link = wan.SandboxWan(sandbox)
    stats = link.stats() if link.enabled() else None
    return wan.by_path(stats) if stats else None


def rate_arg(text):
    """A rate as POST /v1/plans takes it: bytes/s, or with a unit."""
    return int(text) if text.isdigit() else text


class WaveBench(test_wave.TestWave):

    CONDUCTOR_OPTIONS = {}

    def start_terminals(self, devices=3):
        # A shipment of its own for the one server, one for the wave.
        super().start_terminals(devices * 2)

    def _api_sections(self):
        # The forecast (POST /v1/plans) is fedex-api's own: it reads the
        # courier and its timetable, the sweeper's and the rounds'
        # intervals, Nova (the flavors' memory) and the link from
        # fedex-api's configuration. The conductor's figures, its [nova]
        # (the mini-cloud's fedex-api has it too), and the link as it runs.
        sections = super()._api_sections()
        manager = self.dep.manager_conf()
        sections['conductor'] = {k: manager['conductor'][k] for k in (
            'courier', 'sweep_interval', 'op_poll_interval')}
        sections['simulated_courier'] = {
            'timetable': manager['simulated_courier']['timetable']}
        if manager.get('nova'):
            sections['nova'] = dict(manager['nova'])
        sections['planner'] = self.planner_options()
        return sections

    def planner_options(self):
        """fedex-api's [planner]: the link's real figures, rates given.

        The link's round trip is twice the relay's one-way delay. (With
        ``wan_link`` set, the cutover's convergence verdict also caps
        QEMU's copy at the link's rate, as in a deployment that states its
        link.)
        """
        # The computes' live migrations at a time (Nova's queue).
        out = {'live_migrations_per_host': confs.LIVE_MIGRATIONS_PER_HOST}
        self.link_shape = wan_shape(self.sandbox)
        if self.link_shape:
            rate, delay = self.link_shape
            out['wan_link'] = 'site-a site-b %gMbit/s %gms' % (rate,
                                                               2 * delay)
        for key in ('export_rate', 'import_rate'):
            if getattr(ARGS, key):
                out[key] = getattr(ARGS, key)
        return out

    def fedex(self):
        """fedexclient as the cloud's admin, on this test's fedex-api."""
        admin = self.cloud.credentials()['fedex-admin']
        auth = v3.Password(**{k: admin[k] for k in (
            'auth_url', 'username', 'password', 'project_name',
            'user_domain_name', 'project_domain_name')})
        return fedex_client.Client(session=ks_session.Session(auth=auth),
                                   endpoint=self.api.url)

    def wave_options(self):
        options = {'cutover': 'automatic',
                   'max_parallel_cutovers': ARGS.max_parallel_cutovers}
        if ARGS.rate_cap is not None:
            options['rate_cap'] = ARGS.rate_cap
        return options

    def wave_request(self, members, volumes):
        """The body ``openstack fedex wave create`` sends for the wave.

        As nova_fedex.osc.v1.common.migration_request makes it: each
        server's root disk and attached volumes, the source site of the
        servers' zone, the destination host's site.
        """
        servers = [{'server_id': sid, 'volumes': [
            {'source_image': osc_common.NOVA_DISK % sid, 'kind': 'disk'}] + [
            {'source_image': osc_common.CINDER_VOLUME % vid,
             'volume_id': vid, 'kind': 'volume'}
            for vid in volumes.get(sid, ())]} for sid in members]
        return {'servers': servers, 'source_site': 'site-a',
                'dest_site': 'site-b', 'dest_host': nova_t.SITE_B_HOST,
                'options': self.wave_options()}

    def rates_measured(self, m):
        """(dirty rate, write rate per disk) of the one server's guest.

        The dirty rate nova_fedex measured before its pause (at least its
        sampling's resolution, as the manager's verdict counts it); the
        write rate from its first catch-up round: the bytes the guest
        wrote since the export's snapshot. None: not reported.
        """
        events = db.events(self.ctx, {'migration_id': m['id']})
        dirty = None
        for e in events:
            d = e.get('details') or {}
            if d.get('event') == 'dirty_rate' and d.get('measured'):
                f = d['measured']
                dirty = max(f.get('dirty_rate') or 0.0,
                            f.get('resolution') or 0.0)
        snapshot_at = next((epoch(e['created_at']) for e in events
                            if e['kind'] == 'state' and
                            e['to_state'] == states.EXPORTING), None)
        first = next((e for e in events if e['kind'] == 'progress' and
                      (e.get('details') or {}).get('round') == 1), None)
        write = None
        if first is not None:
            d = first['details']
            write = plan_vs_run.first_round_write_rate(
                snapshot_at, epoch(first['created_at']), d.get('seconds'),
                d.get('changed_bytes'))
        return dirty, write

    def forecast_inputs(self, m1, members, volumes):
        """The guests' rates for the forecast: {field: (value, source)}."""
        dirty, write = self.rates_measured(m1)
        disks = sum(1 + len(volumes.get(sid, ())) for sid in members)
        out = {}
        if ARGS.dirty_rate is not None:
            out['dirty_rate'] = (ARGS.dirty_rate, 'given (--dirty-rate)')
        elif dirty is not None:
            out['dirty_rate'] = (int(round(dirty)), 'measured: nova_fedex\'s '
                                 'check of the one server before its pause')
        else:
            out['dirty_rate'] = (None, 'assumed: the one server\'s migration '
                                 'reported no dirty rate')
        if ARGS.write_rate is not None:
            out['write_rate'] = (ARGS.write_rate, 'given (--write-rate)')
        elif write is not None:
            # One rate for all the request's servers: the guest writes its
            # ring on each of its disks.
            out['write_rate'] = (int(round(write * disks / float(
                len(members)))), 'measured: the one server\'s first catch-up '
                'round, %d B/s per disk, times %d disks over %d servers (the '
                'forecast takes one rate for all)' % (write, disks,
                                                      len(members)))
        else:
            out['write_rate'] = (None, 'assumed: the one server\'s '
                                 'migration has no first round to measure')
        return out

    def assumed(self, plan, inputs):
        """What the forecast rests on that this run does not measure."""
        defaults = {o.dest: o.default for o in forecast_model.planner_opts}
        out = []
        if self.link_shape is None:
            out.append('the link: the sandbox\'s WAN is not up (the sites '
                       'talk over loopback): no [planner] wan_link')
        for key in ('export_rate', 'import_rate'):
            if not getattr(ARGS, key):
                out.append('[planner] %s %s: the planner\'s default, not '
                           'measured (give --%s)' % (
                               key, defaults[key], key.replace('_', '-')))
        for key in PLANNER_FIGURES:
            out.append('[planner] %s %s: the planner\'s figure, not '
                       'measured in this run' % (key, defaults[key]))
        out += ['%s: %s' % (k, src) for k, (v, src) in inputs.items()
                if v is None]
        return out + plan_vs_run.assumed_notes(plan)

    def request_forecast(self, body, inputs):
        """POST /v1/plans for the wave's request; the plan (or its error)."""
        try:
            return self.fedex().plans.forecast(
                body, name='wave-bench-%s' % self.id_,
                **{k: v for k, (v, _src) in inputs.items()})
        except fedex_exc.ClientException as e:
            return {'error': str(e)}

    def forecast_line(self, plan, body, inputs):
        if 'error' in plan:
            return {'event': 'forecast', 'error': plan['error'],
                    'request': body}
        fx, said = plan['fedex'], plan.get('assumes') or {}
        return {
            'event': 'forecast', 'plan': plan.get('id'),
            'servers': len(body['servers']),
            'total_time': fx['total_time'], 'phases': fx['phases'],
            'wan_bytes': fx['wan_bytes'],
            'expected_pause': fx['expected_pause'],
            'devices': fx['devices'], 'shipments': fx['shipments'],
            'recommended': plan.get('recommended'),
            'wan_only_total_time': plan['wan']['total_time'],
            'per_server': [{k: r.get(k) for k in (
                'server_id', 'pause_seconds', 'memory_bytes',
                'memory_copy_seconds', 'memory_bytes_over_wan',
                'final_delta_bytes', 'allocated_bytes', 'converges')}
                for r in plan['servers']],
            'catch_up': plan.get('catch_up'), 'link': plan.get('link'),
            'inputs': {k: {'value': v, 'source': src}
                       for k, (v, src) in inputs.items()},
            'assumed': self.assumed(plan, inputs),
            'notes': {k: said[k] for k in plan_vs_run.NOTE_KEYS
                      if k in said},
            'warnings': plan.get('warnings'), 'request': body}

    def wait_reports(self, members, timeout=60):
        """Until nova_fedex's reports of every cutover are in (or not).

        The conductor may read a cutover's end back from Nova before
        nova_fedex, after Nova's own post-migration, sends its reports.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if all(any((e.get('details') or {}).get('event') == 'resumed'
                       for e in db.events(self.ctx, {'migration_id': mid,
                                                     'kind': 'cutover'}))
                   for mid in members.values()):
                return
            time.sleep(1)

    def measured(self, shown, wave_seconds, wan_used):
        """{figure: value} of the wave, as plan_vs_run names them; more.

        ``wan_used``: the WAN's bytes per path during the wave, or None.
        """
        members = {s['server_id']: s['migration_id']
                   for s in shown['servers']}
        self.wait_reports(members)
        transitions, pauses = {}, {}
        catch_up = later = delta = 0
        every_delta = True
        for sid, mid in members.items():
            events = db.events(self.ctx, {'migration_id': mid})
            moves = [e for e in events if e['kind'] == 'state' and
                     e['resource_type'] == 'migration' and e['to_state']]
            transitions[mid] = [(epoch(e['created_at']), e['to_state'])
                                for e in moves]
            ready = next((e['id'] for e in moves
                          if e['to_state'] == states.READY_FOR_CUTOVER),
                         None)
            applied = False
            for e in events:
                d = e.get('details') or {}
                if e['kind'] == 'progress' and d.get('wire_bytes') is not None:
                    # Rounds until it was ready are the catch-up; the
                    # keep-warm ones and the last before Nova's, what the
                    # forecast counts in the final delta.
                    if ready is None or e['id'] < ready:
                        catch_up += d['wire_bytes']
                    else:
                        later += d['wire_bytes']
                elif d.get('event') == 'delta_applied':
                    delta += d.get('wire') or 0
                    applied = True
                elif d.get('event') == 'resumed' and \
                        d.get('pause_seconds') is not None:
                    pauses[sid] = d['pause_seconds']
            every_delta = every_delta and applied
        phases, started, ended = plan_vs_run.wave_phases(transitions)
        final = later + delta if every_delta else None
        ships = shown.get('shipments') or []
        out = {'total_time': wave_seconds}
        out.update(('phase.%s' % p, v) for p, v in phases.items())
        out.update({
            'wan_bytes': sum(wan_used[p]['sent'] for p in DATA_PATHS)
            if wan_used else None,
            'catch_up_bytes': catch_up,
            'final_delta_bytes': final,
            'disk_bytes_over_wan': None if final is None
            else catch_up + final,
            'memory_bytes_over_wan': wan_used['memory']['sent']
            if wan_used else None,
            'devices': sum(s['devices'] for s in ships) if ships else None,
            'shipments': len(ships) or None,
            'expected_pause': max(pauses.values()) if pauses else None})
        for sid in members:
            out[plan_vs_run.pause_key(sid)] = pauses.get(sid)
        moved = sorted(v['source_image'] for mid in members.values()
                       for v in db.get(self.ctx, 'migration', mid)['volumes'])
        return out, {'event': 'measured',
                     'state_events_span': ended - started if ended else None,
                     'wan_bytes_per_path': wan_used, 'images': moved}

    def notes(self, wan_used, members):
        phase = ('the members\' state events (to the second), the wave as '
                 'its slowest member')
        wire = 'on the wire, from the migrations\' events'
        relay_ = ('the WAN relay\'s count, client to service' if wan_used
                  else 'the WAN is not up')
        out = {
            'total_time': 'the wave command to its last COMPLETED',
            'phase.requested': 'no phase of the forecast: the wait before '
                               'the first snapshot',
            'phase.cutover': '%s; forecast one server after another, the '
                             'wave %d at once' % (
                                 phase, ARGS.max_parallel_cutovers),
            'wan_bytes': relay_ + ': catch-up, final-delta and memory paths',
            'catch_up_bytes': 'rounds until each was ready, ' + wire,
            'final_delta_bytes': 'rounds after ready (keep-warm, the last '
                                 'before Nova\'s) and nova_fedex\'s final '
                                 'delta, ' + wire,
            'disk_bytes_over_wan': 'catch-up and final delta, ' + wire,
            'memory_bytes_over_wan': '%s: QEMU\'s stream in TLS; the '
                                     'forecast counts the flavor\'s '
                                     'memory' % relay_,
            'devices': 'the wave\'s shipments\' devices',
            'expected_pause': 'the longest of the servers\'',
        }
        for p in plan_vs_run.PHASES:
            out.setdefault('phase.%s' % p, phase)
        for sid in members:
            out[plan_vs_run.pause_key(sid)] = (
                'nova_fedex\'s report: paused at B to resumed (the '
                'memory\'s last round at A is not in it)')
        return out

    def migration_of(self, sid):
        return [x for x in db.list_(self.ctx, 'migration')
                if any(s['server_id'] == sid for s in x['servers'])][0]

    def device_bytes_of(self, m):
        ships = {v['shipment_id'] for v in m['volumes'] if v['shipment_id']}
        return sum(waves.device_bytes(self.ctx, db.get(self.ctx, 'shipment',
                                                       s)) or 0
                   for s in ships)

    def exact_and_counting(self, sid, m, volume_ids=()):
        final = 'fedex-final-%s' % m['id'][:8]
        specs = ['vms/%s_disk' % sid] + ['volumes/volume-%s' % v
                                         for v in volume_ids]
        equal = all(
            self.sandbox.site('site-a').export_sha256(spec) ==
            self.sandbox.site('site-b').export_sha256(
                records.record_spec(spec, final)) for spec in specs)
        r = self.reader('site-b', '%s_disk' % sid)
        try:
            r.wait_advancing(ticks=20, timeout=120)
            counters = [t.counter for t in r.read_ring()]
            counting = counters == list(range(counters[0],
                                              counters[-1] + 1))
        except AssertionError:
            counting = False
        return equal, counting

    def test_wave(self):
        n = ARGS.servers
        test_wave.ensure_wave_image(self.cloud, self.dep.work)
        # (The volumes first: their clean-ups run after the servers'.)
        vids = [self.volume('wb-v%d-%s' % (i, self.id_)) for i in range(3)]
        sids = self.boot_many(['fedex-wb%d-%s' % (i, self.id_)
                               for i in range(n + 1)])
        alone, members = sids[0], sids[1:]
        volumes = {members[0]: vids[:1], members[1]: vids[1:]}
        for sid, vids in volumes.items():
            for vid in vids:
                self.cloud.openstack_plain('server', 'add', 'volume', sid,
                                           vid)
                self.wait_volume(vid, 'in-use')
        for sid in sids:
            self.reader('site-a', '%s_disk' % sid).wait_advancing(
                ticks=20, timeout=300)

        # One server alone, as an operator moves one today.
        began = time.monotonic()
        code, out, err = self.run_cli(
            'server', 'migrate', '--live-migration', '--fedex', '--host',
            nova_t.SITE_B_HOST, '--cutover', 'automatic', '--wait', alone,
            timeout=3600)
        one_seconds = time.monotonic() - began
        self.assertEqual(0, code, out + err[-3000:])
        m1 = self.migration_of(alone)
        one_bytes = self.device_bytes_of(m1)
        equal, counting = self.exact_and_counting(alone, m1)
        print(json.dumps({'kind': 'one', 'server': alone,
                          'state': m1['state'],
                          'seconds': round(one_seconds, 1),
                          'device_bytes': one_bytes, 'exact': equal,
                          'counting': counting}), flush=True)

        # The plan: the forecast of exactly the wave's request, before it.
        body = self.wave_request(members, volumes)
        inputs = self.forecast_inputs(m1, members, volumes)
        plan = self.request_forecast(body, inputs)
        print(json.dumps(self.forecast_line(plan, body, inputs)), flush=True)
        wan_before = wan_counters(self.sandbox)

        # The wave.
        argv = ['fedex', 'wave', 'create', '--host', nova_t.SITE_B_HOST,
                '--cutover', 'automatic', '--max-parallel-cutovers',
                str(ARGS.max_parallel_cutovers), '--wait', '-f', 'json']
        if ARGS.rate_cap is not None:
            argv += ['--rate-cap', str(ARGS.rate_cap)]
        for sid in members:
            argv += ['--server', sid]
        began = time.monotonic()
        code, out, err = self.run_cli(*argv, timeout=7200)
        wave_seconds = time.monotonic() - began
        self.assertEqual(0, code, out + err[-3000:])
        wan_used = None
        if wan_before is not None:
            # The relay writes its counters every STATS_INTERVAL.
            time.sleep(relay.STATS_INTERVAL + 0.2)
            after = wan_counters(self.sandbox)
            wan_used = wan.difference(wan_before, after) if after else None
        shown = json.loads(out)
        by_server = {s['server_id']: s for s in shown['servers']}
        results = []
        for sid in members:
            m = db.get(self.ctx, 'migration', by_server[sid]['migration_id'])
            equal, counting = self.exact_and_counting(
                sid, m, volumes.get(sid, ()))
            runs = by_server[sid]['cutovers']
            results.append({'kind': 'wave-server', 'server': sid,
                            'state': m['state'], 'exact': equal,
                            'counting': counting, 'cutovers': runs})
            print(json.dumps(results[-1]), flush=True)
        # The plan against the run.
        measured, more = self.measured(shown, wave_seconds, wan_used)
        more['same_images_as_forecast'] = more['images'] == sorted(
            v['source_image'] for s in body['servers'] for v in s['volumes'])
        print(json.dumps(more), flush=True)
        rows = plan_vs_run.compare(
            {} if 'error' in plan else plan_vs_run.forecast_figures(plan),
            measured, notes=self.notes(wan_used, members))
        for row in rows:
            print(json.dumps(dict(row, event='plan_vs_run')), flush=True)
        print('forecast vs measured: wave of %d servers, plan %s' % (
            n, plan.get('id') or plan.get('error')))
        print(plan_vs_run.table(rows), flush=True)
        verdicts = plan_vs_run.summary(rows)

        spans = test_wave.intervals(shown)
        overlapping = sum(
            1 for (a, b), (c, d) in itertools.combinations(spans, 2)
            if a < (d or a) and c < (b or c))
        summary = {
            'kind': 'summary', 'servers': n,
            'max_parallel_cutovers': ARGS.max_parallel_cutovers,
            'one_server_seconds': round(one_seconds, 1),
            'wave_seconds': round(wave_seconds, 1),
            'wall_ratio': round(wave_seconds / one_seconds, 2),
            'one_server_device_bytes': one_bytes,
            'wave_device_bytes': shown['device_bytes'],
            'device_ratio': round(shown['device_bytes'] / float(one_bytes),
                                  3) if one_bytes and
            shown['device_bytes'] else None,
            'cutover_pairs_overlapping': overlapping,
            'most_cutovers_at_once': test_wave.most_at_once(spans),
            'all_completed': all(r['state'] == 'COMPLETED'
                                 for r in results),
            'all_exact': all(r['exact'] for r in results),
            'all_counting': all(r['counting'] for r in results),
            'plan_vs_run': verdicts}
        summary['goals'] = {
            'wall_at_most_2x': summary['wall_ratio'] <= 2.0,
            'device_bytes_at_most_1.15x': summary['device_ratio'] is not None
            and summary['device_ratio'] <= 1.15,
            'two_cutovers_overlapping': overlapping >= 1,
            'plan_within_20pct': verdicts['all_within']}
        print(json.dumps(summary), flush=True)


def main():
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--servers', type=int, default=8)
    parser.add_argument('--max-parallel-cutovers', type=int, default=2)
    parser.add_argument('--rate-cap', type=int, metavar='<bytes/s>',
                        help='The wave\'s rate cap (its request and its '
                             'forecast); default none.')
    parser.add_argument('--export-rate', metavar='<rate>',
                        help='[planner] export_rate of the forecast, e.g. '
                             '40MB/s (default: the planner\'s, said to be '
                             'assumed).')
    parser.add_argument('--import-rate', metavar='<rate>',
                        help='[planner] import_rate of the forecast.')
    parser.add_argument('--dirty-rate', type=rate_arg, metavar='<rate>',
                        help='The guests\' dirty rate for the forecast '
                             '(default: measured on the one server).')
    parser.add_argument('--write-rate', type=rate_arg, metavar='<rate>',
                        help='The servers\' write rate for the forecast '
                             '(default: measured on the one server).')
    ARGS = parser.parse_args()
    faulthandler.enable()

    def interrupted(signum, frame):
        raise KeyboardInterrupt('signal %d' % signum)
    signal.signal(signal.SIGTERM, interrupted)
    case = WaveBench('test_wave')
    try:
        result = unittest.TextTestRunner(stream=sys.stderr, verbosity=2).run(
            unittest.TestSuite([case]))
        return 0 if result.wasSuccessful() else 1
    finally:
        # An interrupted run skips the test's clean-ups (servers, volumes,
        # its fedex-api, conductor and terminals): run what is left.
        while getattr(case, '_cleanups', None):
            function, args, kwargs = case._cleanups.pop()
            try:
                function(*args, **kwargs)
            except BaseException as e:
                print('clean-up %s: %s' % (getattr(
                    function, '__qualname__', function), e), file=sys.stderr)


if __name__ == '__main__':
    sys.exit(main())
