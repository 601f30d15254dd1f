"""What every versioned notification is made of (as Nova's).

A notification is an oslo.versionedobjects object: its ``payload`` is one
too, sent as ``obj_to_primitive()`` (``fedex_object.name``,
``.namespace``, ``.version``, ``.data``), so a consumer knows which
version of the payload it reads. Any change of a payload's fields needs a
new version: ``tests/unit/fedex_manager/test_notifications.py`` pins the
hash of each class.

The classes are not put in oslo.versionedobjects' process-wide registry
(``register_if(False)``): a process that also loads Nova's objects (whose
``EventType`` and ``NotificationPublisher`` have the same names) keeps
both apart.
"""

from oslo_versionedobjects import base as ovo_base
from oslo_versionedobjects import fields

NAMESPACE = 'fedex'

# name -> [class]: the classes whose hashes the unit test pins.
CLASSES = {}


def notification_class(cls):
    """Make ``cls`` a versioned object (fields as properties), listed."""
    cls = ovo_base.VersionedObjectRegistry.register_if(False)(cls)
    CLASSES.setdefault(cls.obj_name(), []).append(cls)
    return cls


class NotificationObject(ovo_base.VersionedObject,
                         ovo_base.ComparableVersionedObject):
    """Base of every notification object."""
    OBJ_SERIAL_NAMESPACE = 'fedex_object'
    OBJ_PROJECT_NAMESPACE = NAMESPACE
    VERSION = '1.0'

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # Made on the fly to be sent: every field would show as changed,
        # which tells a consumer nothing.
        self.obj_reset_changes(recursive=False)


PRIORITIES = ('audit', 'critical', 'debug', 'info', 'error', 'sample',
              'warn')


@notification_class
class EventType(NotificationObject):
    """``<object>.<action>[.<phase>]``, the notification's event_type."""
    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'object': fields.StringField(nullable=False),
        'action': fields.EnumField(valid_values=('state_change',),
                                   nullable=False),
        'phase': fields.EnumField(valid_values=('start', 'end', 'error'),
                                  nullable=True),
    }

    def __init__(self, object, action, phase=None):
        super().__init__()
        self.object = object
        self.action = action
        self.phase = phase

    def to_notification_event_type_field(self):
        s = '%s.%s' % (self.object, self.action)
        if self.phase:
            s += '.%s' % self.phase
        return s


@notification_class
class NotificationPublisher(NotificationObject):
    """Who sent it: the service (``fedex-api``...) and its host."""
    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'host': fields.StringField(nullable=False),
        'source': fields.StringField(nullable=False),
    }

    def __init__(self, host, source):
        super().__init__()
        self.host = host
        self.source = source


class NotificationPayloadBase(NotificationObject):
    """Base of the payloads."""
    VERSION = '1.0'


class NotificationBase(NotificationObject):
    """Base of the notifications; each subclass has a ``payload`` field."""
    VERSION = '1.0'

    fields = {
        'priority': fields.EnumField(valid_values=PRIORITIES),
        'event_type': fields.ObjectField('EventType'),
        'publisher': fields.ObjectField('NotificationPublisher'),
    }

    def emit(self, notifier, context):
        """Send it with the oslo.messaging ``notifier``.

        Its event type, the publisher as ``<source>:<host>``, the payload
        as a primitive.
        """
        self.payload.obj_reset_changes(recursive=True)
        send = getattr(notifier.prepare(publisher_id='%s:%s' % (
            self.publisher.source, self.publisher.host)), self.priority)
        send(context,
             event_type=self.event_type.to_notification_event_type_field(),
             payload=self.payload.obj_to_primitive())
