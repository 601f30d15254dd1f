# The project dashboard's "Migration over FedEx" group: members follow the
# migrations of their project's servers.
PANEL_GROUP = 'fedex'
PANEL_GROUP_NAME = 'Migration over FedEx'
PANEL_GROUP_DASHBOARD = 'project'
