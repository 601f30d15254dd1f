"""The manager's oslo.db enginefacade: the one way to the database.

Every function of :mod:`fedex_manager.db` runs in a transaction of this
facade: :func:`writer` and :func:`reader` give ORM sessions,
:func:`reader_connection` a Core connection for the API's hot reads
(columns, no ORM objects). A call made inside another with the same
context joins its transaction.
"""

import threading

from oslo_config import cfg
from oslo_db import exception as db_exception
from oslo_db import options as db_options
from oslo_db.sqlalchemy import enginefacade
from sqlalchemy import event as sa_event
from sqlalchemy import exc as sa_exc

from fedex_manager import context as context_mod
from fedex_manager.db import idle_ping
from lsrp import exception

CONF = cfg.CONF
_LOCK = threading.Lock()
_CTX = None


def register_opts(conf):
    """oslo.db's ``[database]`` options."""
    db_options.set_defaults(conf)


def configure(connection=None):
    """(Re)build the engine facade for ``connection`` ([database] default).

    The other ``[database]`` options (pool size, timeouts...) are read by
    oslo.db from the configuration.
    """
    global _CTX
    with _LOCK:
        register_opts(CONF)
        if connection is None:
            connection = CONF.database.connection
        if not connection:
            raise exception.ManagerError(
                reason='no database: set [database] connection (SQLite: '
                'sqlite:////var/lib/fedex/manager.sqlite)')
        ctx = enginefacade.transaction_context()
        # thread_checkin: a sleep(0) at each checkin, for eventlet; we have
        # none, and under load that yield costs a wait for the CPU.
        # connection_parameters: oslo.db appends them to every URL it
        # connects to (writer and any slave_connection); ours names the
        # idle-ping plugin, the operator's own are kept.
        ctx.configure(
            connection=connection, sqlite_fk=True, max_retries=5,
            thread_checkin=False,
            connection_parameters='&'.join(filter(None, (
                CONF.database.connection_parameters,
                'plugin=%s' % idle_ping.NAME))))
        if connection.startswith('sqlite'):
            ctx.append_on_engine_create(_sqlite_for_many)
        # Start now: a wrong URL fails here, not at the first request.
        ctx.writer.get_engine()
        _CTX = ctx
        return ctx


def _sqlite_for_many(engine):
    """SQLite shared by a conductor, its RPC handlers and a facade user.

    WAL lets readers go on while one writes; a writer waits up to 60 s
    for another instead of failing at once with 'database is locked'.
    """
    def on_connect(dbapi_connection, record):
        cursor = dbapi_connection.cursor()
        cursor.execute('PRAGMA busy_timeout = 60000')
        cursor.execute('PRAGMA journal_mode = WAL')
        cursor.close()
    sa_event.listen(engine, 'connect', on_connect)


def facade():
    if _CTX is None:
        configure()
    return _CTX


def get_engine():
    return facade().writer.get_engine()


def writer(ctx):
    """An ORM session in a transaction that commits at the end."""
    return facade().writer.using(ctx or context_mod.admin())


def reader(ctx):
    """An ORM session in a transaction that is rolled back at the end."""
    return facade().reader.using(ctx or context_mod.admin())


def reader_connection(ctx):
    """A Core connection in a transaction rolled back at the end.

    NOTE: the pool rolls the connection back once more when it takes it
    back (SQLAlchemy's ``reset_on_return``, which oslo.db does not let us
    set), a round trip that finds no transaction. Kept: a pool that
    trusted every caller to end its transaction would, the day one does
    not, hand the next request a connection still inside it (stale reads
    under REPEATABLE READ).
    """
    return facade().reader.connection.using(ctx or context_mod.admin())


# MySQL/MariaDB client errors of a server that cannot be reached or went
# away: can't connect (2002, 2003), gone away (2006), lost during a query
# (2013).
_UNREACHABLE_CODES = (2002, 2003, 2006, 2013)


def unreachable(e):
    """Whether ``e`` says the database could not be reached or went away.

    As oslo.db raises it (``DBConnectionError``) or as it reaches us
    through a SQLAlchemy engine of our libraries' own (taskflow's
    logbook): the connection invalidated, or the driver's error code.
    """
    if isinstance(e, db_exception.DBConnectionError):
        return True
    if isinstance(e, sa_exc.DBAPIError) and e.connection_invalidated:
        return True
    orig = (getattr(e, 'orig', None) or
            getattr(e, 'inner_exception', None) or e)
    args = getattr(orig, 'args', None) or (None,)
    return type(orig).__name__ == 'OperationalError' and \
        args[0] in _UNREACHABLE_CODES
