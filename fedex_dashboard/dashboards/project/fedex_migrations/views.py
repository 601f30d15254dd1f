from fedex_dashboard.content.migrations import tables
from fedex_dashboard.content.migrations import views

NAMESPACE = 'horizon:project:fedex_migrations'


class IndexView(views.IndexView):
    table_class = tables.MigrationsTable
    all_projects = False


class DetailView(views.DetailView):
    table_class = tables.MigrationsTable
    url_namespace = NAMESPACE


class CreateView(views.CreateView):
    url_namespace = NAMESPACE
