"""The RPC endpoint the terminals report to (topic ``fedex-manager``)."""

from fedex_manager.conductor import reports
from fedex_manager import context as context_mod


class ManagerEndpoint(object):
    """What terminals tell the manager (casts)."""

    def __init__(self):
        # Operation id -> when its last progress event was written.
        self._progress_events = {}

    def progress(self, ctxt, terminal, op_id, bytes_done, bytes_total, rate):
        reports.progress(context_mod.admin(terminal), op_id, bytes_done,
                         bytes_total, rate, self._progress_events)

    def finished(self, ctxt, terminal, op_id, state, result=None,
                 error=None):
        reports.finished(context_mod.admin(terminal), terminal, op_id, state,
                         result=result, error=error)

    def heartbeat(self, ctxt, terminal, info):
        reports.heartbeat(context_mod.admin(terminal), terminal, info)
