"""A session shared by the streams (connections) that write one round."""


class SharedSession(object):
    """A session's sink, shared by the streams (connections) that use it.

    ``acked`` holds, per stream, the end of the last update it applied. A
    stream's updates come in offset order and are applied one after the
    other, so every change below the smallest of these ends is applied:
    that is the offset a new session resumes from when the streams were
    lost mid-round.
    """

    def __init__(self, disk, sink, shipment, resume=0, peer=None):
        self.disk, self.sink, self.shipment = disk, sink, shipment
        self.peer = peer       # the terminal (certificate name) it serves
        self.group = None      # the group a prepared round waits for
        self.streams = 0
        self.resume = resume   # a kept round may go on from here
        self.offset = 0        # where the current round started
        self.size = None       # the image's size in the current round
        self.acked = {}
        # A request of the round failed (a bad digest...): what came after
        # it may be applied while it is not, so no offset is safe.
        self.failed = False
        self.busy = 0          # sink operations running in threads

    def attach(self, stream):
        self.streams += 1
        self.acked[stream] = self.offset

    def started(self, offset):
        self.offset = offset
        self.acked = dict.fromkeys(self.acked, offset)
        self.failed = False

    def frontier(self):
        """Where a new session may resume this round, or None."""
        if self.failed:
            return None
        return min(self.acked.values(), default=self.offset)
