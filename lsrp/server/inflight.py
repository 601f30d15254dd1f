"""Rounds under way on this terminal, remembered across a ``kill -9``.

An RBD image sink writes ``<state_dir>/rounds/<pool>+<image>.json`` (N-1 and
N) before the first write of a round, and removes it once snapshot N is
taken or the head is rolled back. A terminal that starts and finds one
rolls that image's head back to N-1 at once, unless N exists (the round
was committed): so a destination head is a round snapshot's content
whenever no round is under way, not only after the next round begins.
"""

import json
import os

from oslo_log import log as logging

from lsrp import exception
from lsrp import fileutils

LOG = logging.getLogger(__name__)


class InFlight(object):

    def __init__(self, state_dir):
        self.dir = os.path.join(state_dir, 'rounds')

    def _path(self, disk):
        return os.path.join(self.dir, disk.replace('/', '+') + '.json')

    def begin(self, disk, base, snapshot):
        os.makedirs(self.dir, exist_ok=True)
        fileutils.write_atomic(self._path(disk), json.dumps({
            'disk': disk, 'base': base, 'snapshot': snapshot}).encode())

    def end(self, disk):
        try:
            os.unlink(self._path(disk))
        except FileNotFoundError:
            pass

    def recover(self, cluster):
        """Roll back every image a killed terminal left mid-round.

        Returns the disks rolled back.
        """
        rolled = []
        for path, entry in fileutils.json_entries(self.dir):
            disk, base = entry['disk'], entry['base']
            pool_name, image_name = disk.split('/', 1)
            try:
                with cluster.pool(pool_name) as pool:
                    with pool.open_image(image_name) as image:
                        if image.snapshot_exists(entry['snapshot']):
                            pass   # committed: the head is N
                        elif any(True for _ in image.extents(base)):
                            # The killed terminal may hold the lock.
                            image.break_locks()
                            image.rollback_to_snapshot(base)
                            LOG.warning('%s at %s: a round to %s was cut '
                                        'short; head rolled back to %s', disk,
                                        cluster.site, entry['snapshot'], base)
                            rolled.append(disk)
            except (exception.ImageNotFound, exception.SnapshotNotFound):
                LOG.warning('%s at %s: a round to %s was cut short, and the '
                            'image or %s is gone: nothing to roll back', disk,
                            cluster.site, entry['snapshot'], base)
            os.unlink(path)
        return rolled
