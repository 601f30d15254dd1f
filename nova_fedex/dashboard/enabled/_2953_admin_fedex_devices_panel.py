PANEL = 'fedex_devices'
PANEL_DASHBOARD = 'admin'
PANEL_GROUP = 'fedex'
ADD_PANEL = 'nova_fedex.dashboard.dashboards.admin.fedex_devices.panel.Devices'
