"""Views shared by the project and admin migrations panels.

A panel's views subclass these and name their table class and URL
namespace; the admin ones list every project's migrations.
"""

from django import urls
from django.utils.translation import gettext_lazy as _

from horizon import exceptions
from horizon import forms
from horizon import messages
from horizon import tables
from horizon import tabs
from horizon.utils import memoized

from fedex_dashboard.api import fedex
from fedex_dashboard.content.migrations import forms as m_forms
from fedex_dashboard.content.migrations import tables as m_tables
from fedex_dashboard.content.migrations import tabs as m_tabs
from fedex_dashboard.content import states


class IndexView(tables.DataTableView):
    table_class = m_tables.MigrationsTable
    template_name = 'horizon/common/_data_table_view.html'
    page_title = _('Migrations over FedEx')
    all_projects = False

    def get_data(self):
        state = None
        info = self.get_server_filter_info(self.request)
        if info and info['value']:
            state = info['value'].strip().upper()
            if state not in states.ALL:
                messages.error(self.request, _(
                    '"%(state)s" is not a migration state: use one of '
                    '%(states)s.') % {'state': info['value'],
                                      'states': ', '.join(states.ALL)})
                return []
        try:
            migrations = fedex.migration_list(
                self.request, all_projects=self.all_projects, state=state)
        except fedex.FedexAPIError as e:
            exceptions.handle(self.request, str(e))
            return []
        m_tables._name_sites(self.request, migrations)
        return migrations


class DetailView(tabs.TabbedTableView):
    tab_group_class = m_tabs.MigrationDetailTabs
    template_name = 'horizon/common/_detail.html'
    page_title = '{{ migration.name|default:migration.id }}'
    url_namespace = 'horizon:project:fedex_migrations'
    table_class = m_tables.MigrationsTable

    @memoized.memoized_method
    def get_data(self):
        try:
            m = fedex.migration_get(self.request, self.kwargs['migration_id'])
        except fedex.FedexAPIError as e:
            exceptions.handle(self.request, str(e),
                              redirect=urls.reverse(self.url_namespace +
                                                    ':index'))
        m_tables._name_sites(self.request, [m])
        return m

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        m = self.get_data()
        table = self.table_class(self.request)
        context['migration'] = m
        context['url'] = urls.reverse(self.url_namespace + ':index')
        context['actions'] = table.render_row_actions(m)
        return context

    def get_tabs(self, request, *args, **kwargs):
        return self.tab_group_class(request, migration=self.get_data(),
                                    **kwargs)


class CreateView(forms.ModalFormView):
    form_class = m_forms.CreateMigrationForm
    template_name = 'fedex/migrations/create.html'
    modal_id = 'create_fedex_migration_modal'
    modal_header = _('Create Migration over FedEx')
    submit_label = _('Create Migration')
    page_title = _('Create Migration over FedEx')
    url_namespace = 'horizon:project:fedex_migrations'

    def get_success_url(self):
        return urls.reverse(self.url_namespace + ':index')

    @property
    def submit_url(self):
        return urls.reverse(self.url_namespace + ':create')

    @property
    def cancel_url(self):
        return self.get_success_url()

    def form_invalid(self, form):
        # Also reached after a preview: the form again, with the forecast.
        context = self.get_context_data(form=form)
        context['plan'] = form.plan
        context['plan_rows'] = m_forms.plan_rows(form.plan)
        context['server_rows'] = m_forms.server_rows(form.plan)
        return self.render_to_response(context)
