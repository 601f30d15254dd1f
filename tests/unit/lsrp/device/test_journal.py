import os

import fixtures
import testtools

from lsrp.device import journal


class TestJournal(testtools.TestCase):

    def test_torn_tail_is_ignored_and_cut(self):
        path = os.path.join(self.useFixture(fixtures.TempDir()).path, 'j')
        j = journal.Journal(path)
        j.append({'a': 1})
        j.append({'b': 2})
        j.close()
        with open(path, 'ab') as f:
            f.write(b'{"c": 3')  # killed while writing
        self.assertEqual([{'a': 1}, {'b': 2}], journal.Journal(path).entries())
        j = journal.Journal(path)
        j.append({'d': 4})
        j.close()
        self.assertEqual([{'a': 1}, {'b': 2}, {'d': 4}],
                         journal.Journal(path).entries())
