"""The soak's plan, made from a seed alone: which migrations, which faults.

Pure: no cloud, no clock. The same seed and counts give the same plan, so
a run that found something can be run again as it was.
"""

import random

# The migration phases a fault may be aimed at (fedex_manager.states), in
# the order a migration goes through them. The short ones (EXPORTING with
# a tiny guest lasts seconds) are hit when the runner sees them; a fault
# whose phase no migration reaches any more is injected in whatever phase
# is there, and the report says so.
PHASES = ('EXPORTING', 'IN_TRANSIT', 'IMPORTING', 'CATCHING_UP',
          'READY_FOR_CUTOVER', 'CUTTING_OVER')
CUTTING_OVER = 'CUTTING_OVER'

# The catalogue (tests/soak/faults.py has a class for each).
SERVICE_KINDS = (
    'kill-conductor',
    'kill-terminal-site-a', 'kill-terminal-site-b',
    'kill-nova-compute-source', 'kill-nova-compute-dest',
    'kill-libvirtd-source', 'kill-libvirtd-dest',
    'restart-rabbitmq', 'restart-mariadb', 'restart-zookeeper',
    'stop-osd-site-a', 'stop-osd-site-b',
    'cut-wan',
)
# What a user does to the server or the migration: each ends that
# migration's story, so a migration takes one of these at most.
USER_KINDS = ('user-delete-server', 'user-stop-server',
              'user-detach-volume', 'user-abort')
KINDS = SERVICE_KINDS + USER_KINDS
# Needs a migration with a volume.
NEEDS_VOLUME = ('user-detach-volume',)


class MigrationPlan(object):
    """One migration of the soak: when it starts and what it moves."""

    def __init__(self, index, start_after, with_volume):
        self.index = index
        self.start_after = start_after      # seconds after the run began
        self.with_volume = with_volume

    def as_dict(self):
        return {'index': self.index, 'start_after': self.start_after,
                'with_volume': self.with_volume}

    def __repr__(self):
        return 'MigrationPlan(%r)' % self.as_dict()


class FaultPlan(object):
    """One fault: its kind, the phase it waits for, how long it lasts.

    ``delay``: seconds after the phase is seen before the fault (spreads
    faults inside long phases, e.g. into the memory copy of a cutover);
    ``hold``: seconds before the supervisor's recovery (a restart after a
    kill, the OSD started again, the WAN back).
    """

    def __init__(self, index, kind, phase, delay, hold):
        self.index = index
        self.kind = kind
        self.phase = phase
        self.delay = delay
        self.hold = hold

    @property
    def is_user(self):
        return self.kind in USER_KINDS

    def as_dict(self):
        return {'index': self.index, 'kind': self.kind, 'phase': self.phase,
                'delay': self.delay, 'hold': self.hold}

    def __repr__(self):
        return 'FaultPlan(%r)' % self.as_dict()


def hold_for(kind, rng):
    """How long a fault lasts before it is recovered, seconds."""
    if kind == 'cut-wan':
        return 30.0
    if kind.startswith('stop-osd'):
        return round(rng.uniform(10, 20), 1)
    if kind.startswith('restart-'):
        return round(rng.uniform(2, 5), 1)
    if kind in USER_KINDS:
        return 0.0
    # systemd's RestartSec for a killed daemon.
    return round(rng.uniform(3, 10), 1)


class Plan(object):
    """Migrations and faults of one soak, from ``seed``."""

    def __init__(self, seed, migrations, faults, with_volume_share=0.5,
                 spacing=60, min_each=None, min_cutting_over=None,
                 max_user=None):
        if migrations < 1:
            raise ValueError('a soak needs at least one migration')
        if faults < 0:
            raise ValueError('faults: %d < 0' % faults)
        self.seed = seed
        rng = random.Random(seed)
        self.migrations = []
        for i in range(migrations):
            start = 0 if i == 0 else round(i * spacing *
                                           rng.uniform(0.5, 1.5))
            self.migrations.append(MigrationPlan(
                i, start, rng.random() < with_volume_share))
        if not any(m.with_volume for m in self.migrations):
            self.migrations[-1].with_volume = True
        if migrations > 1 and all(m.with_volume for m in self.migrations):
            self.migrations[0].with_volume = False
        # Every kind at least min_each times when the count allows it.
        if min_each is None:
            min_each = 2 if faults >= 2 * len(KINDS) else (
                1 if faults >= len(KINDS) else 0)
        if max_user is None:
            # Most migrations must get to the cutover for it to be tested.
            max_user = max(len(USER_KINDS) * min_each, migrations // 3)
        max_user = min(max_user, migrations)
        if len(USER_KINDS) * min_each > max_user:
            raise ValueError('%d migrations cannot take every user fault '
                             '%d times (at most %d user faults)' % (
                                 migrations, min_each, max_user))
        if len(KINDS) * min_each > faults:
            raise ValueError('%d faults cannot cover the %d kinds %d times '
                             'each' % (faults, len(KINDS), min_each))
        kinds = list(KINDS) * min_each
        user = sum(1 for k in kinds if k in USER_KINDS)
        while len(kinds) < faults:
            k = rng.choice(KINDS)
            if k in USER_KINDS:
                if user >= max_user:
                    continue
                user += 1
            kinds.append(k)
        rng.shuffle(kinds)
        if min_cutting_over is None:
            min_cutting_over = max(1, faults // 6) if faults else 0
        service_faults = [i for i, k in enumerate(kinds)
                          if k in SERVICE_KINDS]
        if min_cutting_over > len(service_faults):
            raise ValueError('%d faults at CUTTING_OVER asked, only %d '
                             'service faults' % (min_cutting_over,
                                                 len(service_faults)))
        # The cutover is the phase that matters most: min_cutting_over
        # service faults are aimed at it, the others at any phase.
        at_cutover = set(rng.sample(service_faults, min_cutting_over))
        self.faults = []
        for i, kind in enumerate(kinds):
            if i in at_cutover:
                phase = CUTTING_OVER
            elif kind == 'user-abort':
                # An abort at CUTTING_OVER is refused (past the point of no
                # return): aimed there too now and then, its answer is
                # checked.
                phase = rng.choice(PHASES)
            elif kind in USER_KINDS:
                phase = rng.choice(PHASES[:-1])
            else:
                phase = rng.choice(PHASES)
            delay = round(rng.uniform(0, 4), 1) if phase == CUTTING_OVER \
                else round(rng.uniform(0, 2), 1)
            self.faults.append(FaultPlan(i, kind, phase, delay,
                                         hold_for(kind, rng)))

    def counts(self):
        """{kind: n}, {phase: n} of the planned faults."""
        kinds, phases = {}, {}
        for f in self.faults:
            kinds[f.kind] = kinds.get(f.kind, 0) + 1
            phases[f.phase] = phases.get(f.phase, 0) + 1
        return kinds, phases

    def as_dict(self):
        return {'seed': self.seed,
                'migrations': [m.as_dict() for m in self.migrations],
                'faults': [f.as_dict() for f in self.faults]}
