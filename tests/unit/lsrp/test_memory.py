import gc
import unittest

from lsrp import memory


class TuneTest(unittest.TestCase):

    def test_glibc_accepts_the_settings(self):
        # Each value must be within glibc's limits, or mallopt refuses it
        # and the export pays a page fault per 4 KiB of every buffer again.
        self.addCleanup(gc.set_threshold, *gc.get_threshold())
        self.assertTrue(memory.tune())
        self.assertEqual(memory.GC_THRESHOLD, gc.get_threshold()[0])
