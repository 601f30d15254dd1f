"""Ping a pooled connection before use only when it sat idle.

oslo.db creates its engines with SQLAlchemy's ``pool_pre_ping``: a round
trip to the database at every checkout, i.e. before every transaction,
which on a loaded machine is one more wait for a CPU per request (a list
is otherwise a few round trips). oslo.db has no option to turn it off, so
this is a SQLAlchemy ``CreateEnginePlugin`` (public API of
``create_engine``), named in the URL by oslo.db's public
``[database] connection_parameters`` (see :mod:`.engine`): its
``handle_pool_kwargs`` builds the pool without pre-ping and its
``engine_created`` pings instead, from pool events, only a connection that
sat idle for :data:`IDLE_PING_SECONDS`. One used less than that ago is
taken as is: if the server went away in between, that one request fails
(oslo.db's ``DBConnectionError``) and SQLAlchemy invalidates the pool, so
the next request gets a new connection. An idle one is pinged and, if
dead, replaced before use, as pre-ping did.
"""

import time

import sqlalchemy as sa
from sqlalchemy.dialects import plugins as sa_plugins
from sqlalchemy import engine as sa_engine
from sqlalchemy import event as sa_event

# The plugin's name in a database URL (``?plugin=fedex_idle_ping``).
NAME = 'fedex_idle_ping'

# A pooled connection unused for longer than this is pinged before use.
IDLE_PING_SECONDS = 5.0

_IDLE_SINCE = 'fedex.idle_since'


class IdlePingPlugin(sa_engine.CreateEnginePlugin):
    """Pre-ping replaced by a ping of idle connections only."""

    def __init__(self, url, kwargs):
        super().__init__(url, kwargs)
        self.replaces_pre_ping = False

    def update_url(self, url):
        return url  # no arguments of its own in the URL

    def handle_pool_kwargs(self, pool_cls, pool_args):
        # Only where the caller (oslo.db) asked for pre-ping.
        self.replaces_pre_ping = bool(pool_args.get('pre_ping'))
        pool_args['pre_ping'] = False

    def engine_created(self, engine):
        if self.replaces_pre_ping:
            ping_when_idle(engine)


def ping_when_idle(engine):
    """Ping a connection of ``engine``'s pool at checkout if it sat idle."""

    def checkin(dbapi_connection, record):
        if record is not None:
            record.info[_IDLE_SINCE] = time.monotonic()

    def checkout(dbapi_connection, record, proxy):
        since = record.info.pop(_IDLE_SINCE, None)
        if since is None or time.monotonic() - since < IDLE_PING_SECONDS:
            return
        try:
            alive = engine.dialect.do_ping(dbapi_connection)
        except Exception as e:
            # The pool replaces the connection and checks out again.
            raise sa.exc.DisconnectionError('ping failed: %s' % e)
        if not alive:
            raise sa.exc.DisconnectionError('ping failed')

    sa_event.listen(engine, 'checkin', checkin)
    sa_event.listen(engine, 'checkout', checkout)


# In-process registration, as SQLAlchemy's own registry of dialects does
# (an entry point in ``sqlalchemy.plugins`` would need a reinstall).
sa_plugins.register(NAME, __name__, 'IdlePingPlugin')
