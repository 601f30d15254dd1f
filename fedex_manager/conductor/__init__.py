"""``fedex-conductor``: runs the migrations' phases, any number at once.

Its parts, in one oslo.service process (:mod:`.service`):

* a taskflow conductor (non-blocking, ``[conductor] max_jobs`` at once)
  claiming jobs from the jobboard on ZooKeeper (:mod:`.jobboard`: the
  poster, the claims and the migrations' locks);
* an RPC server on ``fedex-manager`` (:mod:`.endpoint`): the terminals'
  progress, completion and heartbeats, written into the database
  (:mod:`.reports`);
* the sweeper (:mod:`.periodics`): periodic jobs, one conductor's at a
  time under a ZooKeeper lock, that post the phase of a migration that has
  no job (its post was lost, or the API could not reach ZooKeeper), start
  keep-warm rounds, automatic cutovers and cleanups after the retention,
  record the couriers' events and more;
* with Nova, a listener of its notifications (:mod:`.notifications`):
  a server deleted during its migration aborts it at once.
"""

from fedex_manager.conductor.service import main  # noqa: F401
