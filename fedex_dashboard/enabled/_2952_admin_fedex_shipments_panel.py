PANEL = 'fedex_shipments'
PANEL_DASHBOARD = 'admin'
PANEL_GROUP = 'fedex'
ADD_PANEL = 'fedex_dashboard.dashboards.admin.fedex_shipments.panel.Shipments'
