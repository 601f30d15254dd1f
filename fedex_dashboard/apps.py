from django.apps import AppConfig


class FedexDashboardConfig(AppConfig):
    """The Horizon plugin as a Django app (its templates).

    Its label cannot clash with Horizon's own apps.
    """

    name = 'fedex_dashboard'
    label = 'fedex_dashboard'
    verbose_name = 'Migration over FedEx'
