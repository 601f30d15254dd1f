"""Versioned notifications of the manager, as Nova's.

:mod:`.base` holds the oslo.versionedobjects classes every notification is
made of (publisher, event type, payload, the notification itself),
:mod:`.migration` the payload of a migration's state change, and
:mod:`.notifier` the oslo.messaging notifier that sends them on the topics
of ``[notifications] versioned_notifications_topics`` and the call
:mod:`fedex_manager.db.transitions` makes at every state change.
"""
