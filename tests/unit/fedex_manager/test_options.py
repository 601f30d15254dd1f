import datetime

import testtools

from lsrp import exception
from fedex_manager import options


class TestOptions(testtools.TestCase):

    def test_defaults(self):
        o = options.validate({})
        self.assertEqual('approved', o['cutover'])
        self.assertEqual(0, o['rate_cap'])

    def test_unknown_and_bad(self):
        e = self.assertRaises(exception.InvalidInput, options.validate,
                              {'rate': 5})
        self.assertIn("unknown option(s) rate", str(e))
        e = self.assertRaises(exception.InvalidInput, options.validate,
                              {'rate_cap': -1})
        self.assertIn('rate_cap', str(e))
        e = self.assertRaises(exception.InvalidInput, options.validate,
                              {'cutover_window': {'start': '25:00',
                                                  'end': '01:00'}})
        self.assertIn('cutover_window.start', str(e))
        e = self.assertRaises(exception.InvalidInput, options.validate,
                              {'rate_schedule': [{'days': 'mon-xyz',
                                                  'start': '08:00',
                                                  'end': '18:00',
                                                  'rate_cap': 1}]})
        self.assertIn('rate_schedule[0].days', str(e))

    def test_carrier_is_a_courier_plugin(self):
        self.assertIsNone(options.validate({})['carrier'])
        self.assertEqual('manual',
                         options.validate({'carrier': 'manual'})['carrier'])
        e = self.assertRaises(exception.InvalidInput, options.validate,
                              {'carrier': 'pigeon'})
        self.assertIn("carrier", str(e))
        self.assertIn("known: manual, simulated", str(e))

    def test_schedule_lowers_rate_in_business_hours(self):
        o = options.validate({'rate_cap': 100, 'rate_schedule': [
            {'days': 'mon-fri', 'start': '08:00', 'end': '18:00',
             'rate_cap': 10}]})
        tuesday_noon = datetime.datetime(2026, 11, 24, 12, 0)
        tuesday_night = datetime.datetime(2026, 11, 24, 22, 0)
        saturday_noon = datetime.datetime(2026, 11, 28, 12, 0)
        self.assertEqual(10, options.rate_cap(o, tuesday_noon))
        self.assertEqual(100, options.rate_cap(o, tuesday_night))
        self.assertEqual(100, options.rate_cap(o, saturday_noon))

    def test_window_over_midnight(self):
        o = options.validate({'cutover_window': {'start': '23:00',
                                                 'end': '02:00'}})
        self.assertTrue(options.in_cutover_window(
            o, datetime.datetime(2026, 1, 1, 0, 30)))
        self.assertFalse(options.in_cutover_window(
            o, datetime.datetime(2026, 1, 1, 12, 0)))
