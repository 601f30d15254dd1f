"""The OSC plugin module (``openstack.cli.extension: fedex``).

OSC imports this module when it starts; it builds a
:class:`fedexclient.client.Client` on the first ``openstack fedex`` command
only.
"""

import logging

from osc_lib import utils

LOG = logging.getLogger(__name__)

API_NAME = 'fedex'
API_VERSION_OPTION = 'os_fedex_api_version'
API_VERSIONS = {'1': 'fedexclient.client.Client'}
DEFAULT_API_VERSION = '1'
SERVICE_TYPE = 'vm-shipping'


class _OurOverrideIsNotABug(logging.Filter):
    """Hide cliff's warning about our deliberate ``server migrate``.

    This plugin replaces the built-in ``server migrate`` with a subclass
    that adds ``--fedex`` (and behaves exactly as before without it). cliff
    warns about every duplicate command on every run, even ``openstack
    server list``; only that one warning, naming our module, is dropped.
    """

    def filter(self, record):
        args = record.args if isinstance(record.args, dict) else {}
        return not (args.get('name') == 'server migrate'
                    and 'nova_fedex.osc' in str(args.get('modules', '')))


logging.getLogger('cliff.commandmanager').addFilter(_OurOverrideIsNotABug())


def make_client(instance):
    """The fedex-api client for OSC's ``client_manager.fedex``."""
    cls = utils.get_client_class(API_NAME, instance._api_version[API_NAME],
                                 API_VERSIONS)
    endpoint = instance.get_endpoint_for_service_type(
        SERVICE_TYPE, region_name=instance.region_name,
        interface=instance.interface)
    return cls(session=instance.session, endpoint=endpoint,
               service_type=SERVICE_TYPE, interface=instance.interface,
               region_name=instance.region_name)


def build_option_parser(parser):
    parser.add_argument(
        '--os-fedex-api-version', metavar='<fedex-api-version>',
        default=utils.env('OS_FEDEX_API_VERSION',
                          default=DEFAULT_API_VERSION),
        help='fedex-api version, default=%s (Env: OS_FEDEX_API_VERSION)'
             % DEFAULT_API_VERSION)
    return parser
