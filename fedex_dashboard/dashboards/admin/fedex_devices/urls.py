from django.urls import re_path

from fedex_dashboard.content.logistics import views

urlpatterns = [
    re_path(r'^$', views.DevicesView.as_view(), name='index'),
    re_path(r'^(?P<device_id>[^/]+)/custody/$', views.CustodyView.as_view(), name='custody'),
]
