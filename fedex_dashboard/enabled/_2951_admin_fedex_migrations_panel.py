from fedex_dashboard import exceptions

PANEL = 'fedex_migrations'
PANEL_DASHBOARD = 'admin'
PANEL_GROUP = 'fedex'
ADD_PANEL = 'fedex_dashboard.dashboards.admin.fedex_migrations.panel.Migrations'
# Its errors become Horizon messages that say what to do.
ADD_EXCEPTIONS = {'recoverable': (exceptions.FedexAPIError,)}
