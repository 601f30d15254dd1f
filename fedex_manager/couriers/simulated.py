"""The simulated courier of the sandbox and the tests.

It moves a shipment through hand-over, departure, scans and delivery on a
timetable (seconds after dispatch), and can be told to lose or damage it,
to lose some devices, or to deliver it tampered (a device swapped). In the
sandbox it also carries the device directories from the source terminal's
slots to the destination terminal's (``[simulated_courier] move_devices``)
and registers them there, as the destination agent would at its next
heartbeat; a return consignment's devices it carries home the same way
(registered at their home terminal, they are BLANK there again).

Instructions per shipment come from ``[simulated_courier]`` options or from
a JSON file ``<state_path>/courier/<shipment>.json`` written by a test:
``{"fate": "deliver"|"lose"|"damage"|"return", "lose_devices": [serials],
"tamper_devices": [serials],
"timetable": {"hand_over": 0, "depart": 1, "scan": 2, "deliver": 3}}``.
"""

import json
import os
import random
import shutil
import time
import uuid

from oslo_config import cfg

from fedex_manager.actions import devices
from fedex_manager.db import api as db

CONF = cfg.CONF

opts = [
    cfg.DictOpt('timetable',
                default={'hand_over': '0', 'depart': '1', 'scan': '2',
                         'deliver': '3'},
                help='Seconds after dispatch of each carrier event.'),
    cfg.BoolOpt('move_devices', default=False,
                help='Move the device directories to the destination '
                     'terminal\'s slots at delivery (sandbox).'),
    cfg.StrOpt('state_dir', help='Where the courier keeps its timetables '
                                 '(default: [manager] state_path/courier).'),
]
ORDER = ('hand_over', 'depart', 'scan', 'deliver')


def register_opts(conf):
    conf.register_opts(opts, group='simulated_courier')


class SimulatedCourier(object):

    def __init__(self):
        register_opts(CONF)

    def _dir(self):
        return CONF.simulated_courier.state_dir or os.path.join(
            CONF.manager.state_path, 'courier')

    def _path(self, shipment):
        return os.path.join(self._dir(), '%s.json' % shipment['name'])

    def _load(self, shipment):
        try:
            with open(self._path(shipment)) as f:
                return json.load(f)
        except FileNotFoundError:
            return None

    def _save(self, shipment, plan):
        os.makedirs(self._dir(), exist_ok=True)
        tmp = self._path(shipment) + '.tmp'
        with open(tmp, 'w') as f:
            json.dump(plan, f)
        os.replace(tmp, self._path(shipment))

    def dispatch(self, ctx, shipment):
        plan = self._load(shipment) or {}
        if 'dispatched_at' in plan:
            return plan['tracking']
        plan.setdefault('fate', 'deliver')
        plan.setdefault('timetable', {k: float(v) for k, v in
                                      CONF.simulated_courier.timetable.items()})
        plan.update(dispatched_at=time.time(), sent=0,
                    tracking='SIM%010d' % random.randrange(10 ** 10))
        self._save(shipment, plan)
        return plan['tracking']

    def poll(self, ctx, shipment):
        plan = self._load(shipment)
        if not plan or 'dispatched_at' not in plan:
            return []
        elapsed = time.time() - plan['dispatched_at']
        due = []
        fate = plan.get('fate', 'deliver')
        for i, event in enumerate(ORDER):
            at = plan['timetable'].get(event)
            if at is None or elapsed < float(at):
                continue
            if event == 'deliver' and fate != 'deliver':
                event = fate            # lose / damage instead
            due.append({'event': event, 'seq': i + 1,
                        'location': 'sim-hub-%d' % i,
                        'devices_missing': plan.get('lose_devices') or []})
        return [e for e in due if e['seq'] > plan.get('sent', 0)]

    def transit_time(self):
        """Seconds from dispatch to delivery on the default timetable.

        The forecast of a migration request reads it
        (:mod:`fedex_manager.actions.plans`).
        """
        return float(CONF.simulated_courier.timetable.get('deliver', 0))

    def sent(self, shipment, seq):
        plan = self._load(shipment)
        plan['sent'] = max(plan.get('sent', 0), seq)
        self._save(shipment, plan)

    def deliver_devices(self, ctx, shipment, dest_terminal):
        """Sandbox only: carry the device directories to the destination.

        Into the slots dir the destination terminal reports in its
        heartbeat info.
        """
        if not CONF.simulated_courier.move_devices:
            return
        slots = (dest_terminal.get('info') or {}).get('slots_dir')
        if not slots:
            return
        plan = self._load(shipment) or {}
        lost = set(plan.get('lose_devices') or [])
        for d in db.devices_of(ctx, shipment['id']):
            if not d['path'] or not os.path.isdir(d['path']) or \
                    d['serial'] in lost:
                continue
            target = os.path.join(slots, os.path.basename(d['path']))
            if os.path.abspath(target) != os.path.abspath(d['path']):
                os.makedirs(slots, exist_ok=True)
                shutil.move(d['path'], target)
            if d['serial'] in (plan.get('tamper_devices') or []):
                _swap_label(target)
            # Plugged in: registered now, as the destination agent's next
            # heartbeat would (the custody check need not wait for it).
            devices.device_register(ctx, d['serial'], dest_terminal['name'],
                                    d.get('capacity_bytes') or 0, d['slot'],
                                    target)


def _swap_label(path):
    """A device swapped on the way: same serial, another device inside."""
    label = os.path.join(path, 'fedex-device.json')
    with open(label) as f:
        data = json.load(f)
    data['device_id'] = str(uuid.uuid4())
    with open(label, 'w') as f:
        json.dump(data, f)
