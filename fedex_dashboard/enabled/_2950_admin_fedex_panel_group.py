# The admin dashboard's "Migration over FedEx" group: every migration,
# shipment and device, and the custody forms.
PANEL_GROUP = 'fedex'
PANEL_GROUP_NAME = 'Migration over FedEx'
PANEL_GROUP_DASHBOARD = 'admin'
