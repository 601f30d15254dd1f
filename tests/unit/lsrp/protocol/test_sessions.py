"""Sessions: ids only increase, even across restarts; stale ones refused."""

import os

import fixtures
from hypothesis import settings
from hypothesis import stateful
from hypothesis import strategies as st
import testtools

from lsrp import exception
from lsrp.protocol import sessions


class TestSessions(testtools.TestCase):

    def setUp(self):
        super().setUp()
        self.path = os.path.join(self.useFixture(fixtures.TempDir()).path,
                                 'sessions.json')

    def test_dead_source_frames_are_refused(self):
        reg = sessions.SessionRegistry(self.path)
        old = reg.open('disk0')
        reg.move('disk0', old, sessions.REPLICATING)
        new = reg.open('disk0')   # source A died; source B resumes
        self.assertGreater(new, old)
        e = self.assertRaises(exception.StaleSession, reg.check, 'disk0', old)
        self.assertEqual('STALE_SESSION', e.code)
        reg.check('disk0', new)

    def test_ids_survive_a_restart(self):
        first = sessions.SessionRegistry(self.path).open('disk0')
        again = sessions.SessionRegistry(self.path).open('disk0')
        self.assertGreater(again, first)

    def test_ids_name_one_disk(self):
        reg = sessions.SessionRegistry(self.path)
        a, b = reg.open('disk0'), reg.open('disk1')
        self.assertNotEqual(a, b)
        self.assertRaises(exception.StaleSession, reg.check, 'disk1', a)

    def test_bad_transition(self):
        reg = sessions.SessionRegistry(self.path)
        s = reg.open('disk0')
        self.assertRaises(exception.InvalidState, reg.move, 'disk0', s,
                          sessions.COMPLETE)


class SessionMachine(stateful.RuleBasedStateMachine):
    """Random opens, moves, checks and restarts against a simple model."""

    def __init__(self):
        super().__init__()
        self.dir = fixtures.TempDir()
        self.dir.setUp()
        self.path = os.path.join(self.dir.path, 's.json')
        self.reg = sessions.SessionRegistry(self.path)
        self.issued = {}     # disk -> all ids issued
        self.current = {}    # disk -> (id, state)

    disks = st.sampled_from(['d0', 'd1'])

    @stateful.rule(disk=disks)
    def open(self, disk):
        state = self.current.get(disk, (0, sessions.IDLE))[1]
        if (state, sessions.SESSION) not in sessions._TRANSITIONS:
            return
        sid = self.reg.open(disk)
        assert all(sid > old for old in self.issued.get(disk, []))
        self.issued.setdefault(disk, []).append(sid)
        self.current[disk] = (sid, sessions.SESSION)

    @stateful.rule(disk=disks, new=st.sampled_from(
        [sessions.SESSION, sessions.REPLICATING, sessions.PREPARED,
         sessions.COMPLETE]),
        stale=st.booleans())
    def move(self, disk, new, stale):
        sid, state = self.current.get(disk, (0, sessions.IDLE))
        older = [i for i in self.issued.get(disk, []) if i != sid]
        use = older[-1] if stale and older else sid
        allowed = (use == sid and sid != 0
                   and (state, new) in sessions._TRANSITIONS)
        try:
            self.reg.move(disk, use, new)
        except (exception.StaleSession, exception.InvalidState):
            assert not allowed
        else:
            assert allowed
            self.current[disk] = (sid, new)

    @stateful.rule()
    def restart(self):
        # A restarted sink forgets live sessions but never reuses an id.
        self.reg = sessions.SessionRegistry(self.path)
        self.current = {}

    def teardown(self):
        self.dir.cleanUp()


TestSessionMachine = SessionMachine.TestCase
TestSessionMachine.settings = settings(max_examples=60,
                                       stateful_step_count=30)
