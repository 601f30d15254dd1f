"""The notification of a migration's state change.

``fedex.migration.state_change`` (priority ``error`` when the migration
goes FAILED, else ``info``), payload :class:`MigrationStatePayload`.
"""

from oslo_utils import timeutils
from oslo_versionedobjects import fields

from fedex_manager.notifications import base
from fedex_manager import states

# Every state of the migration machine: a new state changes the payload's
# hash, and so needs a new payload version.
MIGRATION_STATES = tuple(sorted(
    {s for f, _e, t in states.MIGRATION_TRANSITIONS for s in (f, t)}))
EVENT_TYPE_OBJECT = 'fedex.migration'


@base.notification_class
class SitePayload(base.NotificationPayloadBase):
    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'id': fields.UUIDField(),
        'name': fields.StringField(nullable=True),
    }


@base.notification_class
class MigrationServerPayload(base.NotificationPayloadBase):
    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'server_id': fields.StringField(),
        'name': fields.StringField(nullable=True),
    }


@base.notification_class
class MigrationStatePayload(base.NotificationPayloadBase):
    """A migration as it is once its state changed, and the change."""
    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'id': fields.UUIDField(),
        'name': fields.StringField(nullable=True),
        'project_id': fields.StringField(nullable=True),
        'user_id': fields.StringField(nullable=True),
        'servers': fields.ListOfObjectsField('MigrationServerPayload'),
        'source_site': fields.ObjectField('SitePayload'),
        'destination_site': fields.ObjectField('SitePayload'),
        'state': fields.EnumField(valid_values=MIGRATION_STATES),
        # None: the migration was just created (REQUESTED).
        'previous_state': fields.EnumField(valid_values=MIGRATION_STATES,
                                           nullable=True),
        # The state machine's event (abort, fail, cutover...); create for
        # a new migration.
        'event': fields.StringField(),
        # Why, when the caller said (an abort's reason, a failure's error).
        'reason': fields.StringField(nullable=True),
        'created_at': fields.DateTimeField(),
        'updated_at': fields.DateTimeField(),
        'finished_at': fields.DateTimeField(nullable=True),
    }

    @classmethod
    def from_migration(cls, migration, previous_state, event, reason,
                       sites):
        """The payload of a migration and its change.

        ``migration`` as :func:`crud.as_dict` gives it (its servers
        included); ``sites``: ``{site id: name}``.
        """
        def site(ident):
            return SitePayload(id=ident, name=sites.get(ident))

        return cls(
            id=migration['id'], name=migration.get('name'),
            project_id=migration.get('project_id'),
            user_id=migration.get('user_id'),
            servers=[MigrationServerPayload(server_id=s['server_id'],
                                            name=s.get('name'))
                     for s in migration.get('servers') or ()],
            source_site=site(migration['source_site_id']),
            destination_site=site(migration['dest_site_id']),
            state=migration['state'], previous_state=previous_state,
            event=event, reason=reason,
            created_at=_time(migration['created_at']),
            updated_at=_time(migration['updated_at']),
            finished_at=_time(migration.get('finished_at')))


def _time(value):
    # as_dict writes times as ISO 8601 text ('...Z'); naive means UTC.
    if value is None or not isinstance(value, str):
        return value
    return timeutils.parse_isotime(value)


@base.notification_class
class MigrationStateNotification(base.NotificationBase):
    # Version 1.0: Initial version
    VERSION = '1.0'

    fields = {
        'payload': fields.ObjectField('MigrationStatePayload'),
    }


def notification(payload, publisher):
    """The notification of ``payload``'s state change."""
    return MigrationStateNotification(
        priority='error' if payload.state == states.FAILED else 'info',
        event_type=base.EventType(object=EVENT_TYPE_OBJECT,
                                  action='state_change'),
        publisher=publisher, payload=payload)
