PANEL = 'fedex_migrations'
PANEL_DASHBOARD = 'project'
PANEL_GROUP = 'fedex'
ADD_PANEL = 'nova_fedex.dashboard.dashboards.project.fedex_migrations.panel.Migrations'
ADD_INSTALLED_APPS = ['nova_fedex.dashboard']
AUTO_DISCOVER_STATIC_FILES = True
