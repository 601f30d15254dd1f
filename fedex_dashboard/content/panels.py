"""What every panel of the plugin shares: it shows only when the user's
catalog has fedex-api."""

import horizon

from fedex_dashboard.api import fedex


class FedexPanel(horizon.Panel):

    def allowed(self, context):
        request = context['request']
        if not fedex.is_available(request):
            return False
        return super().allowed(context)
