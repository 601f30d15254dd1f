"""The names taskflow saves in a flow's logbook, which a conductor of a
newer release reads back when it resumes a flow posted by an older one:
the factories' import paths, the tasks' names, and the qualified names of
the exceptions a task's saved failure is told apart by."""

import unittest

from oslo_utils import importutils
from oslo_utils import reflection
from taskflow.types import failure

from fedex_manager.flows import legacy
from fedex_manager.flows import phases
from fedex_manager.flows import tasks

# As saved by the releases before lsrp/manager/flows/tasks.py was split
# into a package: a flow in their logbooks must still resume.
SAVED = {
    'prepare': ['prepare.BeginPrepare', 'prepare.Snapshot', 'prepare.Pack',
                'prepare.Export', 'prepare.Consolidate', 'prepare.Seal',
                'prepare.Dispatch'],
    'receive': ['receive.BeginReceive', 'receive.Custody', 'receive.Import'],
    'catchup': ['catchup.BeginCatchUp', 'catchup.Rounds'],
    'keep_warm': ['keep_warm.BeginKeepWarm', 'keep_warm.KeepWarm'],
    'cutover': ['cutover.BeginCutover', 'cutover.FinalDelta'],
    'cleanup': ['cleanup.BeginCleanup', 'cleanup.EraseAndClean'],
    'abort': ['abort.BeginAbort', 'abort.StopOperations',
              'abort.CleanUpAbort'],
}


def _raised(exc):
    try:
        raise exc
    except Exception:
        return failure.Failure()


class TestSavedNames(unittest.TestCase):

    def test_factories_and_task_names(self):
        self.assertEqual(set(SAVED), set(phases.FACTORIES))
        for phase, factory in phases.FACTORIES.items():
            self.assertEqual('fedex_manager.flows.phases.%s' % phase,
                             reflection.get_callable_name(factory))
            flow = factory()
            self.assertEqual(phase, flow.name)
            self.assertEqual(SAVED[phase], [t.name for t in flow])

    def test_failure_names(self):
        f = _raised(tasks.Parked(id='m1', phase='prepare', generation=1,
                                 reason='waiting'))
        self.assertEqual(['fedex_manager.flows.tasks.Parked',
                          'fedex_manager.flows.tasks.Superseded'],
                         f.to_dict()['exc_type_names'][:2])

    def test_failure_saved_before_is_superseded(self):
        # What Begin.revert checks, on a failure read back from a logbook.
        saved = failure.Failure.from_dict({
            'exc_type_names': ['lsrp.manager.flows.tasks.Parked',
                               'lsrp.manager.flows.tasks.Superseded',
                               'lsrp.exception.ManagerError',
                               'lsrp.exception.FedexException',
                               'Exception'],
            'exception_str': 'migration m1: phase prepare parked: waiting',
            'traceback_str': '', 'version': 1, 'exc_args': []})
        self.assertTrue(saved.check(tasks.Superseded, legacy.SUPERSEDED))
        self.assertFalse(saved.check(tasks.Superseded))

    def test_factories_saved_before_the_move_resume(self):
        # A job posted by a release before the move names its factory
        # lsrp.manager.flows.phases.<phase>: taskflow imports that path.
        legacy.install()
        for phase, factory in phases.FACTORIES.items():
            old = reflection.get_callable_name(factory).replace(
                'fedex_manager.', 'lsrp.manager.', 1)
            self.assertIs(factory, importutils.import_class(old))
