PANEL = 'fedex_migrations'
PANEL_DASHBOARD = 'admin'
PANEL_GROUP = 'fedex'
ADD_PANEL = 'nova_fedex.dashboard.dashboards.admin.fedex_migrations.panel.Migrations'
ADD_INSTALLED_APPS = ['nova_fedex.dashboard']
