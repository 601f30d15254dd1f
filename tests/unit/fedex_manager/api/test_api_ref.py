"""The API reference (api-ref/, ``tox -e api-ref``) covers every route.

A route added to fedex_manager/api/app.py without its ``rest_method`` in
api-ref/source/*.inc fails here, before the reference is built.
"""

import glob
import json
import os
import re

import testtools

from fedex_manager.api import app as app_mod
from fedex_manager.api import deploy

SOURCE = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir,
                      os.pardir, os.pardir, 'api-ref', 'source')
_METHOD = re.compile(r'^\.\. rest_method:: (\S+) (\S+)\s*$', re.M)
_SAMPLE = re.compile(r'^\.\. literalinclude:: (samples/\S+)\s*$', re.M)


def documented():
    found = {}
    for path in glob.glob(os.path.join(SOURCE, '*.inc')):
        with open(path) as f:
            text = f.read()
        for method, route in _METHOD.findall(text):
            found[(method, route)] = os.path.basename(path)
    return found


class TestAPIReference(testtools.TestCase):

    def test_every_route_and_only_routes(self):
        routes = {(method, path) for path, methods in app_mod.ROUTES.items()
                  for method in methods}
        routes.add(('GET', deploy.HEALTHCHECK_PATH))
        got = set(documented())
        self.assertEqual(set(), routes - got, 'routes without a rest_method')
        self.assertEqual(set(), got - routes, 'rest_methods of no route')

    def test_samples_exist_and_are_json(self):
        with open(os.path.join(SOURCE, 'index.rst')) as f:
            included = set(_SAMPLE.findall(f.read()))
        for path in glob.glob(os.path.join(SOURCE, '*.inc')):
            with open(path) as f:
                included.update(_SAMPLE.findall(f.read()))
        on_disk = {os.path.relpath(p, SOURCE) for p in glob.glob(
            os.path.join(SOURCE, 'samples', '*.json'))}
        self.assertEqual(set(), included - on_disk, 'missing samples')
        self.assertEqual(set(), on_disk - included, 'unused samples')
        for name in on_disk:
            with open(os.path.join(SOURCE, name)) as f:
                json.load(f)
