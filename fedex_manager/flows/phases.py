"""Flow factories, one per phase of a migration.

Module-level functions: taskflow stores the factory's import path in the
flow detail (``engines.save_factory_details``) and any conductor that
claims the job rebuilds the flow from it. The job's store holds only
``migration_id`` and ``generation``. The logbook keeps each task's
state under its name (``<phase>.<class>``, e.g. ``prepare.Snapshot``),
not its module: the factories' paths and the tasks' names must stay as
they are for a flow saved by an older release to resume.

A phase runs while there is work (snapshots, exports, imports, rounds)
and ends in a state where the migration waits for the outside world:
SEALED (the courier), READY_FOR_CUTOVER (the operator, the window, Nova),
COMPLETED (the retention), FAILED (an operator). So no flow, thread or job
claim is held for the days a shipment travels: the delivery event posts
the next phase.
"""

from taskflow.patterns import linear_flow

from fedex_manager.flows.tasks import abort as abort_tasks
from fedex_manager.flows.tasks import catchup as catchup_tasks
from fedex_manager.flows.tasks import cleanup as cleanup_tasks
from fedex_manager.flows.tasks import cutover as cutover_tasks
from fedex_manager.flows.tasks import prepare as prepare_tasks
from fedex_manager.flows.tasks import receive as receive_tasks
from fedex_manager.flows.tasks import seal as seal_tasks


def prepare():
    return linear_flow.Flow('prepare').add(
        prepare_tasks.BeginPrepare(), prepare_tasks.Snapshot(),
        prepare_tasks.Pack(), seal_tasks.Export(), seal_tasks.Consolidate(),
        seal_tasks.Seal(), seal_tasks.Dispatch())


def receive():
    return linear_flow.Flow('receive').add(
        receive_tasks.BeginReceive(), receive_tasks.Custody(),
        receive_tasks.Import())


def catchup():
    return linear_flow.Flow('catchup').add(
        catchup_tasks.BeginCatchUp(), catchup_tasks.Rounds())


def keep_warm():
    return linear_flow.Flow('keep_warm').add(
        catchup_tasks.BeginKeepWarm(), catchup_tasks.KeepWarm())


def cutover():
    return linear_flow.Flow('cutover').add(
        cutover_tasks.BeginCutover(), cutover_tasks.FinalDelta())


def cleanup():
    return linear_flow.Flow('cleanup').add(
        cleanup_tasks.BeginCleanup(), cleanup_tasks.EraseAndClean())


def abort():
    return linear_flow.Flow('abort').add(
        abort_tasks.BeginAbort(), abort_tasks.StopOperations(),
        abort_tasks.CleanUpAbort())


FACTORIES = {'prepare': prepare, 'receive': receive, 'catchup': catchup,
             'keep_warm': keep_warm, 'cutover': cutover,
             'cleanup': cleanup, 'abort': abort}
