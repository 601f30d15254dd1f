"""LSRP frames fuzzed against a running terminal (issue 25: bad input).

A real ``lsrp-server`` process at site-b (mutual TLS, the sandbox's PKI)
serves a shipment imported for real. A raw client, authenticated as
site-a's terminal, sends it malformed frames (bad magic and version,
truncated headers, lengths beyond the body and the limit, unknown types,
mistyped fields), frames out of order, and frames Hypothesis derives from
valid ones (a field replaced, removed or added; a header field changed;
bytes flipped, cut or appended). Whatever it sends, the terminal:

* answers with an ERROR frame of a documented code, or the request's own
  answer, within its ``frame_timeout`` (1 s here) and a margin: it never
  hangs; a stream error (bad framing) closes the connection after the
  ERROR frame, a refused request leaves it open; it never closes one
  without saying why, and never answers ``INTERNAL`` (an unchecked input
  reaching Ceph);
* stays up: after every case a new connection is served, and at the end a
  real catch-up round through it is bit-exact (``rbd export | sha256sum``);
* leaves nothing half done at site-b: no new image, no staging image, no
  snapshot but the valid round's, and the head equals the source's.

Peers without a certificate of the deployment's CA, or without TLS at all,
get no LSRP frame. The Hypothesis budget and seed are fixed for CI
(``derandomize``); ``FEDEX_FUZZ_EXAMPLES=2000`` runs more.
"""

import collections
import os
import re
import signal
import socket
import ssl
import struct
import time
import zlib

from hypothesis import given
from hypothesis import HealthCheck
from hypothesis import settings
from hypothesis import strategies as st
import msgpack

from lsrp import catchup
from lsrp import digest as digest_mod
from lsrp import exception
from lsrp.protocol import frames
from lsrp.protocol import messages as m
from lsrp import tls
from tests.functional import test_catchup

# How the functional tests' helpers name their images (base.unique_name).
OTHER_TESTS_IMAGE = re.compile(r'^[a-z0-9-]+-[0-9a-f]{10}(\.|$)')
MiB = 1 << 20
EXAMPLES = int(os.environ.get('FEDEX_FUZZ_EXAMPLES') or 500)
FUZZ = settings(derandomize=True, database=None, deadline=None,
                max_examples=EXAMPLES,
                suppress_health_check=list(HealthCheck))
FRAME_TIMEOUT = 1          # the terminal's [server] frame_timeout here
# Seconds an answer may take beyond it (a loaded 2-core CI machine).
MARGIN = 10
SENTINEL = (1 << 48) + 7   # the seq of the request that ends a case
# Errors after which the stream cannot be trusted: the connection closes.
CLOSING = ('BAD_MAGIC', 'BAD_VERSION', 'UNKNOWN_TYPE', 'BAD_FLAGS',
           'TOO_LARGE', 'BAD_CHECKSUM', 'BAD_BODY', 'BAD_FIELD', 'TRUNCATED')


def pack(type_, body=b'', session=0, seq=1, flags=0, magic=frames.MAGIC,
         version=frames.VERSION, length=None, crc=None):
    """A frame's bytes, any field as given (``body``: bytes or a map)."""
    if isinstance(body, dict):
        body = msgpack.packb(body, use_bin_type=True)
    header = frames.HEADER.pack(magic, version, type_, flags, session, seq,
                                len(body) if length is None else length, 0)
    if crc is None:
        crc = zlib.crc32(body, zlib.crc32(header))
    return header[:-4] + struct.pack('>I', crc) + body


class Outcome(object):

    def __init__(self, frames_, closed, seconds):
        self.frames, self.closed, self.seconds = frames_, closed, seconds
        self.errors = [f for f in frames_ if f.type == m.ERROR]
        self.answered = any(f.seq == SENTINEL and f.type != m.ERROR
                            for f in frames_)

    @property
    def codes(self):
        return [e.body['code'] for e in self.errors]

    def __repr__(self):
        return 'Outcome(%s, closed=%s, %.2f s)' % (
            [(f.name, f.body.get('code'), f.body.get('message', '')[:80])
             for f in self.frames], self.closed, self.seconds)


class Peer(object):
    """A raw LSRP client: bytes out, frames in, bounded waits."""

    def __init__(self, port, context, server_name):
        sock = socket.create_connection(('127.0.0.1', port), timeout=MARGIN)
        self.sock = (context.wrap_socket(sock, server_hostname=server_name)
                     if context is not None else sock)
        self.decoder = frames.Decoder()

    def send(self, data):
        try:
            self.sock.sendall(data)
        except (ConnectionError, ssl.SSLError, OSError):
            pass   # it closed first: what it said is read next

    def collect(self, until_seq=SENTINEL, timeout=FRAME_TIMEOUT + MARGIN):
        """Frames until the answer to ``until_seq``, or the close."""
        got, closed = [], False
        start = time.monotonic()
        while not any(f.seq == until_seq for f in got):
            remaining = start + timeout - time.monotonic()
            if remaining <= 0:
                raise AssertionError('the terminal neither answered nor '
                                     'closed within %s s: %s'
                                     % (timeout, Outcome(got, False, 0)))
            self.sock.settimeout(remaining)
            try:
                data = self.sock.recv(1 << 20)
            except socket.timeout:
                continue
            except (ConnectionError, ssl.SSLError, OSError):
                data = b''
            if not data:
                closed = True
                break
            got.extend(self.decoder.feed(data))
        if not closed and any(f.type == m.ERROR and f.body['code'] in CLOSING
                              for f in got):
            # A stream error: the close follows the ERROR frame.
            closed = self._closes(start + timeout)
        return Outcome(got, closed, time.monotonic() - start)

    def _closes(self, deadline):
        while time.monotonic() < deadline:
            self.sock.settimeout(max(deadline - time.monotonic(), 0.01))
            try:
                data = self.sock.recv(1 << 20)
            except socket.timeout:
                continue
            except (ConnectionError, ssl.SSLError, OSError):
                return True
            if not data:
                return True
            self.decoder.feed(data)
        return False

    def request(self, type_, body, session=0, seq=1):
        self.send(frames.encode(frames.Frame(type_, body, session, seq)))
        out = self.collect(until_seq=seq)
        answer = [f for f in out.frames if f.seq == seq]
        if not answer or answer[0].type == m.ERROR:
            raise AssertionError('%s refused: %s' % (m.NAMES[type_], out))
        return answer[0].body

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class TestFrameFuzz(test_catchup.CatchUpTestCase):

    def setUp(self):
        super().setUp()
        self.spec, self.shipment = self.seeded(8 * MiB)
        self.image = self.spec.split('/')[1]
        with self.pool().open_image(self.image, snapshot='seed') as img:
            self.seed_digest = img.digest('blake3')
            self.size = img.size()
        self.images_b = set(self.pool('site-b').list_images())
        self.proc, self.port = self._serve(
            '--server-frame_timeout', str(FRAME_TIMEOUT))
        self.server_name = self.terminal('site-b')[0]
        _, ca, cert, key = self.terminal('site-a')
        self.context = tls.client_context(ca, cert, key)
        self.cases = 0
        # What the cases ended in: the error codes, 'answered' for none.
        self.seen = collections.Counter()

    # --- the client ------------------------------------------------------

    def peer(self, shake=True, context=None):
        p = Peer(self.port, context or self.context, self.server_name)
        self.addCleanup(p.close)
        if shake:
            p.request(m.HANDSHAKE, {'version': frames.VERSION, 'id': 'fuzz',
                                    'peer': 'terminal-site-a'}, seq=1)
        return p

    def open_session(self, p, seq=2):
        return p.request(m.INIT_SESSION, {'disk': self.spec,
                                          'shipment': self.shipment},
                         seq=seq)['session']

    def sentinel(self):
        return frames.encode(frames.Frame(m.GET_SERVER_STATE, {},
                                          seq=SENTINEL))

    def exchange(self, payload, shake=True, session=False, sentinel=True):
        """Send ``payload`` (then a request that ends the case): Outcome."""
        p = self.peer(shake)
        sid = self.open_session(p) if session else 0
        if callable(payload):
            payload = payload(sid)
        p.send(payload + (self.sentinel() if sentinel else b''))
        out = p.collect()
        p.close()
        self.cases += 1
        self.seen.update(out.codes or ['answered'])
        self.check(out, shake)
        return out

    def check(self, out, shaken=True):
        """What every case must end in (see the module's docstring)."""
        self.assertTrue(all(f.is_response for f in out.frames), out)
        for error in out.errors:
            self.assertIn(error.body['code'], m.ERROR_CODES, out)
            self.assertNotEqual('INTERNAL', error.body['code'], out)
            self.assertTrue(error.body['message'].strip(), out)
        # Never a silent close, never silence.
        self.assertTrue(out.answered or out.errors, out)
        if out.closed:
            self.assertTrue(out.errors, out)
        if (set(out.codes) & set(CLOSING)) or (out.errors and not shaken):
            self.assertTrue(out.closed, out)
            self.assertFalse(out.answered, out)
        self.assertLess(out.seconds, FRAME_TIMEOUT + MARGIN, out)

    def assert_serving(self):
        """The process is up, and a new connection is served."""
        self.assertIsNone(self.proc.poll(), 'lsrp-server died')
        p = self.peer()
        state = p.request(m.GET_SERVER_STATE, {
            'shipment': self.shipment, 'disks': [self.spec]}, seq=9)
        self.assertEqual('ready', state['state'])
        p.close()

    def assert_refused(self, out, *codes):
        self.assertTrue(set(out.codes) & set(codes),
                        'expected one of %s: %s' % (codes, out))

    # --- the end: a valid round, then nothing half done -------------------

    def valid_round_then_nothing_left(self):
        self.write(self.spec, seed=7)
        reports = []

        async def round_():
            engine = catchup.CatchUp(
                self.sites['site-a'], self.connector(self.port),
                self.shipment, [self.spec], 'seed',
                threshold_bytes=64 * MiB, report=reports.append)
            await engine.round(1, verify=True)
        self.run_async(round_())
        snapshot = reports[0].snapshot
        self.assert_same(self.spec, snapshot)
        # A clean stop rolls back what a fuzzed round may have kept for a
        # resume; it must exit 0 (it did not crash on the way).
        self.proc.send_signal(signal.SIGTERM)
        self.assertEqual(0, self.proc.wait(60), self.read_log())
        self.assertNotIn('Traceback', self.read_log())
        pool = self.pool('site-b')
        # Other tests share the pool (stestr runs two at once): images they
        # make or remove meanwhile are theirs. Nothing of this test's may be
        # new: no record or staging image of its disk, and no image of a
        # name only the fuzzed frames used (tests name theirs <prefix>-<hex>).
        added = set(pool.list_images()) - self.images_b
        self.assertEqual(set(), {
            n for n in added if n.startswith(self.image) or
            not OTHER_TESTS_IMAGE.match(n)})
        with pool.open_image(self.image) as img:
            snaps = [s.name for s in img.list_snapshots()
                     if s.namespace == 'user']
        self.assertEqual(['seed', snapshot], snaps)
        at_a = self.cli_sha256('site-a', '%s@%s' % (self.spec, snapshot))
        self.assertEqual(at_a, self.cli_sha256('site-b', self.spec))

    def read_log(self):
        with open(self.server_log) as f:
            return f.read()

    # --- the cases ---------------------------------------------------------

    def test_malformed_frames(self):
        hello = {'version': 1, 'id': 'x', 'peer': 'p'}
        state = {'shipment': self.shipment, 'disks': [self.spec]}
        good = pack(m.GET_SERVER_STATE, state, seq=5)
        # Framing: each refused from its header, the connection closed.
        cases = [
            (pack(m.GET_SERVER_STATE, state, magic=b'XSRP'), 'BAD_MAGIC'),
            (pack(m.GET_SERVER_STATE, state, version=2), 'BAD_VERSION'),
            (pack(m.GET_SERVER_STATE, state, version=0), 'BAD_VERSION'),
            (pack(0x7E, {}), 'UNKNOWN_TYPE'),
            (pack(0x00, {}), 'UNKNOWN_TYPE'),
            (pack(m.GET_SERVER_STATE, state, flags=0x8000), 'BAD_FLAGS'),
            (pack(m.GET_SERVER_STATE, state, length=frames.MAX_BODY + 1),
             'TOO_LARGE'),
            (pack(m.GET_SERVER_STATE, state, length=0xFFFFFFFF), 'TOO_LARGE'),
            (pack(m.GET_SERVER_STATE, state, crc=1234), 'BAD_CHECKSUM'),
            (good[:-1] + bytes([good[-1] ^ 1]), 'BAD_CHECKSUM'),
            (pack(m.GET_SERVER_STATE, b'\xc1\xc1'), 'BAD_BODY'),
            (pack(m.GET_SERVER_STATE, b'\x93\x01\x02\x03'), 'BAD_BODY'),
            (pack(m.GET_SERVER_STATE, msgpack.packb({1: 2})), 'BAD_BODY'),
            (pack(m.GET_SERVER_STATE, b'\x81\xa1a'), 'BAD_BODY'),
            # 5 GiB announced by a string header: refused, not allocated.
            (pack(m.GET_SERVER_STATE, b'\xdb\xff\xff\xff\xff'), 'BAD_BODY'),
            (pack(m.GET_SERVER_STATE, {'nope': 1}), 'BAD_FIELD'),
            (pack(m.GET_SERVER_STATE, {'disks': 'vms/x'}), 'BAD_FIELD'),
            (pack(m.INIT_SESSION, {'disk': self.spec}), 'BAD_FIELD'),
            (pack(m.INIT_SESSION, {'disk': 7, 'shipment': self.shipment}),
             'BAD_FIELD'),
            (pack(m.REPLICATION_START, {'snapshot': 'n1', 'size': -1}),
             'BAD_FIELD'),
            (pack(m.REPLICATION_START, {'snapshot': 'n1',
                                        'size': (1 << 64) - 1}), 'BAD_FIELD'),
            (pack(m.REPLICATION_START, {'snapshot': 'n1', 'size': 1.5}),
             'BAD_FIELD'),
            (pack(m.REPLICATION_UPDATE, {'offset': 0, 'data': 'text',
                                         'digest': b'\0' * 32}), 'BAD_FIELD'),
            (pack(m.REPLICATION_UPDATE, {'offset': 0, 'data': b'x',
                                         'digest': b'\0' * 31}), 'BAD_FIELD'),
            (pack(m.REPLICATION_COMPLETE, {'snapshot': 'x' * 5000}),
             'BAD_BODY'),
            (pack(m.HANDSHAKE, dict(hello, version=True)), 'BAD_FIELD'),
            # Garbage, and a 16 MiB body that is not one.
            (b'GET / HTTP/1.1\r\nHost: terminal\r\n\r\n', 'BAD_MAGIC'),
            (pack(m.REPLICATION_UPDATE, bytes(frames.MAX_BODY), crc=1),
             'BAD_CHECKSUM'),
        ]
        for payload, code in cases:
            for shake in (True, False):
                out = self.exchange(payload, shake=shake, session=shake)
                self.assert_refused(out, code)
                self.assertTrue(out.closed, out)
        # A header cut short, a body shorter than its length, then nothing:
        # TRUNCATED after frame_timeout, the connection closed.
        for payload in (good[:10], good[:frames.HEADER_SIZE],
                        pack(m.GET_SERVER_STATE, state, length=100000)):
            out = self.exchange(payload, sentinel=False)
            self.assert_refused(out, 'TRUNCATED')
            self.assertGreaterEqual(out.seconds, FRAME_TIMEOUT - 0.1)
        # A length larger than the body: what follows is read as its body.
        body = msgpack.packb(state)
        out = self.exchange(pack(m.GET_SERVER_STATE, body,
                                 length=len(body) + 20))
        self.assert_refused(out, 'BAD_CHECKSUM')
        self.assert_serving()
        self.valid_round_then_nothing_left()

    def test_frames_out_of_order(self):
        start = {'snapshot': 'n1', 'from_snapshot': 'seed',
                 'size': self.size, 'base_digest': self.seed_digest}
        data = os.urandom(4096)
        update = {'offset': 0, 'data': data,
                  'digest': digest_mod.block_digest(data)}

        def f(type_, body, seq=3, **kw):
            return lambda sid: frames.encode(frames.Frame(
                type_, body, session=kw.get('session', sid), seq=seq,
                flags=kw.get('flags', 0)))

        # Before the HANDSHAKE: refused, and the connection closed.
        for type_, body in ((m.INIT_SESSION, {'disk': self.spec,
                                              'shipment': self.shipment}),
                            (m.REPLICATION_UPDATE, update),
                            (m.GET_SERVER_STATE, {})):
            out = self.exchange(f(type_, body), shake=False)
            self.assert_refused(out, 'BAD_STATE')
            self.assertTrue(out.closed, out)
        # After it: refused, and the connection still serves.
        cases = [
            # Data and a commit with no session.
            (f(m.REPLICATION_UPDATE, update, session=0), False,
             'STALE_SESSION'),
            (f(m.REPLICATION_COMPLETE, {'snapshot': 'n1'}, session=0), False,
             'STALE_SESSION'),
            (f(m.REPLICATION_UPDATE, update, session=123456789), False,
             'STALE_SESSION'),
            # A session, but no START: no data, no zeros, no commit.
            (f(m.REPLICATION_UPDATE, update), True, 'BAD_STATE'),
            (f(m.REPLICATION_ZERO, {'offset': 0, 'length': MiB}), True,
             'BAD_STATE'),
            (f(m.REPLICATION_COMPLETE, {'snapshot': 'n1'}), True,
             'BAD_STATE'),
            (f(m.REPLICATION_COMPLETE, {'snapshot': 'n1', 'final': True,
                                        'image_digest': 'ab'}), True,
             'BAD_STATE'),
            (f(m.REPLICATION_CHECKSUM, {'offset': 0, 'block': 4096,
                                        'digests': [b'\0' * 32]}), True,
             'BAD_STATE'),
            (f(m.CTL_GROUP_PREPARE_AND_COMMIT, {
                'group': 'g', 'phase': 'commit', 'disks': [self.spec],
                'snapshot': 'n1'}), True, 'BAD_STATE'),
            # A START without proof of N-1, or from a snapshot not here.
            (f(m.REPLICATION_START, dict(start, base_digest='0' * 64)), True,
             'BASE_DIFFERS'),
            (f(m.REPLICATION_START, {'snapshot': 'n1', 'size': self.size,
                                     'from_snapshot': 'seed'}), True,
             'BASE_UNPROVEN'),
            (f(m.REPLICATION_START, dict(start, from_snapshot='nope')), True,
             'BAD_STATE'),
            # A full copy over an image that exists.
            (f(m.REPLICATION_START, {'snapshot': 'n1', 'size': self.size}),
             True, 'NOT_ALLOWED'),
            # Reads with nothing open.
            (f(m.READ_NEXT, {}), False, 'BAD_STATE'),
            (f(m.READ_CHANGES, {'offset': 0}), False, 'BAD_STATE'),
            (f(m.READ_DIGEST, {'algorithm': 'blake3'}), False, 'BAD_STATE'),
            # A second HANDSHAKE, messages a terminal does not serve, a
            # response where a request belongs.
            (f(m.HANDSHAKE, {'version': 1, 'id': 'a', 'peer': 'b'}), False,
             'NOT_ALLOWED'),
            (f(m.EV_REPLICATION_COMPLETE, {'disk': self.spec,
                                           'snapshot': 'n1'}), False,
             'NOT_ALLOWED'),
            (f(m.ERROR, {'code': 'BAD_STATE', 'message': 'x'}), False,
             'NOT_ALLOWED'),
            (f(m.GET_SERVER_STATE, {'state': 's', 'disks': []},
               flags=frames.FLAG_RESPONSE), False, 'BAD_STATE'),
            # Sessions of what this terminal did not import.
            (f(m.INIT_SESSION, {'disk': 'vms/other', 'shipment':
                                self.shipment}), False, 'NOT_ALLOWED'),
            (f(m.INIT_SESSION, {'disk': self.spec, 'shipment': '../..'}),
             False, 'NOT_ALLOWED'),
            (f(m.INIT_SESSION, {'disk': self.spec, 'shipment': self.shipment,
                                'attach': 99999}), False, 'NOT_ALLOWED'),
            (f(m.READ_OPEN, {'disk': self.spec, 'shipment': self.shipment,
                             'snapshot': 'nope'}), False, 'BAD_STATE'),
            (f(m.TRANSFER_CONFIG_FILE, {'name': '../x', 'offset': 0,
                                        'data': b'x', 'last': True}), True,
             'NOT_ALLOWED'),
        ]
        for payload, session, code in cases:
            out = self.exchange(payload, session=session)
            self.assert_refused(out, code)
            self.assertFalse(out.closed, out)
            self.assertTrue(out.answered, out)

        # A proven round given what the image cannot take: an update past
        # its end, a zeroed range past it, an absurd block size; then the
        # source goes away mid-round.
        def round_then(*bodies):
            def payload(sid):
                out = frames.encode(frames.Frame(m.REPLICATION_START, start,
                                                 session=sid, seq=3))
                for i, (type_, body) in enumerate(bodies):
                    out += frames.encode(frames.Frame(type_, body,
                                                      session=sid,
                                                      seq=4 + i))
                return out
            return payload
        past = dict(update, offset=self.size)
        for bodies, code in (
                ([(m.REPLICATION_UPDATE, past)], 'BAD_FIELD'),
                ([(m.REPLICATION_UPDATE, dict(update, offset=(1 << 62)))],
                 'BAD_FIELD'),
                ([(m.REPLICATION_ZERO, {'offset': self.size - 10,
                                        'length': 1 << 40})], 'BAD_FIELD'),
                ([(m.REPLICATION_CHECKSUM, {'offset': 0, 'block': 0,
                                            'digests': []})], 'BAD_FIELD'),
                ([(m.REPLICATION_UPDATE, dict(update, digest=b'\1' * 32))],
                 'DIGEST_MISMATCH'),
                ([(m.REPLICATION_UPDATE, dict(update, zstd=True))],
                 'BAD_FIELD'),
                ([(m.REPLICATION_UPDATE, update),
                  (m.REPLICATION_COMPLETE, {'snapshot': 'n1',
                                            'image_digest': '0' * 64})],
                 'DIGEST_MISMATCH')):
            out = self.exchange(round_then(*bodies), session=True)
            self.assert_refused(out, code)
        self.assert_serving()
        self.valid_round_then_nothing_left()

    def test_mutations_of_valid_frames(self):
        data = b'fuzz' * 1024
        templates = [
            (m.GET_SERVER_STATE, {'shipment': self.shipment,
                                  'disks': [self.spec]}),
            (m.INIT_SESSION, {'disk': self.spec, 'shipment': self.shipment}),
            (m.REPLICATION_START, {'snapshot': 'n1', 'from_snapshot': 'seed',
                                   'size': self.size}),
            (m.REPLICATION_UPDATE, {'offset': 0, 'data': data,
                                    'digest': digest_mod.block_digest(data)}),
            (m.REPLICATION_ZERO, {'offset': 0, 'length': 65536}),
            (m.REPLICATION_CHECKSUM, {'offset': 0, 'block': 65536,
                                      'digests': [b'\0' * 32]}),
            (m.REPLICATION_COMPLETE, {'snapshot': 'n1', 'final': True}),
            (m.TRANSFER_CONFIG_FILE, {'name': 'vm.xml', 'offset': 0,
                                      'data': b'<domain/>', 'last': False}),
            (m.READ_OPEN, {'disk': self.spec, 'shipment': self.shipment,
                           'snapshot': 'seed'}),
            (m.READ_CHANGES, {'offset': 0}),
            (m.READ_DIGEST, {'algorithm': 'blake3'}),
            (m.CTL_GROUP_PREPARE_AND_COMMIT, {
                'group': 'g', 'phase': 'prepare', 'disks': [self.spec],
                'snapshot': 'n1'}),
            (m.HANDSHAKE, {'version': 1, 'id': 'x', 'peer': 'y'}),
        ]
        values = st.one_of(
            st.integers(min_value=-(1 << 63), max_value=(1 << 64) - 1),
            st.sampled_from([0, 1, self.size, self.size - 1, 1 << 62,
                             (1 << 63) - 1, 1 << 63, -1]),
            st.text(max_size=40), st.binary(max_size=64), st.booleans(),
            st.none(), st.floats(allow_nan=True),
            st.lists(st.one_of(st.text(max_size=8), st.integers(-9, 1 << 40)),
                     max_size=4),
            st.dictionaries(st.text(max_size=4), st.integers(-9, 9),
                            max_size=2),
            st.sampled_from(['seed', 'n1', self.spec, self.shipment, '',
                             '../../etc', 'x' * 4097]))
        header_fields = ('magic', 'version', 'type', 'flags', 'session',
                         'seq', 'length')

        @st.composite
        def frame(draw):
            type_, body = draw(st.sampled_from(templates))
            body = dict(body)
            kind = draw(st.sampled_from(['field', 'drop', 'add', 'header',
                                         'bytes', 'cut', 'valid']))
            header = {'type': type_, 'seq': 3}
            if kind == 'field':
                body[draw(st.sampled_from(sorted(body)))] = draw(values)
            elif kind == 'drop' and body:
                del body[draw(st.sampled_from(sorted(body)))]
            elif kind == 'add':
                body[draw(st.sampled_from(sorted(m.FIELDS) + ['x']))] = \
                    draw(values)
            elif kind == 'header':
                field = draw(st.sampled_from(header_fields))
                header[field] = draw({
                    'magic': st.binary(min_size=4, max_size=4),
                    'version': st.integers(0, 255),
                    'type': st.integers(0, 255),
                    'flags': st.integers(0, 0xFFFF),
                    'session': st.integers(0, (1 << 64) - 1),
                    'seq': st.integers(0, (1 << 64) - 1),
                    'length': st.one_of(st.integers(0, 200),
                                        st.integers(0, 0xFFFFFFFF)),
                }[field])
            raw = msgpack.packb(body, use_bin_type=True)

            def payload(sid):
                h = dict(header)
                h.setdefault('session', sid)
                out = pack(h.pop('type'), raw, **h)
                if kind == 'bytes':
                    out = bytearray(out)
                    for at, value in draw_flips:
                        out[at % len(out)] = value
                    out = bytes(out)
                elif kind == 'cut':
                    out = out[:cut % len(out)] + tail
                return out
            draw_flips = draw(st.lists(st.tuples(st.integers(0, 1 << 16),
                                                 st.integers(0, 255)),
                                       min_size=1, max_size=4))
            cut = draw(st.integers(0, 1 << 16))
            tail = draw(st.binary(max_size=16))
            return payload

        @FUZZ
        @given(st.lists(frame(), min_size=1, max_size=3), st.booleans())
        def fuzz(payloads, session):
            self.exchange(lambda sid: b''.join(p(sid) for p in payloads),
                          session=session)
            if self.cases % 25 == 0:
                self.assertIsNone(self.proc.poll(), 'lsrp-server died')

        started = time.monotonic()
        fuzz()
        summary = 'frame fuzz: %d cases in %.1f s: %s' % (
            self.cases, time.monotonic() - started,
            ', '.join('%s %d' % kv for kv in sorted(self.seen.items())))
        if os.environ.get('FEDEX_FUZZ_REPORT'):
            with open(os.environ['FEDEX_FUZZ_REPORT'], 'a') as f:
                f.write(summary + '\n')
        # The mutations reached the decoder, the schemas and the handlers
        # (a fuzzer that only ever hits one check would pass for nothing).
        self.assertGreaterEqual(self.cases, EXAMPLES, summary)
        for outcome in ('BAD_CHECKSUM', 'BAD_FIELD', 'BAD_STATE',
                        'answered'):
            self.assertIn(outcome, self.seen, summary)
        self.assert_serving()
        self.valid_round_then_nothing_left()

    def test_unauthenticated_and_unencrypted_peers_are_refused(self):
        hello = frames.encode(frames.Frame(m.HANDSHAKE, {
            'version': 1, 'id': 'x', 'peer': 'terminal-site-a'}, seq=1))
        state = frames.encode(frames.Frame(m.GET_SERVER_STATE, {
            'shipment': self.shipment, 'disks': [self.spec]}, seq=2))
        # No TLS at all: LSRP in clear text.
        p = Peer(self.port, None, None)
        p.send(hello + state)
        try:
            out = p.collect(until_seq=2)
        except exception.ProtocolError as e:
            self.fail('clear text answered with LSRP-like bytes: %s' % e)
        self.assertEqual([], out.frames)
        self.assertTrue(out.closed)
        p.close()
        # TLS, but no client certificate; a certificate of another CA.
        _, ca, _, _ = self.terminal('site-a')
        bare = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca)
        bare.minimum_version = ssl.TLSVersion.TLSv1_3
        pki = os.path.join(self.work, 'other-pki')
        tls.make_ca(pki)
        tls.make_cert(pki, 'terminal-site-a')
        other = tls.client_context(ca, os.path.join(pki, 'terminal-site-a.pem'),
                                   os.path.join(pki, 'terminal-site-a.key'))
        for context in (bare, other):
            try:
                p = self.peer(shake=False, context=context)
            except (ssl.SSLError, ConnectionError, OSError):
                continue    # refused during the handshake
            p.send(hello + state)
            out = p.collect(until_seq=2)
            self.assertEqual([], out.frames)
            self.assertTrue(out.closed)
        # Each refusal is logged, with the peer's address and why.
        deadline = time.monotonic() + MARGIN
        while (self.read_log().count('TLS handshake failed') < 3
               and time.monotonic() < deadline):
            time.sleep(0.1)
        log = self.read_log()
        self.assertEqual(3, log.count('TLS handshake failed'), log)
        self.assertIn('WRONG_VERSION_NUMBER', log)
        self.assertIn('peer did not return a certificate', log)
        self.assert_serving()
