import testtools

from fedex_sandbox import opts as sandbox_opts
from lsrp import opts


class TestOpts(testtools.TestCase):

    def test_list_opts_groups(self):
        self.assertEqual(['ceph', 'shipment', 'server'],
                         [g for g, _ in opts.list_opts()])
        self.assertEqual(['sandbox'], [g for g, _ in sandbox_opts.list_opts()])

    def test_every_option_has_help(self):
        for _, group in opts.list_opts() + sandbox_opts.list_opts():
            for opt in group:
                self.assertTrue(opt.help and opt.help.endswith('.'),
                                opt.name)
