"""/v1/events: the audit trail, by migration, shipment, device, time."""

from fedexclient import resource


class EventManager(resource.Collection):
    """List filters: migration, shipment, device, type, since, until.

    fedex-api shows no single event: :meth:`get` is not for events.
    """

    path = '/events'
    key = 'events'
    item = 'event'

    def create(self, migration, message, **fields):
        """Add a note to a migration's trail (``fields``: kind, details)."""
        return self._create(resource.compact(
            migration=migration, message=message, **fields))
