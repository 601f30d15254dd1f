"""The logistics of fedex-api: shipments, devices, terminals, sites."""

from fedexclient import resource


class ShipmentManager(resource.Collection):
    """Shipments; a list takes state, tracking_number and kind.

    kind: seed (a migration's devices) or return (wiped devices going home).
    """

    path = '/shipments'
    key = 'shipments'
    item = 'shipment'

    def event(self, ident, event, **fields):
        """Record a carrier event (handed_to_carrier, delivered, ...).

        ``fields``: tracking_number, location, seq, devices_missing,
        occurred_at, details; None ones are left out.
        """
        return self.http.post(self._url(ident, 'events'), resource.compact(
            event=event, **fields))[self.item]


class DeviceManager(resource.Collection):
    """Devices; a list takes state, terminal, home_terminal, shipment."""

    path = '/devices'
    key = 'devices'
    item = 'device'

    def create(self, serial, capacity_bytes, terminal, **fields):
        """Enroll a device in a terminal (``fields``: slot, path)."""
        return self._create(resource.compact(
            serial=serial, capacity_bytes=capacity_bytes, terminal=terminal,
            **fields))

    def delete(self, ident):
        """Retire a device (BLANK, ERASED or LOST, and unplugged)."""
        self._delete(ident)

    def return_home(self, ident, reason=None):
        """Send a wiped device back to its home terminal with the courier.

        The answer is the device, RETURNING; the manager's conductor packs
        it into a return consignment.
        """
        return self.http.post(self._url(ident, 'return'), resource.compact(
            reason=reason))[self.item]

    def custody(self, ident, holder, **fields):
        """Record who holds the device.

        ``fields``: location, message, occurred_at.
        """
        return self.http.post(self._url(ident, 'custody'), resource.compact(
            holder=holder, **fields))[self.item]


class TerminalManager(resource.Collection):
    path = '/terminals'
    key = 'terminals'
    item = 'terminal'

    def register(self, name, site, **fields):
        """Register a terminal.

        ``fields``: rpc_topic, lsrp_address, capacity_bytes, slots.
        """
        return self._create(resource.compact(name=name, site=site, **fields))

    def health(self, ident, state='UP', info=None):
        """A terminal's heartbeat."""
        return self.http.put(self._url(ident, 'health'), resource.compact(
            state=state, info=info))[self.item]


class SiteManager(resource.Collection):
    path = '/sites'
    key = 'sites'
    item = 'site'

    def register(self, name, **fields):
        """Register a site.

        ``fields``: availability_zone, aggregate, ceph_conf, ceph_keyring,
        ceph_client.
        """
        return self._create(resource.compact(name=name, **fields))
