"""Run ``lsrp`` or ``lsrp-server`` and freeze it at a named point.

    python -m tests.functional.crashpoint POINT lsrp catchup ...
    python -m tests.functional.crashpoint POINT lsrp-server ...

At POINT the process prints ``CRASHPOINT POINT`` on stderr and stops there
(the thread that reached it sleeps), so that a test can ``kill -9`` it at a
known place instead of after a guessed delay. The process is the real
program in every other respect. ``none`` freezes nowhere.

Points: ``client-transfer`` (lsrp catchup, once the 3rd data frame of a
round is sent and acknowledged), ``client-after-commit`` (lsrp catchup,
right after the destination took the round's snapshot), ``server-transfer``
(lsrp-server, after 3 data frames are applied), ``server-commit``
(lsrp-server, its group commit recorded, before the snapshot),
``server-record`` (lsrp-server, a cutover's deferred commit answered, before
its records are written), ``import-write`` (lsrp import, after its first
write into the image: there
the process stops itself with SIGSTOP, for the test to break the cluster and
let it go on with SIGCONT).
"""

import sys
import threading
import time

AFTER = 3


def freeze(point):
    sys.stderr.write('CRASHPOINT %s\n' % point)
    sys.stderr.flush()
    while True:
        time.sleep(3600)


def _counting(point, fn):
    count = [0]
    lock = threading.Lock()

    def wrapper(*args, **kw):
        result = fn(*args, **kw)
        with lock:
            count[0] += 1
            if count[0] == AFTER:
                freeze(point)
        return result
    return wrapper


def install(point):
    from lsrp import catchup
    from lsrp.server import groups
    from lsrp.server import handler
    if point == 'client-transfer':
        send = catchup._Stream._send_data

        async def _send_data(self, offset, data):
            await send(self, offset, data)
            self.sender._crash_count = getattr(self.sender,
                                               '_crash_count', 0) + 1
            if self.sender._crash_count == AFTER:
                # Applied and acknowledged by the terminal (a kill with
                # frames still unread there resets the connection, and the
                # kernel drops them: the round would resume at 0), then
                # the whole process stops here: nothing after is sent.
                for _, answered in list(self.acks):
                    await answered
                freeze(point)
        catchup._Stream._send_data = _send_data
    elif point == 'client-after-commit':
        commit = catchup.commit_group

        async def commit_group(*args, **kw):
            await commit(*args, **kw)
            freeze(point)
        catchup.commit_group = commit_group
    elif point == 'server-transfer':
        handler._unpack_and_write = _counting(point,
                                              handler._unpack_and_write)
    elif point == 'server-commit':
        save = groups.GroupLog._save

        def _save(self, group, snapshot, disks, state, *args, **kw):
            save(self, group, snapshot, disks, state, *args, **kw)
            if state == 'committing':
                freeze(point)
        groups.GroupLog._save = _save
    elif point == 'server-record':
        from lsrp.server import records
        records.write = lambda *args, **kw: freeze(point)
    elif point == 'import-write':
        import os
        import signal

        from lsrp.rbd import image
        write = image.Image.write
        aio_write = image.Image.aio_write
        stopped = []

        def stop_once():
            if not stopped:
                stopped.append(True)
                sys.stderr.write('CRASHPOINT %s\n' % point)
                sys.stderr.flush()
                os.kill(os.getpid(), signal.SIGSTOP)

        def stopping_write(self, offset, data):
            write(self, offset, data)
            stop_once()

        # The importer writes with librbd's aio_write: stop once the first
        # write has completed (on librbd's thread: SIGSTOP stops them all).
        def stopping_aio_write(self, offset, data, done):
            def completed(error):
                done(error)
                stop_once()
            aio_write(self, offset, data, completed)
        image.Image.write = stopping_write
        image.Image.aio_write = stopping_aio_write
    elif point != 'none':
        raise SystemExit('unknown crash point %s' % point)


def main():
    point, program, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    install(point)
    if program == 'lsrp':
        from lsrp import cli as entry
    else:
        from lsrp.server import cli as entry
    sys.argv = [program] + args
    sys.exit(entry.main(args))


if __name__ == '__main__':
    main()
