import datetime

import testtools

from fedex_manager.api import schemas
from fedex_manager import options
from lsrp import exception


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

    def test_max_rounds_is_at_least_one(self):
        # The catch-up runs a round before it looks at max_rounds: 0 would
        # run one all the same.
        e = self.assertRaises(exception.InvalidInput, options.validate,
                              {'max_rounds': 0})
        self.assertIn('max_rounds', str(e))
        self.assertEqual(1, options.validate({'max_rounds': 1})['max_rounds'])

    def test_times_and_days_as_the_schema_says(self):
        for bad, field in (({'cutover_window': {'start': '24:00',
                                                'end': '01:00'}},
                            'cutover_window.start'),
                           ({'cutover_window': {'start': '1:00',
                                                'end': '02:00'}},
                            'cutover_window.start'),
                           ({'rate_schedule': [{'days': 'mon, tue',
                                                'start': '08:00',
                                                'end': '09:00',
                                                'rate_cap': 1}]},
                            'rate_schedule[0].days'),
                           ({'rate_schedule': [{'start': '08:00',
                                                'end': '09:00'}]},
                            'rate_schedule[0]'),
                           ({'shipment_group': 'no spaces'},
                            'shipment_group')):
            e = self.assertRaises(exception.InvalidInput, options.validate,
                                  bad)
            self.assertIn('invalid %s:' % field, str(e))
        o = options.validate({'cutover_window': None, 'rate_schedule': [
            {'days': 'Sat,sun', 'start': '00:00', 'end': '23:59',
             'rate_cap': 1}]})
        sunday = datetime.datetime(2026, 11, 29, 12, 0)
        self.assertEqual(1, options.rate_cap(o, sunday))

    def test_the_api_checks_the_same_schema(self):
        for key, spec in schemas.OPTIONS['properties'].items():
            self.assertIs(options.SCHEMA['properties'][key], spec)
        for key, spec in schemas.MIGRATION_UPDATE['properties'].items():
            if key != 'name':
                self.assertIs(options.SCHEMA['properties'][key], spec)
        # A wave's label is the manager's, not an API caller's.
        self.assertNotIn('shipment_group', schemas.OPTIONS['properties'])
