"""The sending terminal's local record of a shipment (never on a device).

``<state_dir>/<shipment id>/record.json`` keeps what was asked (images,
snapshots, devices, layout), the state, and the manifest digest printed at
seal; ``journal.v<N>`` files hold the progress of each manifest version.
"""

import json
import os

from lsrp.device import journal
from lsrp import exception
from lsrp import fileutils


class ShipmentRecord(object):

    def __init__(self, state_dir, shipment_id):
        self.shipment_id = shipment_id
        self.dir = os.path.join(state_dir, shipment_id)
        self.path = os.path.join(self.dir, 'record.json')

    def exists(self):
        return os.path.exists(self.path)

    def load(self):
        try:
            with open(self.path) as f:
                return json.load(f)
        except FileNotFoundError:
            raise exception.ShipmentError(
                shipment=self.shipment_id,
                reason='no record in %s: was it exported on this terminal?'
                % self.dir)

    def save(self, data):
        os.makedirs(self.dir, exist_ok=True)
        fileutils.write_atomic(self.path, json.dumps(data, indent=1))

    def journal(self, version):
        return journal.Journal(os.path.join(self.dir, 'journal.v%06d'
                                            % version))
