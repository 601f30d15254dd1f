"""Group commits (C4): snapshot N on every disk of a group, or on none.

A VM's disks are snapshotted together at the source; at the destination
their round N must become visible together too, or a cut-over could start
from disks of different rounds. Each disk's REPLICATION_COMPLETE with a
``group`` only prepares (applied, flushed, digest checked); then:

* ``prepare`` records the group in ``<state_dir>/groups/<group>.json``;
* ``commit`` records ``committing`` before the first snapshot and removes
  the record after the last.

A terminal killed in between finds the record when it starts again.
``committing`` is finished: every disk's data was applied and flushed at
prepare, and no session can write a prepared disk, so taking the missing
snapshots is all that is left. ``prepared`` is dropped: nothing was
committed, the heads differ from N-1, and the next round's START rolls
them back.

A cutover's commit (``defer``) takes no snapshot: its disks' rounds end at
once and the group is ``recording`` until their records, written after the
answer (:meth:`GroupLog.record`), are complete. A terminal killed meanwhile
must not snapshot the heads (the resumed guest writes them): the
unfinished records are removed instead (``lsrp.server.records``).
"""

from concurrent import futures
import json
import os

from oslo_log import log as logging

from lsrp import fileutils
from lsrp.rbd import snaprecord
from lsrp.server import names
from lsrp.server import records as records_mod

LOG = logging.getLogger(__name__)


class GroupLog(object):

    def __init__(self, state_dir):
        self.dir = os.path.join(state_dir, 'groups')

    def _path(self, group):
        return os.path.join(self.dir, names.check('group', group) + '.json')

    def _save(self, group, snapshot, disks, state, sources=None):
        os.makedirs(self.dir, exist_ok=True)
        fileutils.write_atomic(self._path(group), json.dumps({
            'snapshot': snapshot, 'disks': sorted(disks),
            'state': state, 'sources': sources or {}}))

    def prepare(self, group, snapshot, disks):
        self._save(group, snapshot, disks, 'prepared')

    def commit(self, group, snapshot, sinks, defer=False):
        """Take ``snapshot`` with every sink of ``sinks`` (disk -> sink).

        ``defer``: the records of the disks that have one instead; returns
        them (disk -> record) for :meth:`record`, and the group stays
        ``recording`` until then.
        """
        # The source's identity of N per disk: a commit finished at restart
        # records it with N, as the sinks do (the proof of N-1).
        self._save(group, snapshot, sinks,
                   'recording' if defer else 'committing',
                   {d: getattr(s, 'target_id', None)
                    for d, s in sinks.items()})
        # In parallel: each snapshot waits for its image's flush and the
        # OSD; one after the other they lengthen the cut-over pause.
        with futures.ThreadPoolExecutor(max(1, len(sinks))) as pool:
            done = {d: pool.submit(sink.commit, snapshot, defer)
                    if defer else pool.submit(sink.commit, snapshot)
                    for d, sink in sinks.items()}
            pending = {d: f.result() for d, f in done.items()}
        pending = {d: r for d, r in pending.items() if r is not None}
        if not pending:
            os.unlink(self._path(group))
        LOG.info('group %s: %s %s', group, snapshot, '; '.join(
            '%s on %s' % (what, ', '.join(sorted(disks))) for what, disks in (
                ('taken', [d for d in sinks if d not in pending]),
                ('recorded after the answer', list(pending))) if disks))
        return pending

    def record(self, group, pending):
        """Write the records a deferred commit returned, then forget it.

        A record that fails is removed (never left looking complete).
        """
        with futures.ThreadPoolExecutor(max(1, len(pending))) as pool:
            done = {d: pool.submit(records_mod.write, *rec)
                    for d, rec in pending.items()}
        failed = {}
        for disk, future in done.items():
            try:
                future.result()
            except Exception as e:
                failed[disk] = e
                cluster, pool_name, name, snapshot = pending[disk][:4]
                try:
                    with cluster.pool(pool_name) as p:
                        records_mod.remove(p, name, snapshot)
                except Exception as e2:
                    LOG.warning('%s: %s', disk, e2)
        os.unlink(self._path(group))
        for disk, e in sorted(failed.items()):
            LOG.error('group %s: the record of %s at %s could not be '
                      'written (removed): %s', group, disk,
                      pending[disk][3], e)
        if not failed:
            LOG.info('group %s: records of %s complete', group,
                     ', '.join(sorted(pending)))
        return failed

    def recover(self, cluster):
        """Finish the commits a killed terminal left; drop the rest.

        Returns the groups rolled forward.
        """
        finished = []
        for path, entry in fileutils.json_entries(self.dir):
            group = os.path.basename(path)[:-len('.json')]
            if entry['state'] == 'recording':
                records_mod.recover(cluster, entry['disks'],
                                    entry['snapshot'])
            elif entry['state'] == 'committing':
                for spec in entry['disks']:
                    pool_name, image = spec.split('/', 1)
                    with cluster.pool(pool_name) as pool:
                        with pool.open_image(image) as img:
                            if not img.snapshot_exists(entry['snapshot']):
                                # The killed terminal may hold the lock.
                                img.break_locks()
                                img.create_snapshot(entry['snapshot'])
                                source = entry.get('sources', {}).get(spec)
                                if source and ':' not in source:
                                    snaprecord.record(img, entry['snapshot'],
                                                      source)
                LOG.warning('group %s: the commit of %s was cut short; '
                            'finished on %s', group, entry['snapshot'],
                            ', '.join(entry['disks']))
                finished.append(group)
            else:
                LOG.warning('group %s: prepared, never committed; dropped '
                            '(the next round rolls the disks back)', group)
            os.unlink(path)
        return finished
