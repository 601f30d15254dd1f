#!/usr/bin/env python3
"""Print the last stestr run as one line: 'label: N passed, N failed, N skipped'.

With --no-skips, a skipped test fails the run: functional tests must run
against the real sandbox, never skip for lack of it. The failures' names and
the hearts of their tracebacks (the innermost frame, the error's
first and last lines) are also kept in .stestr/failures-<label>.txt,
which .ci/run prints last, where CI's shortened log still shows them.
"""

import argparse
import io
import os
import subprocess
import sys

import subunit
import testtools


# Lines kept of each failure: CI's log keeps only its last few dozen.
KEPT_LINES = 25


def failure_lines(text, limit=KEPT_LINES):
    """The innermost frame of a traceback and its error, at most limit lines.

    An error's message can be long (a guest's state, a daemon's log tail):
    its first lines say what failed, so they are kept with its last ones and
    the middle is cut, rather than keeping only the end.
    """
    lines = text.rstrip().splitlines()
    frames = [i for i, line in enumerate(lines)
              if line.startswith('  File "')]
    kept = lines[frames[-1]:] if frames else lines
    if len(kept) > limit:
        head = limit // 2
        tail = limit - head - 1
        kept = kept[:head] + ['[... %d lines ...]' % (
            len(kept) - head - tail)] + kept[-tail:]
    return kept


def keep_failures(label, failures):
    """Write each failed test's id and the heart of its traceback to a file."""
    path = os.path.join('.stestr', 'failures-%s.txt' % label)
    os.makedirs('.stestr', exist_ok=True)
    if not failures:
        if os.path.exists(path):
            os.unlink(path)
        return
    with open(path, 'w') as out:
        for case, details in failures:
            out.write('FAILED %s\n' % case.id())
            out.write(''.join('    %s\n' % line
                              for line in failure_lines(str(details))))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('label')
    parser.add_argument('--no-skips', action='store_true')
    parser.add_argument('--repo-url', help='the stestr repository of the '
                        'run (stestr --repo-url), when not the default')
    args = parser.parse_args()
    repo = ['--repo-url', args.repo_url] if args.repo_url else []
    # This interpreter's stestr: the envs that run in .venv or
    # .venv-openstack (tox.ini) have none on their PATH.
    stream = subprocess.run([sys.executable, '-m', 'stestr'] + repo +
                            ['last', '--subunit'],
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
