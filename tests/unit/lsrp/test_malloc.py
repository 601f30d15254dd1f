import unittest

from lsrp import malloc


class TuneTest(unittest.TestCase):

    def test_glibc_accepts_the_settings(self):
        # Each value must be within glibc's limits, or mallopt refuses it
        # and the export pays a page fault per 4 KiB of every buffer again.
        self.assertTrue(malloc.tune())
