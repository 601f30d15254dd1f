from django.urls import re_path

from fedex_dashboard.content.logistics import views

urlpatterns = [
    re_path(r'^$', views.ShipmentsView.as_view(), name='index'),
    re_path(r'^(?P<shipment_id>[^/]+)/event/$', views.CarrierEventView.as_view(), name='event'),
]
