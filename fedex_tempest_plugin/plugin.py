"""The tempest plugin of Migration over FedEx (entry point
``tempest.test_plugins``: ``fedex_tests``)."""

import os

from tempest import config
from tempest.test_discover import plugins

from fedex_tempest_plugin import config as fedex_config


class FedexTempestPlugin(plugins.TempestPlugin):

    def load_tests(self):
        base_path = os.path.split(os.path.dirname(
            os.path.abspath(__file__)))[0]
        test_dir = 'fedex_tempest_plugin/tests'
        return os.path.join(base_path, test_dir), base_path

    def register_opts(self, conf):
        config.register_opt_group(conf, fedex_config.service_available_group,
                                  [fedex_config.service_option])
        config.register_opt_group(conf, fedex_config.fedex_group,
                                  fedex_config.FedexGroup)

    def get_opt_lists(self):
        return [(group.name, opts)
                for group, opts in fedex_config.list_opts()]

    def get_service_clients(self):
        params = {
            'name': 'fedex',
            'service_version': 'fedex.v1',
            'module_path': 'fedex_tempest_plugin.services',
            'client_names': ['FedexClient'],
        }
        params.update(config.service_client_config('fedex'))
        return [params]
