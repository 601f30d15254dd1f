"""The cloud checked once, one browser per class; screenshots on failure.

The stack (the mini-cloud's Keystone, fedex-api and Horizon, the sandbox's
manager) is checked by the first test that needs it; screenshots go to
``$FEDEX_SCREENSHOT_DIR`` (default: ``<sandbox>/browser/screenshots``).
"""

import atexit
import os
import unittest

from tests.browser import browser as browser_mod
from tests.browser import stack as stack_mod

_STACK = None


def stack():
    global _STACK
    if _STACK is None:
        _STACK = stack_mod.Stack()
        atexit.register(_STACK.stop)
    return _STACK


class BrowserTestCase(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.stack = stack()
        shots = os.environ.get('FEDEX_SCREENSHOT_DIR') or os.path.join(
            cls.stack.sandbox.root, 'browser', 'screenshots')
        cls.browser = browser_mod.Browser(cls.stack.horizon_url,
                                          os.path.join(shots, cls.__name__))

    @classmethod
    def tearDownClass(cls):
        cls.browser.quit()

    def setUp(self):
        super().setUp()
        self.addCleanup(self._shot_on_failure)

    def _shot_on_failure(self):
        outcome = getattr(self, '_outcome', None)
        result = getattr(outcome, 'result', None)
        failed = result is not None and any(
            t is self for t, _e in (result.failures + result.errors))
        if failed or (outcome is not None and not outcome.success):
            self.browser.shot('failed-%s' % self._testMethodName)

    def login(self, user):
        # Once per user in a row: each login is a password check in
        # Keystone (bcrypt), seconds on a loaded machine.
        if self.browser.user != user:
            self.browser.login(user, stack_mod.PASSWORD)

    @classmethod
    def api(cls, user, method, path, **kw):
        """A real call to fedex-api as ``user``; the JSON answer."""
        sess, url = cls.stack.api_session(user)
        resp = sess.request(url + path, method, raise_exc=False, **kw)
        if resp.status_code >= 400:
            raise AssertionError('%s %s as %s: %d %s' % (
                method, path, user, resp.status_code, resp.text))
        return resp.json() if resp.content else None
