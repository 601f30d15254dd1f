from fedex_dashboard.content.migrations import tables
from fedex_dashboard.content.migrations import views

NAMESPACE = 'horizon:admin:fedex_migrations'


class IndexView(views.IndexView):
    table_class = tables.AdminMigrationsTable
    all_projects = True


class DetailView(views.DetailView):
    table_class = tables.AdminMigrationsTable
    url_namespace = NAMESPACE


class CreateView(views.CreateView):
    url_namespace = NAMESPACE
