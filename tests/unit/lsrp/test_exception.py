import testtools

from lsrp import exception


class TestException(testtools.TestCase):

    def test_template_filled(self):
        e = exception.PortInUse(site='site-a', daemon='mon.a', port=13300,
                                address='127.0.0.1', holder=' by pid 7')
        self.assertIn('port 13300', str(e))
        self.assertIn('by pid 7', str(e))
        self.assertIsInstance(e, exception.FedexException)

    def test_missing_key_keeps_message(self):
        e = exception.PortInUse(site='site-a')
        self.assertIn('site-a', str(e))

    def test_explicit_message(self):
        self.assertEqual('boom', str(exception.SandboxError('boom')))
