"""The manager's Python facade: what the REST API, the CLI and Nova call.

One module per resource; callers import the one they need:

=============  =========================================================
``sites``      sites and their terminals (registration, heartbeats)
``migrations`` a migration or a wave requested; listed, shown, changed
``lifecycle``  abort, retry, re-ship, early clean-up
``cutover``    approval, readiness, start and end of the cutover
``shipping``   shipments and the carrier's events
``devices``    devices registered, listed, shown, sent home, retired
``events``     the audit trail
``progress``   a migration's progress and allowed actions (as shown)
``plans``      a migration request's forecast: its figures gathered
``forecast``   the forecast's arithmetic, and its ``[planner]`` options
=============  =========================================================

Every function takes a :class:`fedex_manager.context.RequestContext` first
and returns plain dicts (JSON-ready). Bad input raises
:class:`lsrp.exception.InvalidInput`; a missing record
:class:`~lsrp.exception.NotFound`; an action the state forbids
:class:`~lsrp.exception.InvalidTransition` naming both states. Nothing here
waits for terminals: work is posted to the conductors as jobs
(:mod:`fedex_manager.jobs`). Types are checked at the door, once
(:mod:`fedex_manager.actions.inputs`).
"""
