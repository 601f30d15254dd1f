"""The notifier of versioned notifications, and the call at a state change.

Sent by oslo.messaging's :class:`~oslo_messaging.Notifier` with the
standard ``[oslo_messaging_notifications]`` options (``driver``: none by
default, so nothing is sent; ``messagingv2`` to send; ``transport_url``,
``retry``) on the topics of ``[notifications]
versioned_notifications_topics`` (``versioned_notifications``, as Nova's).

:func:`migration_state_changed` is called by
:mod:`fedex_manager.db.transitions` inside the transaction of the change:
it reads the migration there and sends once that transaction committed
(a change rolled back is never announced). Nothing it does can fail the
change: every error is logged.
"""

import os
import socket
import sys

from oslo_config import cfg
from oslo_log import log as logging
import oslo_messaging as messaging
from oslo_messaging import opts as messaging_opts
from sqlalchemy import event as sa_event

from fedex_manager.db import crud
from fedex_manager.db import models

CONF = cfg.CONF
LOG = logging.getLogger(__name__)
GROUP = 'notifications'

notification_opts = [
    cfg.ListOpt('versioned_notifications_topics',
                default=['versioned_notifications'],
                help='Topics the versioned notifications (a migration\'s '
                     'state change: fedex.migration.state_change) are '
                     'sent to, when [oslo_messaging_notifications] driver '
                     'is set (messagingv2). On the exchange of [DEFAULT] '
                     'control_exchange.'),
]

_notifiers = {}


def register_opts(conf):
    conf.register_opts(notification_opts, group=GROUP)
    for group, group_opts in messaging_opts.list_opts():
        if group == 'oslo_messaging_notifications':
            conf.register_opts(group_opts, group=group)


def list_opts():
    return [(GROUP, notification_opts)]


def enabled(conf=CONF):
    """True when a driver other than noop is set."""
    register_opts(conf)
    return any(d != 'noop'
               for d in conf.oslo_messaging_notifications.driver)


def get_notifier(conf=CONF):
    """The notifier of ``conf`` (made once per driver, topics and bus)."""
    register_opts(conf)
    n = conf.oslo_messaging_notifications
    key = (id(conf), tuple(n.driver), n.transport_url,
           tuple(conf.notifications.versioned_notifications_topics))
    if key not in _notifiers:
        _notifiers[key] = messaging.Notifier(
            messaging.get_notification_transport(conf),
            topics=conf.notifications.versioned_notifications_topics)
    return _notifiers[key]


def publisher(conf=CONF):
    """This process as publisher: its program and host.

    The program is the ``prog`` its configuration was parsed with
    (``fedex-api``, ``fedex-conductor``...), else its command's name.
    """
    from fedex_manager.notifications import base
    source = getattr(conf, 'prog', None) or os.path.basename(sys.argv[0])
    return base.NotificationPublisher(host=socket.gethostname(),
                                      source=source or 'fedex')


def _context(ctx):
    # Who asked, never their token.
    return {k: getattr(ctx, k, None) for k in (
        'request_id', 'global_request_id', 'user_id', 'project_id')}


def migration_state_changed(session, ctx, row, previous_state, event,
                            reason=None, conf=CONF):
    """Announce ``row``'s state change once ``session`` commits."""
    try:
        if not enabled(conf):
            return
        # Only now: a process with notifications off never loads
        # oslo.versionedobjects (as Nova's if_notifications_enabled).
        from fedex_manager.notifications import migration as payloads
        sites = {s.id: s.name for s in (
            session.get(models.Site, row.source_site_id),
            session.get(models.Site, row.dest_site_id)) if s is not None}
        payload = payloads.MigrationStatePayload.from_migration(
            crud.as_dict(row), previous_state, event, reason, sites)
        note = payloads.notification(payload, publisher(conf))
        context = _context(ctx)
    except Exception:  # noqa: a notification never fails the change
        LOG.exception('migration %s: no notification of %s -> %s',
                      row.id, previous_state, row.state)
        return

    def send(session):
        try:
            note.emit(get_notifier(conf), context)
        except Exception:  # noqa: the change is committed; only logged
            LOG.exception('migration %s: notification of %s -> %s lost',
                          payload.id, previous_state, payload.state)

    sa_event.listen(session, 'after_commit', send, once=True)
