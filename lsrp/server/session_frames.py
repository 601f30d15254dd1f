"""INIT_SESSION and GET_SERVER_STATE: a source opens sessions on its disks.

A mixin of :class:`lsrp.server.handler.PeerHandler`, whose connection,
server and helpers its methods use: a session is opened with the sink the
shipment's access list names, attached to by another stream, or takes a
kept or live round of its disk over.
"""

from lsrp import access
from lsrp.device import receiver
from lsrp import exception
from lsrp.server import session as session_mod
from lsrp.server import sinks


class SessionFrames(object):
    """INIT_SESSION and GET_SERVER_STATE of one connection."""

    async def _server_state(self, frame, queued):
        """This connection's disks; the user snapshots of those asked."""
        answer = {'state': 'ready', 'disks': sorted(
            self.server.shared[s].disk for s in self.sessions)}
        if 'disks' in frame.body:
            answer['disks'] = frame.body['disks']
            answer['snapshots'] = [await self._in_thread(
                self._snapshots, frame.body.get('shipment', ''), disk)
                for disk in frame.body['disks']]
        await self.conn.respond(frame, answer)

    async def _init_session(self, frame, queued):
        """A session opened, attached to, or taking a round over."""
        disk, shipment = frame.body['disk'], frame.body['shipment']
        entry = access.check(self.server.state_dir, shipment, disk,
                             self.peer)
        if 'attach' in frame.body:
            session = frame.body['attach']
            shared = self.server.shared.get(session)
            if (shared is None or shared.disk != disk
                    or shared.shipment != shipment):
                raise exception.ProtocolError(
                    code='NOT_ALLOWED', reason='no session %d of %s to '
                    'attach to' % (session, disk))
            # A session taken over since is stale; a current one whose sink
            # is not ready (or gone) cannot take a second stream either.
            self.server.sessions.check(disk, session)
            if shared.sink is None:
                raise exception.ProtocolError(
                    code='NOT_ALLOWED', reason='session %d of %s has no sink '
                    'to attach to' % (session, disk))
            if not shared.sink.parallel_streams:
                raise exception.ProtocolError(
                    code='NOT_ALLOWED', reason='%s is written to devices: one'
                    ' stream, in offset order' % disk)
        else:
            kept = await self.server.take_kept(disk, shipment)
            live = self.server.live_round(disk, shipment)
            session = self.server.sessions.open(disk)
            # Sessions of this disk held by other connections are now stale.
            if live is not None:
                kept = await self.server.take_over(live)
            group = None
            if kept:
                sink, resume, group = kept
            else:
                sink = await self._in_thread(self._new_sink, entry, disk,
                                             shipment)
                resume = 0
            shared = self.server.shared[session] = session_mod.SharedSession(
                disk, sink, shipment, resume, self.peer)
            shared.group = group
        shared.attach(self)
        self.sessions.add(session)
        size, snapshot = await self._in_thread(shared.sink.info)
        body = {'session': session, 'size': size}
        if snapshot:
            body['snapshot'] = snapshot
        await self.conn.respond(frame, body)

    def _new_sink(self, entry, disk, shipment):
        """The sink the shipment's access list names (``lsrp.sink``)."""
        kind = entry.get('sink') or 'rbd'
        make = _SINKS.get(kind)
        if make is None:
            raise exception.ProtocolError(
                code='NOT_ALLOWED', reason='shipment %s sends to a %r sink, '
                'which this terminal does not have' % (shipment, kind))
        return make(self.server, disk, shipment, self.peer)

    def _snapshots(self, shipment, disk):
        """The user snapshots of ``disk`` here, oldest first.

        Checked like INIT_SESSION; none for an image written to devices, or
        absent.
        """
        entry = access.check(self.server.state_dir, shipment, disk, self.peer)
        if entry.get('sink') == 'devices' or self.server.cluster is None:
            return []
        pool_name, name = disk.split('/', 1)
        with self.server.cluster.pool(pool_name) as pool:
            if not pool.image_exists(name):
                return []
            with pool.open_image(name) as image:
                return [s.name for s in image.list_snapshots()
                        if s.namespace == 'user']


def _rbd_sink(server, disk, shipment, peer):
    if server.cluster is None:
        raise exception.ProtocolError(
            code='NOT_ALLOWED', reason='this terminal writes devices '
            'only ([server] rbd_sink is off): no image %s here' % disk)
    return sinks.RbdImageSink(server.cluster, disk, shipment,
                              state_dir=server.state_dir)


def _device_sink(server, disk, shipment, peer):
    if server.key_store is None:
        raise exception.ProtocolError(
            code='NOT_ALLOWED', reason='this terminal has no key '
            'store to write shipment %s with' % shipment)
    return receiver.DeviceSetSink(server.state_dir, server.key_store,
                                  shipment, disk, peer,
                                  **server.device_options)


# The kinds of lsrp.sink.IMPLEMENTATIONS, as access lists name them.
_SINKS = {'rbd': _rbd_sink, 'devices': _device_sink}
