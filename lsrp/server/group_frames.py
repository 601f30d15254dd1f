"""CTL_GROUP_PREPARE_AND_COMMIT (C4): a group's rounds made visible at once.

A mixin of :class:`lsrp.server.handler.PeerHandler`; the group log is
``lsrp.server.groups``.
"""

import asyncio

from lsrp import exception
from lsrp.protocol import sessions as sessions_mod


class GroupFrames(object):
    """CTL_GROUP_PREPARE_AND_COMMIT of one connection."""

    async def _group(self, frame, queued):
        """C4: a group's round becomes visible on all its disks at once."""
        body = frame.body
        group, phase, snapshot = body['group'], body['phase'], body['snapshot']
        if phase not in ('prepare', 'commit'):
            raise exception.ProtocolError(
                code='BAD_FIELD', reason='group phase %r: prepare or commit'
                % phase[:32])
        registry = self.server.sessions
        members = {}
        for disk in body['disks']:
            session = registry.current(disk)
            shared = self.server.shared.get(session)
            if (shared is None or shared.sink is None
                    or shared.peer != self.peer):
                raise exception.ProtocolError(
                    code='BAD_STATE', reason='group %s: %s has no session of '
                    '%s here' % (group, disk, self.peer))
            state = registry.state(disk)
            if (state == sessions_mod.PREPARED and shared.group == group
                    and shared.sink.prepared == snapshot):
                members[disk] = (session, shared)
            elif not (state == sessions_mod.COMPLETE and await
                      self._sink_op(shared, shared.sink.has_snapshot,
                                    snapshot)):
                # (COMPLETE with N: committed by an earlier attempt.)
                raise exception.ProtocolError(
                    code='BAD_STATE', reason='group %s: %s is %s, not '
                    'prepared for %s' % (group, disk, state, snapshot))
        for _, shared in members.values():
            shared.busy += 1     # a take-over waits for the commit
        try:
            if phase == 'prepare':
                await self._in_thread(self.server.groups.prepare, group,
                                      snapshot, list(members))
            else:
                pending = await self._in_thread(
                    self.server.groups.commit, group, snapshot,
                    {d: s.sink for d, (_, s) in members.items()},
                    bool(body.get('defer')))
                if pending:
                    self.server.write_records(group, snapshot, pending)
                for disk, (session, _) in members.items():
                    registry.move(disk, session, sessions_mod.COMPLETE)
                if body.get('release'):
                    # At once: each close waits for its lock's release.
                    await asyncio.gather(*[
                        self._in_thread(shared.sink.release)
                        for _, shared in members.values()
                        if hasattr(shared.sink, 'release')])
        finally:
            for _, shared in members.values():
                shared.busy -= 1
        await self.conn.respond(frame, {'phase': phase,
                                        'disks': sorted(body['disks'])})
