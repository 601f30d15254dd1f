"""``lsrp catchup`` and ``lsrp-server`` killed with SIGKILL, then run again.

Real processes, real ``kill -9``: each is frozen at a named point by
tests/functional/crashpoint.py (so the kill lands where the test says, not
after a guessed delay), killed, and the same command is run again. Judged
with ``rbd export | sha256sum`` at both sites.
"""

import json
import os
import select
import signal
import subprocess
import sys
import time

from tests.functional import test_catchup

MiB = 1 << 20
# Ports of the sandbox's "tests' own use" range (+600..+999), one per test.
PORTS = {'transfer': 900, 'commit': 901, 'server_transfer': 902,
         'server_commit': 903, 'other_content': 904, 'errors': 905}


class CrashTestCase(test_catchup.CatchUpTestCase):

    def catchup_cmd(self, spec, shipment, port, *extra, point='none',
                    base='seed', tls=None):
        name, ca, cert, key = tls or self.terminal('site-a')
        s = self.sandbox.site('site-a')
        return [sys.executable, '-m', 'tests.functional.crashpoint', point,
                'lsrp', '--shipment-state_dir',
                os.path.join(self.work, 'state-a'), 'catchup', spec,
                '--shipment-id', shipment, '--base', base, '--server',
                '127.0.0.1:%d' % port, '--server-name',
                self.terminal('site-b')[0], '--tls-ca', ca, '--tls-cert',
                cert, '--tls-key', key, '--name', name, '--ceph-conf',
                s.conf, '--keyring', s.keyring, '--site', 'site-a',
                '--retries', '1', '--threshold-mib', '64'] + list(extra)

    def catchup(self, *args, **kw):
        """Run ``lsrp catchup`` to its end: (exit code, stdout, stderr)."""
        r = subprocess.run(self.catchup_cmd(*args, **kw), capture_output=True,
                           text=True, timeout=180)
        return r.returncode, r.stdout, r.stderr

    def converged(self, *args, **kw):
        """Run it; it must converge. Returns the last round's snapshot."""
        code, out, err = self.catchup(*args, **kw)
        self.assertEqual(0, code, 'stdout: %s\nstderr: %s' % (out, err))
        last = json.loads(out.strip().splitlines()[-1])
        self.assertEqual('converged', last['event'])
        return last['last_snapshot']

    def frozen(self, proc, point, timeout=60):
        """Wait for ``proc`` to reach ``point``; then kill -9 it."""
        deadline = time.monotonic() + timeout
        seen = ''
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stderr], [], [], 1)
            if ready:
                line = proc.stderr.readline()
                if not line:
                    break
                seen += line
                if line.strip() == 'CRASHPOINT %s' % point:
                    os.kill(proc.pid, signal.SIGKILL)
                    self.assertEqual(-signal.SIGKILL, proc.wait())
                    return
        proc.kill()
        self.fail('%s never reached %s; it said: %s'
                  % (proc.args[:6], point, seen))

    def client_frozen_at(self, point, spec, shipment, port, *extra):
        proc = subprocess.Popen(self.catchup_cmd(spec, shipment, port,
                                                 *extra, point=point),
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        self.frozen(proc, point)

    def server_frozen_at(self, point, port):
        """lsrp-server at site-b, frozen at ``point`` (see frozen)."""
        proc, _ = self._serve(port=port, point=point)
        return proc

    def snaps(self, site, spec):
        return [s['name'] for s in json.loads(self.rbd_cli(
            site, 'snap', 'ls', '--format', 'json', spec))]

    def assert_exact(self, spec, snapshot):
        """Both sites hold ``snapshot``, equal; the destination head too."""
        source = self.cli_sha256('site-a', '%s@%s' % (spec, snapshot))
        self.assertEqual(source, self.cli_sha256('site-b', '%s@%s'
                                                 % (spec, snapshot)))
        self.assertEqual(source, self.cli_sha256('site-b', spec))

    def changed(self, size=16 * MiB):
        spec, shipment = self.seeded(size)
        self.write(spec, count=8, seed=11)
        return spec, shipment


class TestKilledClient(CrashTestCase):

    def test_killed_during_a_transfer_then_run_again(self):
        spec, shipment = self.changed()
        port = self.sandbox.port(PORTS['transfer'])
        self._serve(port=port, point=None)
        # One stream: its acknowledged offset is the round's.
        self.client_frozen_at('client-transfer', spec, shipment, port,
                              '--streams', '1')
        r1 = '%s-r1' % shipment
        self.assertIn(r1, self.snaps('site-a', spec))
        self.assertNotIn(r1, self.snaps('site-b', spec))
        # The same command again: it sends r1 first, which the terminal
        # kept and resumes where the killed run left it, then converges.
        last = self.converged(spec, shipment, port, '--streams', '1')
        self.assertEqual(r1, last)
        with open(self.server_log) as f:
            self.assertIn('round seed -> %s resumes at offset' % r1,
                          f.read())
        self.assert_exact(spec, last)

    def test_killed_after_the_destination_took_the_snapshot(self):
        spec, shipment = self.changed()
        port = self.sandbox.port(PORTS['commit'])
        self._serve(port=port)
        self.client_frozen_at('client-after-commit', spec, shipment, port)
        r1 = '%s-r1' % shipment
        self.assertIn(r1, self.snaps('site-b', spec))
        # Again: it goes on from r1, under a name never used (r2).
        self.write(spec, count=3, seed=12)
        last = self.converged(spec, shipment, port)
        self.assertEqual('%s-r2' % shipment, last)
        self.assert_exact(spec, last)
        # A later catch-up from an earlier round's snapshot: no collision.
        self.write(spec, count=3, seed=13)
        last = self.converged(spec, shipment, port, base=r1)
        self.assertEqual('%s-r3' % shipment, last)
        self.assert_exact(spec, last)


class TestKilledDestination(CrashTestCase):

    def test_killed_during_a_transfer(self):
        spec, shipment = self.changed()
        port = self.sandbox.port(PORTS['server_transfer'])
        seed = self.cli_sha256('site-b', spec + '@seed')
        server = self.server_frozen_at('server-transfer', port)
        client = subprocess.Popen(self.catchup_cmd(spec, shipment, port),
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        self.addCleanup(client.kill)
        self.wait_for_server_point(server, 'server-transfer')
        out, err = client.communicate(timeout=120)
        # The client: one line naming the terminal, no traceback.
        self.assertEqual(2, client.returncode, err)
        self.assertNotIn('Traceback', err)
        self.assertIn('terminal-site-b at 127.0.0.1:%d' % port,
                      err.strip().splitlines()[-1])
        # Half applied, and the terminal is down: the head is rolled back
        # as soon as it starts again.
        self.assertNotEqual(seed, self.cli_sha256('site-b', spec))
        self._serve(port=port)
        self.assertEqual(seed, self.cli_sha256('site-b', spec))
        with open(self.server_log) as f:
            self.assertIn('head rolled back to seed', f.read())
        last = self.converged(spec, shipment, port)
        self.assert_exact(spec, last)

    def test_killed_during_its_commit(self):
        spec, shipment = self.changed()
        port = self.sandbox.port(PORTS['server_commit'])
        server = self.server_frozen_at('server-commit', port)
        client = subprocess.Popen(self.catchup_cmd(spec, shipment, port),
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        self.addCleanup(client.kill)
        self.wait_for_server_point(server, 'server-commit')
        _, err = client.communicate(timeout=120)
        self.assertEqual(2, client.returncode, err)
        self.assertNotIn('Traceback', err)
        r1 = '%s-r1' % shipment
        self.assertNotIn(r1, self.snaps('site-b', spec))
        # At start the terminal finishes the commit it recorded.
        self._serve(port=port)
        self.assertIn(r1, self.snaps('site-b', spec))
        self.assertEqual(self.cli_sha256('site-a', spec + '@' + r1),
                         self.cli_sha256('site-b', spec + '@' + r1))
        self.write(spec, count=3, seed=14)
        last = self.converged(spec, shipment, port)
        self.assertEqual('%s-r2' % shipment, last)
        self.assert_exact(spec, last)


class TestProofOfTheBase(CrashTestCase):

    def test_same_named_snapshot_with_other_content_is_refused(self):
        """Before: "converged, 0 bytes changed", exit 0, images differ."""
        spec, shipment = self.changed()
        port = self.sandbox.port(PORTS['other_content'])
        self._serve(port=port)
        r1 = '%s-r1' % shipment
        # The source's r1 and, at the destination, an r1 of other content.
        self.snapshot(spec, r1)
        name = spec.split('/')[1]
        with self.pool('site-b').open_image(name) as img:
            img.write(0, b'not the source' * 1000)
            img.create_snapshot(r1)
        other = self.cli_sha256('site-b', spec + '@' + r1)
        self.assertNotEqual(self.cli_sha256('site-a', spec + '@' + r1), other)
        code, out, err = self.catchup(spec, shipment, port)
        self.assertEqual(3, code, 'stdout: %s\nstderr: %s' % (out, err))
        self.assertNotIn('converged', out)
        self.assertNotIn('Traceback', err)
        lines = err.strip().splitlines()
        self.assertEqual(1, len(lines), err)
        self.assertIn('verification failed', lines[0])
        # The destination's copy, named with its site, is the one at fault.
        self.assertIn('%s at site-b, snapshot %s differs from the source'
                      % (spec, r1), lines[0])
        # Nothing written at the destination, no new round there.
        self.assertEqual(other, self.cli_sha256('site-b', spec))
        self.assertEqual(['seed', r1], self.snaps('site-b', spec))
        # The operator removes the stranger; the same command converges.
        self.rbd_cli('site-b', 'snap', 'rm', '%s@%s' % (spec, r1))
        last = self.converged(spec, shipment, port)
        self.assertEqual('%s-r2' % shipment, last)
        self.assert_exact(spec, last)
