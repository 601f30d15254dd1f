#!/usr/bin/env python3
"""Print the last stestr run as one line: 'label: N passed, N failed, N skipped'.

With --no-skips, a skipped test fails the run: functional tests must run
against the real sandbox, never skip for lack of it. The failures' names and
the ends of their tracebacks are also kept in .stestr/failures-<label>.txt,
which .ci/run prints last, where CI's shortened log still shows them.
"""

import argparse
import io
import os
import subprocess
import sys

import subunit
import testtools


TRACEBACK_TAIL = 25


def keep_failures(label, failures):
    """Write each failed test's id and the end of its traceback to a file."""
    path = os.path.join('.stestr', 'failures-%s.txt' % label)
    if not failures:
        if os.path.exists(path):
            os.unlink(path)
        return
    with open(path, 'w') as out:
        for case, details in failures:
            out.write('FAILED %s\n' % case.id())
            lines = str(details).rstrip().splitlines()[-TRACEBACK_TAIL:]
            out.write(''.join('    %s\n' % line for line in lines))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('label')
    parser.add_argument('--no-skips', action='store_true')
    args = parser.parse_args()
    stream = subprocess.run(['stestr', 'last', '--subunit'],
                            capture_output=True, check=True).stdout
    summary = testtools.StreamSummary()
    summary.startTestRun()
    subunit.ByteStreamToStreamResult(io.BytesIO(stream)).run(summary)
    summary.stopTestRun()
    failed = len(summary.errors) + len(summary.failures)
    skipped = [t.id() for t, _ in summary.skipped]
    passed = summary.testsRun - failed - len(skipped)
    print('%s: %d passed, %d failed, %d skipped' % (
        args.label, passed, failed, len(skipped)))
    keep_failures(args.label, summary.errors + summary.failures)
    if args.no_skips and skipped:
        print('%s tests must not skip: %s' % (args.label, ', '.join(skipped)),
              file=sys.stderr)
        return 1
    if summary.testsRun == 0:
        print('%s: no test ran' % args.label, file=sys.stderr)
        return 1
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
