"""Property-based fuzz of the terminal's state machine, over real sockets.

Hypothesis drives random sequences of well-formed and malformed requests
from several connections into a real ``TerminalServer`` whose sink is a
recorder (the functional tests run the same server on Ceph). Whatever the
sequence, the server answers every request or closes the connection after
an ERROR frame, keeps serving new connections, and writes only through the
current session of a disk whose round was started.
"""

import asyncio
import json
import os

import fixtures
from hypothesis import example
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import testtools

from lsrp import digest as digest_mod
from lsrp import exception
from lsrp.protocol import connection as connection_mod
from lsrp.protocol import frames
from lsrp.protocol import messages as m
from lsrp.server import service

DISKS = ['vms/a', 'vms/b']
SIZE = 1 << 20


class RecordingSink(object):
    """Stands for the RBD image; notes every write and what allowed it."""

    parallel_streams = True
    durable_progress = False
    log = None   # set per example: [(disk, op, started)]

    def __init__(self, cluster, disk, shipment, state_dir=None):
        self.disk = disk
        self.snapshots = {'seed'}
        self.started = None
        self.prepared = None

    def info(self):
        return SIZE, sorted(self.snapshots)[-1]

    def start(self, snapshot, from_snapshot, size, resume=0, image=None,
              proof=None):
        if snapshot in self.snapshots:
            return size
        if from_snapshot not in self.snapshots:
            raise exception.ProtocolError(code='BAD_STATE', reason='no base')
        self.started = snapshot
        return 0

    def _note(self, op):
        self.log.append((self.disk, op, self.started))

    def write(self, offset, data):
        self._note('write')

    def zero(self, offset, length):
        self._note('zero')

    def differing(self, offset, block, digests):
        return list(range(len(digests)))

    def complete(self, snapshot, digest=None, final=False):
        self._note('complete')
        self.snapshots.add(snapshot)
        self.started = None

    def prepare(self, snapshot, digest=None):
        if self.started != snapshot:
            raise exception.ProtocolError(code='BAD_STATE', reason='no round')
        self.prepared = snapshot

    def has_snapshot(self, snapshot):
        return snapshot in self.snapshots

    def commit(self, snapshot):
        self._note('commit')
        self.snapshots.add(snapshot)
        self.started = self.prepared = None

    def abort(self):
        self.started = None

    def close(self):
        pass


def _data(payload, good):
    digest = digest_mod.block_digest(payload if good else payload + b'x')
    return {'offset': 4096, 'data': payload, 'digest': digest}


# One step: (connection 0-2, what to send, a choice for its fields: which
# disk, which of the sessions issued so far - 0 the newest - and which
# snapshot). The session-making steps come more often than the rest.
ACTIONS = (['init'] * 4 + ['start'] * 4 + ['update'] * 4 + [
    'attach', 'bad_update', 'zero', 'checksum', 'complete', 'group_complete',
    'prepare', 'commit', 'state', 'config', 'unknown_disk', 'garbage',
    'reconnect'])
STEPS = st.lists(st.tuples(st.integers(0, 2), st.sampled_from(ACTIONS),
                           st.integers(0, 2)), min_size=1, max_size=30)
# A dead source's late frame: a newer session of the same disk, started,
# then an update through the older one (it must be refused).
STALE = [(0, 'init', 0), (0, 'start', 0), (1, 'init', 0), (1, 'start', 0),
         (0, 'update', 1)]
STALE_SAME_CONNECTION = [(0, 'init', 0), (0, 'start', 0), (0, 'init', 0),
                         (0, 'start', 0), (0, 'update', 1)]


# Seconds an answer may take before the server is taken as hung: a
# loopback round trip, but CI's loaded machine once took over 5.
ANSWER_TIMEOUT = 30


class TestServerStateMachine(testtools.TestCase):

    def setUp(self):
        super().setUp()
        # The refusals the fuzzing provokes are logged: kept with the test
        # (shown if it fails), not printed.
        self.useFixture(fixtures.FakeLogger())
        self.useFixture(fixtures.MonkeyPatch(
            'lsrp.server.sinks.RbdImageSink', RecordingSink))

    @settings(max_examples=300, deadline=None)
    @example(steps=STALE)
    @example(steps=STALE_SAME_CONNECTION)
    @given(steps=STEPS)
    def test_any_sequence(self, steps):
        with fixtures.TempDir() as tmp:
            state_dir = tmp.path
            os.makedirs(os.path.join(state_dir, 's'))
            with open(os.path.join(state_dir, 's', 'authorized.json'),
                      'w') as f:
                json.dump({'images': DISKS}, f)
            RecordingSink.log = []
            asyncio.run(self._run(state_dir, steps))

    async def _run(self, state_dir, steps):
        # A cluster that is not None: sessions reach the (recording) RBD
        # sink instead of being refused as "devices only".
        server = service.TerminalServer('t', object(), state_dir, None,
                                        '127.0.0.1', 0, resume_timeout=0)
        errors = []
        asyncio.get_running_loop().set_exception_handler(
            lambda loop, context: errors.append(context))
        await server.start()
        conns = [None, None, None]
        sessions = []          # every id the server issued, in order
        owner, latest = {}, {}  # session -> disk; disk -> newest session
        try:
            for index, action, choice in steps:
                if conns[index] is None or action == 'reconnect':
                    if conns[index] is not None:
                        await conns[index].close()
                    conns[index] = await self._connect(server.port)
                conn = conns[index]
                session = sessions[-1 - choice] if len(sessions) > choice \
                    else choice
                disk = DISKS[choice % 2]
                try:
                    answer = await self._step(conn, action, disk, session,
                                              choice)
                except exception.RemoteError as e:
                    self.assertIn(e.code, m.ERROR_CODES)
                    continue
                except (exception.ConnectionClosed, ConnectionError):
                    conns[index] = None   # closed after its ERROR frame
                    continue
                if action == 'init':
                    sessions.append(answer['session'])
                    owner[answer['session']] = disk
                    latest[disk] = answer['session']
                if action in ('update', 'zero'):
                    # Applied: so it came through the disk's newest session.
                    self.assertEqual(latest[owner[session]], session)
                self.assertNotEqual('bad_update', action)
            # Still serving: a new connection is answered.
            conn = await self._connect(server.port)
            state = await conn.request(m.GET_SERVER_STATE, {})
            self.assertEqual('ready', state['state'])
            await conn.close()
        finally:
            for conn in conns:
                if conn is not None:
                    await conn.close()
            await server.stop()
        self.assertEqual([], errors)
        # Writes happened only while a round of that disk was started.
        for disk, op, round_ in RecordingSink.log:
            if op in ('write', 'zero', 'complete'):
                self.assertIsNotNone(round_, (disk, op))

    async def _connect(self, port):
        reader, writer = await asyncio.open_connection('127.0.0.1', port)
        conn = connection_mod.Connection(reader, writer, 'server')
        conn.start_receiving()
        await conn.request(m.HANDSHAKE, {'version': frames.VERSION,
                                         'id': 'x', 'peer': 'fuzz'})
        return conn

    async def _step(self, conn, action, disk, session, choice):
        snap = 'n%d' % choice
        requests = {
            'init': (m.INIT_SESSION, {'disk': disk, 'shipment': 's'}, 0),
            'attach': (m.INIT_SESSION, {'disk': disk, 'shipment': 's',
                                        'attach': session}, 0),
            'unknown_disk': (m.INIT_SESSION, {'disk': 'vms/zz',
                                              'shipment': 's'}, 0),
            'start': (m.REPLICATION_START, {
                'snapshot': snap, 'from_snapshot': 'seed', 'size': SIZE},
                session),
            'update': (m.REPLICATION_UPDATE, _data(b'd' * 512, True),
                       session),
            'bad_update': (m.REPLICATION_UPDATE, _data(b'd' * 512, False),
                           session),
            'zero': (m.REPLICATION_ZERO, {'offset': 0, 'length': 512},
                     session),
            'checksum': (m.REPLICATION_CHECKSUM, {
                'offset': 0, 'block': 65536,
                'digests': [bytes(32)] * (choice + 1)}, session),
            'complete': (m.REPLICATION_COMPLETE, {'snapshot': snap},
                         session),
            'group_complete': (m.REPLICATION_COMPLETE, {
                'snapshot': snap, 'group': 'g'}, session),
            'prepare': (m.CTL_GROUP_PREPARE_AND_COMMIT, {
                'group': 'g', 'phase': 'prepare', 'disks': DISKS[:choice],
                'snapshot': snap}, 0),
            'commit': (m.CTL_GROUP_PREPARE_AND_COMMIT, {
                'group': 'g', 'phase': 'commit', 'disks': DISKS[:choice],
                'snapshot': snap}, 0),
            'state': (m.GET_SERVER_STATE, {}, 0),
            'config': (m.TRANSFER_CONFIG_FILE, {
                'name': 'vm.xml', 'offset': 0, 'data': b'<domain/>',
                'last': True}, session),
        }
        if action == 'garbage':
            conn.writer.write(b'NOT A FRAME' * (choice + 1) + bytes(40))
            await conn.writer.drain()
            # The server answers with an ERROR frame and closes.
            await asyncio.wait_for(conn._receiver, ANSWER_TIMEOUT)
            raise exception.ConnectionClosed(peer='server', detail='')
        if action == 'reconnect':
            return None
        type_, body, sid = requests[action]
        return await asyncio.wait_for(conn.request(type_, body, sid),
                                      ANSWER_TIMEOUT)
