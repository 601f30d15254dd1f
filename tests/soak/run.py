"""``python -m tests.soak.run``: a soak of the chosen size, by hand.

::

    flock /tmp/minicloud.lock python -m tests.soak.run --seed 7 \\
        --migrations 30 --faults 64 --min-each 2 --min-cutting-over 12 \\
        --report soak-report.rst

Runs tests.soak.runner.SoakTestCase's ``run_soak`` as a test (its set-up
and clean-ups: its fedex-api, conductor, terminals and WAN), prints the
report and writes it (RST, and the same as JSON in ``<report>.json``).
Exit status 0 when every invariant held.
"""

import argparse
import json
import os
import sys
import unittest


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--seed', type=int, required=True)
    p.add_argument('--migrations', type=int, required=True)
    p.add_argument('--faults', type=int, required=True)
    p.add_argument('--duration-min', type=float,
                   help='stop after this many minutes (default: none)')
    p.add_argument('--report', help='write the report (RST) here')
    p.add_argument('--concurrency', type=int, default=2,
                   help='migrations at once (default 2: two cores)')
    p.add_argument('--min-each', type=int,
                   help='every catalogue entry at least this many times '
                        '(default: 2 when the faults allow it)')
    p.add_argument('--min-cutting-over', type=int,
                   help='faults aimed at CUTTING_OVER (default faults/6)')
    p.add_argument('--spacing', type=float, default=60,
                   help='mean seconds between migration starts')
    a = p.parse_args(argv)
    params = {'seed': a.seed, 'migrations': a.migrations,
              'faults': a.faults, 'duration_min': a.duration_min,
              'report_path': a.report and os.path.abspath(a.report),
              'concurrency': a.concurrency, 'spacing': a.spacing,
              'command': 'python -m tests.soak.run ' + ' '.join(
                  argv if argv is not None else sys.argv[1:])}
    if a.min_each is not None:
        params['min_each'] = a.min_each
    if a.min_cutting_over is not None:
        params['min_cutting_over'] = a.min_cutting_over
    # Made here, so that a plan the counts cannot satisfy fails at once.
    from tests.soak import schedule
    plan = schedule.Plan(a.seed, a.migrations, a.faults, **{
        k: params[k] for k in ('min_each', 'min_cutting_over', 'spacing')
        if k in params})
    kinds, phases = plan.counts()
    print('plan: %s\nphases: %s' % (json.dumps(kinds), json.dumps(phases)),
          flush=True)
    os.environ['FEDEX_SOAK_PARAMS'] = json.dumps(params)
    from tests.soak import runner
    # In a suite, so that the case's setUpClass (the mini-cloud) runs.
    suite = unittest.TestSuite([runner.SoakTestCase('run_soak')])
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stdout).run(
        suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == '__main__':
    sys.exit(main())
