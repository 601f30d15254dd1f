"""Nova's notifications of deleted servers: their migrations aborted at once.

A server deleted while its migration runs (an admin may delete a server
the manager locked) leaves nothing to cut over: its migration must stop
before more of its seed travels or more rounds cross the WAN. Nova says
so on the bus, as the versioned notifications ``instance.delete.start``
and ``instance.delete.end`` (nova.conf: ``[notifications]
notification_format = versioned``, ``[oslo_messaging_notifications]
driver = messagingv2``), on the topic ``versioned_notifications`` of its
exchange ``nova``. The payload names the server: ``payload["nova_object.
data"]["uuid"]``.

Every conductor of a manager listens in one pool (``[conductor]
nova_notifications_pool``): the bus hands each notification to one of
them. A server's two notifications (start and end), one delivered again,
or the sweeper's look at the same moment abort it once: the abort is a
compare-and-swap state change, and a migration that is no longer
abortable is left alone. The sweeper's ``deleted_servers`` job stays the
safety net (notifications off, lost, or every conductor down).
"""

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging

from fedex_manager.actions import cutover as cutover_actions
from fedex_manager.actions import lifecycle
from fedex_manager import context as context_mod
from fedex_manager.db import api as db
from fedex_manager import states
from lsrp import exception

CONF = cfg.CONF
LOG = logging.getLogger(__name__)

# The server's deletion began (start) or ended (end): either is final.
EVENT_TYPES = r'^instance\.delete\.(start|end)$'


def server_of(payload):
    """The server uuid of a versioned instance payload, or None."""
    data = (payload or {}).get('nova_object.data') if isinstance(
        payload, dict) else None
    return data.get('uuid') if isinstance(data, dict) else None


def abort_migrations_of(ctx, server_id, why):
    """Abort every migration of the server that can still be aborted.

    One in its cutover gets an event instead, acted on at the cutover's
    end. Returns the ids of those this call aborted.
    """
    aborted = []
    for m in db.migration_page(
            ctx, {'state': list(states.ABORTABLE) + [states.CUTTING_OVER]},
            server=server_id):
        if m['state'] == states.CUTTING_OVER:
            # Not abortable in its cutover: kept for the cutover's end,
            # which aborts it if it rolled back
            # (cutover_actions.DELETED_IN_CUTOVER). Else nothing aborted it
            # before the deletion ended (another notification) or the
            # sweeper saw the server gone: 58 s once in the soak, the
            # compute that was deleting it killed.
            db.add_event(ctx, 'migration', m['id'], 'cutover',
                         '%s: server %s (%s); the migration is aborted if '
                         'its cutover rolls back' % (
                             cutover_actions.DELETED_IN_CUTOVER, server_id,
                             why),
                         migration_id=m['id'],
                         details={'server_id': server_id})
            LOG.warning('migration %s: server %s deleted in Nova (%s) '
                        'during its cutover: aborted if the cutover rolls '
                        'back', m['id'], server_id, why)
            continue
        try:
            lifecycle.migration_abort(
                ctx, m['id'], reason='server %s deleted in Nova (%s)' % (
                    server_id, why))
        except (exception.InvalidTransition, exception.Conflict) as e:
            # Aborted (or moved on) meanwhile by another notification,
            # conductor or the sweeper.
            LOG.debug('migration %s not aborted here: %s', m['id'], e)
            continue
        LOG.warning('migration %s: server %s deleted in Nova (%s): aborted',
                    m['id'], server_id, why)
        aborted.append(m['id'])
    return aborted


class DeletedServerEndpoint(object):
    """oslo.messaging endpoint of Nova's ``instance.delete.*``."""

    filter_rule = messaging.NotificationFilter(event_type=EVENT_TYPES)

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        server_id = server_of(payload)
        if not server_id:
            LOG.warning('%s from %s names no server (not a versioned '
                        'notification? nova.conf [notifications] '
                        'notification_format = versioned)', event_type,
                        publisher_id)
            return messaging.NotificationResult.HANDLED
        try:
            abort_migrations_of(context_mod.admin('nova-notifications'),
                                server_id, event_type)
        except Exception as e:  # noqa: the sweeper is the safety net
            LOG.warning('server %s deleted in Nova (%s): its migrations '
                        'not aborted now (%s); the sweeper looks again '
                        'within [conductor] server_check_interval',
                        server_id, event_type, e)
        return messaging.NotificationResult.HANDLED


def pool(conf=CONF):
    """The listeners' pool: one per manager, shared by its conductors."""
    return conf.conductor.nova_notifications_pool or (
        '%s-conductor' % conf.rpc_topic_prefix)


def enabled(conf=CONF):
    return (conf.conductor.compute_driver == 'nova' and
            bool(conf.conductor.nova_notifications_topic))


def nova_bus(conf=CONF):
    """The bus Nova publishes to.

    ``[conductor] nova_notifications_transport_url``, else the manager's
    own notification bus.
    """
    return messaging.get_notification_transport(
        conf, url=conf.conductor.nova_notifications_transport_url)


def listener(conf, bus):
    """This conductor's listener of Nova's notifications (not started)."""
    c = conf.conductor
    target = messaging.Target(topic=c.nova_notifications_topic,
                              exchange=c.nova_notifications_exchange)
    return messaging.get_notification_listener(
        bus, [target], [DeletedServerEndpoint()],
        executor='threading', pool=pool(conf))


class Listening(object):
    """The listener as the conductor starts and stops it."""

    def __init__(self, conf=CONF):
        self.conf = conf
        self.listener = self.transport = None

    def start(self):
        if not enabled(self.conf):
            return
        c = self.conf.conductor
        try:
            self.transport = nova_bus(self.conf)
            self.listener = listener(self.conf, self.transport)
            self.listener.start()
        except Exception as e:  # noqa: the sweeper still finds them
            self.stop()
            LOG.error('Nova\'s notifications (topic %s, exchange %s) not '
                      'listened to: %s; servers deleted during their '
                      'migration are found by the sweeper only, every '
                      '[conductor] server_check_interval',
                      c.nova_notifications_topic,
                      c.nova_notifications_exchange, e)
            return
        LOG.info('listening to Nova\'s notifications (topic %s, exchange '
                 '%s, pool %s)', c.nova_notifications_topic,
                 c.nova_notifications_exchange, pool(self.conf))

    def stop(self):
        if self.listener is not None:
            try:
                self.listener.stop()
                self.listener.wait()
            except Exception as e:  # noqa: stopping anyway
                LOG.warning('listener of Nova\'s notifications: %s', e)
            self.listener = None
        if self.transport is not None:
            self.transport.cleanup()
            self.transport = None
