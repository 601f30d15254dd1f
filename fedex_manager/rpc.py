"""oslo.messaging between the manager and the terminals (RabbitMQ).

Manager -> terminal: topic ``fedex-terminal.<name>`` (one per terminal;
the prefix is ``rpc_topic_prefix``),
``start(op_id, kind, params)`` (idempotent by op_id: a known operation is
not started twice), ``status(op_id)``, ``cancel(op_id)`` (cast).

Terminal -> manager: topic ``fedex-manager`` (served by every conductor;
casts, no reply): ``progress`` and ``finished`` of an operation (the
thesis' E-events: E2 a replica complete, E4/E5 a consolidation's result and
completion, ...), ``heartbeat``, ``device_seen``.

Keys never travel here: a terminal gets a key reference and fetches the
key from the key manager itself.
"""

import functools

import kombu.exceptions
from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_messaging import opts as messaging_opts

LOG = logging.getLogger(__name__)
CONF = cfg.CONF

VERSION = '1.0'

rpc_opts = [
    cfg.StrOpt('rpc_topic_prefix', default='fedex',
               help='Prefix of the manager\'s and terminals\' RPC topics '
                    '(<prefix>-manager, <prefix>-terminal.<name>). Queues '
                    'are named after topics, whatever the exchange: two '
                    'managers on one RabbitMQ need different prefixes.'),
]

_transports = {}


# Threads of each of our RPC servers and notification listeners, unless
# [DEFAULT] executor_thread_pool_size says otherwise. futurist's executor
# starts one more thread for each message until it has oslo.messaging's
# default, 64, and each idle one wakes every second: an idle conductor held
# 130 threads and spent 2-3 % of a core on them. A handler here is a
# database write or a look at an operation: a few threads are plenty.
EXECUTOR_THREADS = 8
# oslo.messaging registers the option only when it makes a server: ours
# registers the same option first, so that its default can be ours. Found
# once (list_opts copies every option of oslo.messaging, and
# register_opts runs at each topic asked for, a terminal's heartbeats too).
_pool_opts = [o for group, opts in messaging_opts.list_opts()
              if group is None for o in opts
              if o.name == 'executor_thread_pool_size']


def register_opts(conf):
    conf.register_opts(rpc_opts)
    conf.register_opts(_pool_opts)
    messaging_opts.set_defaults(conf,
                                executor_thread_pool_size=EXECUTOR_THREADS)


def manager_topic(conf=CONF):
    register_opts(conf)
    return '%s-manager' % conf.rpc_topic_prefix


def transport(conf=CONF):
    # Keyed by what makes a transport: the same ConfigOpts parsed again
    # (tests) may name another broker or exchange.
    def key():
        return (id(conf),) + tuple(_opt(conf, name) for name in (
            'transport_url', 'control_exchange'))
    if key() not in _transports:
        made = messaging.get_rpc_transport(conf)
        # The options exist now: the key is complete.
        _transports.setdefault(key(), made)
    return _transports[key()]


def _opt(conf, name):
    try:
        return getattr(conf, name)
    except cfg.NoSuchOptError:      # registered by the first transport
        return None


def notification_transport(conf=CONF):
    return messaging.get_notification_transport(conf)


def terminal_topic(name, conf=CONF):
    register_opts(conf)
    return '%s-terminal.%s' % (conf.rpc_topic_prefix, name)


def server(endpoints, topic, server_name, conf=CONF):
    target = messaging.Target(topic=topic, server=server_name,
                              version=VERSION)
    return messaging.get_rpc_server(
        transport(conf), target, endpoints, executor='threading',
        access_policy=messaging.DefaultRPCAccessPolicy)


# What kombu lets out of oslo.messaging while the bus cannot be reached.
_BUS_DOWN = (kombu.exceptions.OperationalError, ConnectionError)


def _bus(method):
    """The message bus unreachable is a MessagingException to callers.

    With the bus down (RabbitMQ restarting), oslo.messaging lets kombu's
    ``OperationalError`` ("[Errno 111] Connection refused") out of a call:
    callers wait for a terminal that does not answer, and would have failed
    the migration on this one instead, naming nothing.
    """
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except _BUS_DOWN as e:
            raise messaging.MessageDeliveryFailure(
                'the message bus (transport_url) cannot be reached: %s'
                % e) from e
    return wrapper


class TerminalAPI(object):
    """The manager's client of one terminal agent."""

    def __init__(self, topic, conf=CONF, timeout=30):
        self.client = messaging.get_rpc_client(
            transport(conf), messaging.Target(topic=topic, version=VERSION),
            timeout=timeout, retry=1)

    @_bus
    def start(self, op_id, kind, params):
        return self.client.call({}, 'start', op_id=op_id, kind=kind,
                                params=params)

    @_bus
    def status(self, op_id):
        return self.client.call({}, 'status', op_id=op_id)

    @_bus
    def cancel(self, op_id):
        self.client.cast({}, 'cancel', op_id=op_id)

    @_bus
    def ping(self):
        return self.client.call({}, 'ping')


class ManagerAPI(object):
    """A terminal's client of the manager (casts: nothing waits)."""

    def __init__(self, terminal, conf=CONF):
        self.terminal = terminal
        self.client = messaging.get_rpc_client(
            transport(conf), messaging.Target(topic=manager_topic(conf),
                                              version=VERSION))

    def _cast(self, method, **kw):
        try:
            self.client.cast({}, method, terminal=self.terminal, **kw)
        except (messaging.MessagingException,) + _BUS_DOWN as e:
            # The manager catches up from status() calls: never fatal here.
            LOG.warning('cannot tell the manager %s: %s', method, e)

    def progress(self, op_id, bytes_done, bytes_total, rate):
        self._cast('progress', op_id=op_id, bytes_done=bytes_done,
                   bytes_total=bytes_total, rate=rate)

    def finished(self, op_id, state, result=None, error=None):
        self._cast('finished', op_id=op_id, state=state, result=result,
                   error=error)

    def heartbeat(self, info):
        self._cast('heartbeat', info=info)


class Notifier(object):
    """State changes as notifications (``fedex.<kind>.state``)."""

    def __init__(self, conf=CONF, publisher='fedex-conductor'):
        try:
            # Sent when [oslo_messaging_notifications] driver is set
            # (messagingv2); the default (none) sends nothing.
            self.notifier = messaging.Notifier(
                notification_transport(conf), publisher_id=publisher)
        except Exception as e:  # noqa: monitoring never stops the manager
            LOG.warning('notifications off: %s', e)
            self.notifier = None

    def state(self, kind, ident, old, new, message=None):
        if self.notifier is None:
            return
        try:
            self.notifier.info({}, 'fedex.%s.state' % kind, {
                'id': ident, 'from': old, 'to': new, 'message': message})
        except Exception as e:  # noqa
            LOG.warning('notification of %s %s lost: %s', kind, ident, e)
