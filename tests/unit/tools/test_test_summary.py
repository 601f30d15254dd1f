"""tools/test_summary.py: what CI's shortened log keeps of a failure."""

import importlib.util
import os

import testtools

_PATH = os.path.join(os.path.dirname(__file__), '..', '..', '..', 'tools',
                     'test_summary.py')
_spec = importlib.util.spec_from_file_location('test_summary', _PATH)
test_summary = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(test_summary)

TRACEBACK = """\
Traceback (most recent call last):
  File "/x/tests/openstack/test_demo.py", line 90, in test_demo
    self.assert_counting(sid, root_b, vol_b)
  File "/x/tests/openstack/base.py", line 99, in assert_counting
    raise AssertionError('%s\\n%s' % (e, self.guest_state(server_id)))
AssertionError: guest disk volume-1: counter not advancing by 20 in 300 s
guest 1 on site-b-h1:
virsh domstate: paused (migration)
"""


class TestFailureLines(testtools.TestCase):

    def test_the_error_and_its_frame_are_kept(self):
        self.assertEqual([
            '  File "/x/tests/openstack/base.py", line 99, in assert_counting',
            "    raise AssertionError('%s\\n%s' % (e, self.guest_state("
            "server_id)))",
            'AssertionError: guest disk volume-1: counter not advancing by 20'
            ' in 300 s',
            'guest 1 on site-b-h1:',
            'virsh domstate: paused (migration)'],
            test_summary.failure_lines(TRACEBACK))

    def test_a_long_error_keeps_its_first_and_last_lines(self):
        console = ''.join('tick %d\n' % i for i in range(100))
        lines = test_summary.failure_lines(TRACEBACK + console, limit=10)
        self.assertEqual(10, len(lines))
        self.assertIn('AssertionError: guest disk volume-1', lines[2])
        self.assertEqual('[... 96 lines ...]', lines[5])
        self.assertEqual('tick 99', lines[-1])

    def test_text_without_a_traceback_is_cut_in_the_middle(self):
        text = ''.join('line %d\n' % i for i in range(40))
        lines = test_summary.failure_lines(text, limit=5)
        self.assertEqual(['line 0', 'line 1', '[... 36 lines ...]',
                          'line 38', 'line 39'], lines)
