"""The protocol page agrees with the code it describes."""

import os
import re

import testtools

from lsrp.protocol import frames
from lsrp.protocol import messages

PAGE = os.path.join(os.path.dirname(__file__), '..', '..', '..', '..',
                    'doc', 'source', 'protocol.rst')


class TestProtocolPage(testtools.TestCase):

    def test_frame_header_layout(self):
        with open(PAGE) as f:
            text = f.read()
        self.assertIn('is a %d-byte header' % frames.HEADER_SIZE, text)
        # The layout table: offset, size and field of each header field,
        # then the body at the header's end.
        rows = re.findall(r'^ +(\d+) +(\d+|-) (\w+)', text, re.M)
        fields = [(int(o), s, n) for o, s, n in rows]
        offset = 0
        for start, size, name in fields:
            self.assertEqual(offset, start, name)
            if name == 'body':
                break
            offset += int(size)
        self.assertEqual(frames.HEADER_SIZE, offset)
        self.assertEqual('body', fields[-1][2])

    def test_every_message_is_in_the_table(self):
        with open(PAGE) as f:
            text = f.read()
        for code, name in sorted(messages.NAMES.items()):
            row = r'^0x%02X +%s +%s ' % (code, re.escape(
                messages.THESIS_CODES[name]), name)
            self.assertIsNotNone(re.search(row, text, re.M), row)
