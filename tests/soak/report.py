"""The soak's report: faults per phase, outcomes, violations, recovery.

Pure: made from the records the runner keeps; printed as text and written
as reStructuredText for doc/source/reliability.rst.
"""

import statistics

from tests.soak import schedule


def rst_table(headers, rows):
    """A reStructuredText simple table (every cell a string)."""
    rows = [[str(c) if c is not None else '-' for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows])
              for i, h in enumerate(headers)]
    rule = '  '.join('=' * w for w in widths)

    def line(cells):
        return '  '.join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()
    out = [rule, line(headers), rule]
    out += [line(r) for r in rows]
    out.append(rule)
    return '\n'.join(out)


class Report(object):
    """What one soak did and found."""

    def __init__(self, seed, command, plan=None):
        self.seed = seed
        self.command = command
        self.plan = plan
        self.faults = []        # dicts, see add_fault
        self.outcomes = []      # dicts, see add_outcome
        self.violations = []    # dicts: migration, invariant, detail
        self.findings = []      # product problems seen (text), not papered
        # Seconds from a server's delete (Nova took it) to its migration's
        # abort, one per deleted server (SoakTestCase.watch_abort).
        self.abort_latencies = []
        self.wall_seconds = None

    def add_fault(self, index, kind, planned_phase, phase, migration,
                  injected_at, recovered_after, note=''):
        self.faults.append({
            'index': index, 'kind': kind, 'planned_phase': planned_phase,
            'phase': phase, 'migration': migration,
            'injected_at': injected_at, 'recovered_after': recovered_after,
            'note': note})

    def add_outcome(self, index, migration, server, with_volume, outcome,
                    state, seconds, reason='', faults=(), operator=()):
        self.outcomes.append({
            'index': index, 'migration': migration, 'server': server,
            'with_volume': with_volume, 'outcome': outcome, 'state': state,
            'seconds': seconds, 'reason': reason, 'faults': list(faults),
            'operator': list(operator)})

    def violation(self, migration, invariant, detail):
        self.violations.append({'migration': migration,
                                'invariant': invariant, 'detail': detail})

    # --- summaries -------------------------------------------------------

    def faults_per_phase(self):
        """{kind: {phase: n}} of the faults injected (their actual phase)."""
        out = {}
        for f in self.faults:
            row = out.setdefault(f['kind'], {})
            row[f['phase']] = row.get(f['phase'], 0) + 1
        return out

    def recovery(self):
        """{kind: (n, median s, max s)} of the recovery times measured."""
        times = {}
        for f in self.faults:
            if f['recovered_after'] is not None:
                times.setdefault(f['kind'], []).append(f['recovered_after'])
        return {k: (len(v), statistics.median(v), max(v))
                for k, v in times.items()}

    def outcome_counts(self):
        out = {}
        for o in self.outcomes:
            out[o['outcome']] = out.get(o['outcome'], 0) + 1
        return out

    def at_cutover(self):
        return sum(1 for f in self.faults
                   if f['phase'] == schedule.CUTTING_OVER)

    # --- text ------------------------------------------------------------

    def phase_columns(self):
        seen = {f['phase'] for f in self.faults}
        cols = [p for p in schedule.PHASES if p in seen]
        return cols + sorted(seen - set(cols))

    def to_rst(self, title='Soak report'):
        out = [title, '-' * len(title), '']
        out.append('Command: ``%s``' % self.command)
        out.append('')
        wall = ('%.0f s' % self.wall_seconds) if self.wall_seconds \
            is not None else '?'
        out.append('Seed %s; %d migrations, %d faults (%d during '
                   'CUTTING_OVER); wall time %s; invariant violations: '
                   '**%d**.' % (self.seed, len(self.outcomes),
                                len(self.faults), self.at_cutover(), wall,
                                len(self.violations)))
        out.append('')
        cols = self.phase_columns()
        per = self.faults_per_phase()
        rows = []
        for kind in [k for k in schedule.KINDS if k in per] + sorted(
                set(per) - set(schedule.KINDS)):
            rows.append([kind] + [per[kind].get(p, '') or '' for p in cols]
                        + [sum(per[kind].values())])
        totals = ['total'] + [sum(per[k].get(p, 0) for k in per)
                              for p in cols] + [len(self.faults)]
        rows.append(totals)
        out += ['Faults injected, per phase of the migration they hit:', '',
                rst_table(['fault'] + cols + ['total'], rows), '']
        rec = self.recovery()
        rows = [[k, n, '%.1f' % med, '%.1f' % mx]
                for k, (n, med, mx) in sorted(rec.items())]
        out += ['Time to recover (seconds from the fault to the service '
                'answering again and both terminals UP):', '',
                rst_table(['fault', 'n', 'median', 'max'], rows), '']
        if self.abort_latencies:
            out += ['Servers deleted by their user: each migration aborted '
                    '%s s after Nova took the delete (the bound: 10 s).' % (
                        ', '.join('%.1f' % a for a in self.abort_latencies)),
                    '']
        rows = [[o['index'], (o['migration'] or '-')[:8],
                 'yes' if o['with_volume'] else 'no', o['outcome'],
                 o['state'], '%.0f' % o['seconds']
                 if o['seconds'] is not None else '-',
                 ', '.join(o['faults']) or '-',
                 '; '.join(o['operator']) or '-']
                for o in self.outcomes]
        out += ['Outcome of each migration (faults: those injected while it '
                'ran, ``*`` aimed at it):', '',
                rst_table(['#', 'migration', 'volume', 'outcome', 'state',
                           'seconds', 'faults', 'operator'], rows), '']
        if self.violations:
            rows = [[(v['migration'] or '-')[:8], v['invariant'],
                     v['detail'].replace('\n', ' ')[:200]]
                    for v in self.violations]
            out += ['Invariant violations:', '',
                    rst_table(['migration', 'invariant', 'detail'], rows),
                    '']
        else:
            out += ['Invariant violations: none.', '']
        if self.findings:
            out += ['Seen on the way (for the record):', '']
            out += ['- %s' % f.replace('\n', ' ') for f in self.findings]
            out.append('')
        return '\n'.join(out)

    def to_dict(self):
        return {'seed': self.seed, 'command': self.command,
                'wall_seconds': self.wall_seconds, 'faults': self.faults,
                'outcomes': self.outcomes, 'violations': self.violations,
                'findings': self.findings,
                'abort_latencies': self.abort_latencies,
                'plan': self.plan.as_dict() if self.plan else None}
