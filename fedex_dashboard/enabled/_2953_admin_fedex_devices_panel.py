PANEL = 'fedex_devices'
PANEL_DASHBOARD = 'admin'
PANEL_GROUP = 'fedex'
ADD_PANEL = 'fedex_dashboard.dashboards.admin.fedex_devices.panel.Devices'
