"""/v1/plans: ship or WAN, and from how many VMs (nothing is started)."""

from fedexclient import resource


class PlanManager(resource.Collection):
    path = '/plans'
    key = 'plans'
    item = 'plan'

    def create(self, vms, wan_bandwidth, **fields):
        """Compute and keep a plan for ``vms`` (groups of identical VMs).

        ``fields``: name, transit_time, device_*, parity, costs, curve...
        as POST /v1/plans takes them; None ones are left out.
        """
        return self._create(resource.compact(
            vms=vms, wan_bandwidth=wan_bandwidth, **fields))

    def forecast(self, migration, **fields):
        """Compute and keep the forecast of a migration request.

        ``migration``: a body of POST /v1/migrations (nothing is created);
        ``fields``: name, dirty_rate, write_rate; None ones are left out.
        """
        return self._create(resource.compact(migration=migration, **fields))

    def delete(self, ident):
        self._delete(ident)
