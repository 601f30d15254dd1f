"""The version documents at / and /v1 (no token needed)."""

from fedex_manager.api import util

MIN_VERSION = '1.0'
MAX_VERSION = '1.0'


def _v1(req):
    return {'id': 'v1.0', 'status': 'CURRENT',
            'min_version': MIN_VERSION, 'max_version': MAX_VERSION,
            'links': [{'rel': 'self', 'href': req.application_url + '/v1'}],
            'media-types': [{'base': 'application/json',
                             'type': 'application/vnd.openstack.'
                                     'vm-shipping-v1+json'}]}


def versions(req):
    return util.json_response(200, {'versions': [_v1(req)]})


def version(req):
    return util.json_response(200, {'version': _v1(req)})
