#!/usr/bin/env python3
"""Print the last stestr run as one line: 'label: N passed, N failed, N skipped'.

With --no-skips, a skipped test fails the run: functional tests must run
against the real sandbox, never skip for lack of it.
"""

import argparse
import io
import subprocess
import sys

import subunit
import testtools


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
