# The project dashboard's "Migration over FedEx" group: members follow the
# migrations of their project's servers.
PANEL_GROUP = 'fedex'
PANEL_GROUP_NAME = 'Migration over FedEx'
PANEL_GROUP_DASHBOARD = 'project'
# The plugin's Django app (templates), added once for all its panels: this
# file must be enabled whenever any other _19xx/_29xx fedex file is.
ADD_INSTALLED_APPS = ['fedex_dashboard']
