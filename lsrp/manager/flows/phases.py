"""Flow factories, one per phase of a migration.

Module-level functions: taskflow stores the factory's import path in the
flow detail (``engines.save_factory_details``) and any conductor that
claims the job rebuilds the flow from it. The job's store holds only
``migration_id`` and ``generation``.

A phase runs while there is work (snapshots, exports, imports, rounds)
and ends in a state where the migration waits for the outside world:
SEALED (the courier), READY_FOR_CUTOVER (the operator, the window, Nova),
COMPLETED (the retention), FAILED (an operator). So no flow, thread or job
claim is held for the days a shipment travels: the delivery event posts
the next phase.
"""

from taskflow.patterns import linear_flow

from lsrp.manager.flows import tasks


def prepare():
    return linear_flow.Flow('prepare').add(
        tasks.BeginPrepare(), tasks.Snapshot(), tasks.Pack(), tasks.Export(),
        tasks.Consolidate(), tasks.Seal(), tasks.Dispatch())


def receive():
    return linear_flow.Flow('receive').add(
        tasks.BeginReceive(), tasks.Custody(), tasks.Import())


def catchup():
    return linear_flow.Flow('catchup').add(
        tasks.BeginCatchUp(), tasks.Rounds())


def keep_warm():
    return linear_flow.Flow('keep_warm').add(
        tasks.BeginKeepWarm(), tasks.KeepWarm())


def cutover():
    return linear_flow.Flow('cutover').add(
        tasks.BeginCutover(), tasks.FinalDelta())


def cleanup():
    return linear_flow.Flow('cleanup').add(
        tasks.BeginCleanup(), tasks.EraseAndClean())


def abort():
    return linear_flow.Flow('abort').add(
        tasks.BeginAbort(), tasks.StopOperations(), tasks.CleanUpAbort())


FACTORIES = {'prepare': prepare, 'receive': receive, 'catchup': catchup,
             'keep_warm': keep_warm, 'cutover': cutover,
             'cleanup': cleanup, 'abort': abort}
