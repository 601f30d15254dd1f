"""Database access of the manager: the names its callers use.

``from fedex_manager.db import api as db``, then ``db.get(ctx, 'migration',
id)``, ``db.transition(...)``, ``db.migration_page(...)``... Each is
defined in the module of its concern:

* :mod:`.engine`: the oslo.db enginefacade (sessions, connections);
  :mod:`.idle_ping` replaces oslo.db's ping at every checkout;
* :mod:`.pagination`: filters and the keyset pagination of every list;
* :mod:`.crud`: rows of any kind by name (ORM);
* :mod:`.events` and :mod:`.transitions`: the audit trail, state changes;
* :mod:`.migration_queries`: migrations created, listed and shown (Core);
  :mod:`.migration_statements`: the SELECTs of a list and a show;
* :mod:`.operations`: terminal operations;
* :mod:`.times`: times as stored and shown.
"""

from fedex_manager.db import crud
from fedex_manager.db import engine
from fedex_manager.db import events as events_mod
from fedex_manager.db import migration_queries
from fedex_manager.db import operations
from fedex_manager.db import times
from fedex_manager.db import transitions

# Engine and transactions.
register_opts = engine.register_opts
configure = engine.configure
get_engine = engine.get_engine
writer = engine.writer
reader = engine.reader
unreachable = engine.unreachable

# Times.
now = times.now
utcfromiso = times.utcfromiso

# Rows of any kind.
MODELS = crud.MODELS
get = crud.get
create = crud.create
update = crud.update
delete = crud.delete
list_ = crud.list_
devices_of = crud.devices_of
# An ORM row inside the caller's own ``writer(ctx)`` session.
get_row = crud.get_row
_get = crud.get_row

# Events and state changes.
add_event = events_mod.add_event
events = events_mod.events
on_transition = transitions.on_transition
transition = transitions.transition
_transition_hooks = transitions.hooks

# Migrations.
migration_create = migration_queries.migration_create
migration_page = migration_queries.migration_page
migration_get = migration_queries.migration_get
volumes_update = migration_queries.volumes_update
volume_update = migration_queries.volume_update
volumes_unassign = migration_queries.volumes_unassign

# Terminal operations.
operation_start = operations.operation_start
operation_report = operations.operation_report
operation_take_status = operations.operation_take_status
