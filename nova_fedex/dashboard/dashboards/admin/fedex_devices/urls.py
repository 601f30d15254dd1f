from django.urls import re_path

from nova_fedex.dashboard.content.logistics import views

urlpatterns = [
    re_path(r'^$', views.DevicesView.as_view(), name='index'),
    re_path(r'^(?P<device_id>[^/]+)/custody/$', views.CustodyView.as_view(), name='custody'),
]
