"""The manual courier: the operator records the carrier's events."""


class ManualCourier(object):

    def dispatch(self, ctx, shipment):
        return shipment.get('tracking_number')

    def poll(self, ctx, shipment):
        return []
