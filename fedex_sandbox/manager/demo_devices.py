"""The demos' devices: found at home, waited for on their way, made if none.

A demo's seed needs blank devices at site A's terminal. Those of an earlier
run went to site B with the courier and come back once wiped (the
conductor's ``return_devices_home`` job, the simulated courier carrying
their directories home): a demo run again waits for them rather than
making new ones. Devices are made only when too few exist: empty
directories in the terminal's slots, which its agent registers at its
next heartbeat, as an operator plugs a disk in (or registers it with
``openstack fedex device create``).
"""

import time

from fedex_manager.actions import devices as device_actions
from fedex_manager.actions import events as event_actions
from fedex_manager.actions import sites as site_actions
from fedex_manager.db import api as db
from fedex_manager import states
from lsrp import exception

# Not coming home: given up on.
GONE = (states.D_LOST, states.D_MISSING, states.D_DAMAGED)
# Coming home soon: on the road, or BLANK away from home.
COMING = (states.D_RETURNING, states.D_BLANK)


def _terminals(ctx, site):
    return [t['id'] for t in site_actions.terminal_list(ctx, site=site)]


def census(ctx, site):
    """(blank at home, on their way home) devices of ``site``'s terminals."""
    terms = set(_terminals(ctx, site))
    home, coming = [], []
    for d in device_actions.device_list(ctx):
        if d['home_terminal_id'] not in terms or d['state'] in GONE:
            continue
        if d['state'] == states.D_BLANK and d['terminal_id'] in terms:
            home.append(d)
        elif d['state'] in COMING:
            # On the road, or wiped away from home (the conductor sends
            # it home). One still carrying a migration's data (SHIPPED,
            # VERIFIED: its cleanup waits for the retention) is no
            # device a demo can wait for.
            coming.append(d)
    return home, coming


def ready(ctx, dep, site, count, out=print, wait=180, clock=time):
    """``count`` blank devices at ``site``'s terminal; returns them.

    Waits up to ``wait`` seconds for those on their way home; makes the
    ones missing (all of them after the wait) and waits for their
    registration.
    """
    deadline = clock.monotonic() + wait
    said = None
    while True:
        home, coming = census(ctx, site)
        if len(home) >= count:
            return home[:count]
        late = clock.monotonic() > deadline
        missing = count - len(home) - (0 if late else len(coming))
        if missing > 0:
            # Empty directories are blank devices (registered or about
            # to be): those at home, plus the new ones.
            known = {d['serial'] for d in device_actions.device_list(ctx)}
            new = [x for x in dep.make_slots(site, len(home) + missing)
                   if x not in known]
            what = 'new blank device(s) at %s: %s' % (
                site, ', '.join(new)) if new else \
                'waiting for the terminal of %s to register its blank ' \
                'devices' % site
        else:
            what = 'waiting for %d device(s) of %s on their way home: %s' % (
                len(coming), site, ', '.join('%s %s' % (d['serial'], d[
                    'state']) for d in coming))
        if what != said:
            out('  %s' % what)
            said = what
        if late and clock.monotonic() > deadline + 120:
            raise exception.SandboxError(
                reason='%d blank device(s) at %s, not %d, after %d s: see '
                'the terminal agent\'s log' % (len(home), site, count,
                                               wait + 120))
        clock.sleep(1)


def serials_of(ctx, migration):
    """The serials of the devices that carried ``migration``'s seed."""
    sids = {v['shipment_id'] for v in migration['volumes']
            if v['shipment_id']}
    return sorted(d['serial'] for sid in sids
                  for d in db.devices_of(ctx, sid))


def last_event(ctx):
    """The id of the latest event: what :func:`wait_home` shows is after."""
    events = event_actions.events_query(ctx, limit=1, sort_dir='desc')
    return events[0]['id'] if events else None


def wait_home(ctx, serials, after=None, out=print, timeout=180, clock=time):
    """Follow devices until they are BLANK at their home terminal.

    Prints each event of theirs recorded after event ``after`` as it comes
    (the trip home: wiped, packed in a return consignment, handed to the
    courier, delivered, BLANK at home). Returns True when all are home,
    False after ``timeout`` (or when one is LOST).
    """
    deadline = clock.monotonic() + timeout
    markers = dict.fromkeys(serials, after)
    while True:
        done = True
        for serial in serials:
            d = db.get(ctx, 'device', serial)
            for e in event_actions.events_query(
                    ctx, resource_id=d['id'], marker=markers[serial],
                    limit=1000):
                markers[serial] = e['id']
                out('  [device %s] %s' % (serial, e['message']))
            if d['state'] == states.D_LOST:
                return False
            done = done and d['state'] == states.D_BLANK and \
                d['terminal_id'] == d['home_terminal_id']
        if done:
            return True
        if clock.monotonic() > deadline:
            return False
        clock.sleep(1)


def follow_home(ctx, serials, after, out=print, timeout=180):
    """:func:`wait_home` between a line that says so and its outcome."""
    out('the devices go home: %s' % ', '.join(serials))
    home = wait_home(ctx, serials, after, out, timeout)
    out('devices %s' % ('BLANK at their home again: a next run uses them'
                        if home else 'not back home yet'))
    return home
