"""What the fedex tests share: four personas and the checks of refusals.

Every test gets the clients of an admin, a member and a reader of one
project, and a member of another project (tempest's dynamic credentials,
``[auth] use_dynamic_credentials = True``): fedex-api's rules are written
for exactly these (fedex_manager/policies/base.py).
"""

from tempest import config
from tempest.lib import exceptions as lib_exc
from tempest import test

CONF = config.CONF

# tempest's exception for each status fedex-api refuses with.
REFUSALS = {400: lib_exc.BadRequest, 403: lib_exc.Forbidden,
            404: lib_exc.NotFound, 409: lib_exc.Conflict}
POLICY = 'fedex.PolicyNotAuthorized'


class BaseFedexTest(test.BaseTestCase):
    """fedex-api as admin, member, reader, and another project's member."""

    credentials = ['project_admin', 'project_member', 'project_reader',
                   'project_alt_member']

    @classmethod
    def skip_checks(cls):
        super().skip_checks()
        if not CONF.service_available.fedex:
            raise cls.skipException('[service_available] fedex is False')

    @classmethod
    def setup_clients(cls):
        super().setup_clients()
        cls.admin = cls.os_project_admin.fedex.FedexClient()
        cls.member = cls.os_project_member.fedex.FedexClient()
        cls.reader = cls.os_project_reader.fedex.FedexClient()
        cls.alt = cls.os_project_alt_member.fedex.FedexClient()
        cls.project_id = cls.os_project_member.credentials.project_id
        cls.alt_project_id = cls.os_project_alt_member.credentials.project_id

    def personas(self):
        """(name, client) of the four, for messages."""
        return [('admin', self.admin), ('member', self.member),
                ('reader', self.reader), ('alt member', self.alt)]

    def assert_refused(self, status, fn, *args, code=None, detail=None,
                       **kwargs):
        """``fn`` answers ``status`` in the API-WG error format; the errors.

        Every error names the status; ``code`` and ``detail`` (a
        substring of the first error's) are checked when given.
        """
        with self.assertRaises(REFUSALS[status]) as cm:
            fn(*args, **kwargs)
        body = cm.exception.resp_body
        # RestClient unwraps a body with one key: {"errors": [...]}.
        errors = body['errors'] if isinstance(body, dict) else body
        self.assertIsInstance(errors, list, body)
        self.assertGreaterEqual(len(errors), 1, body)
        for e in errors:
            self.assertEqual(status, e['status'], body)
            if code is not None:
                self.assertEqual(code, e['code'], body)
        if detail is not None:
            self.assertIn(detail, errors[0]['detail'])
        return errors

    def assert_policy_refused(self, rule, fn, *args, **kwargs):
        """403 naming the rule that refused."""
        return self.assert_refused(403, fn, *args, code=POLICY,
                                   detail=rule, **kwargs)

    def ids(self, items):
        return {i['id'] for i in items}
