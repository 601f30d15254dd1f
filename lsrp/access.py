"""Who may send what to this terminal: the access list of each shipment.

``<state_dir>/<shipment>/authorized.json`` names the images of a shipment
that lsrp-server accepts sessions for, where their rounds go (``rbd``: the
images on this site's cluster; ``devices``: the shipment's device set, see
``lsrp.device.receiver``), and optionally the only terminals (certificate
names) that may send them. ``lsrp import`` and ``lsrp authorize`` write it
(``authorize``); lsrp-server reads it for every new session (``check``).
"""

import json
import os

from lsrp import exception
from lsrp import fileutils

FILE = 'authorized.json'


def authorize(state_dir, shipment_id, images, source=None, sink='rbd',
              peers=None):
    """Let lsrp-server accept sessions for these images of a shipment.

    ``sink``: where their rounds go: ``rbd`` or ``devices``.
    ``peers``: the only terminals (certificate names) that may send them;
    None keeps the ones given before (none given: any terminal of the
    deployment's CA).
    """
    path = os.path.join(state_dir, shipment_id, FILE)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if peers is None:
        try:
            with open(path) as f:
                peers = json.load(f).get('peers')
        except (OSError, ValueError):
            pass
    fileutils.write_atomic(path, json.dumps(
        {'images': sorted(images), 'source': source, 'sink': sink,
         'peers': sorted(peers) if peers else None}))


def check(state_dir, shipment, disk, peer, verb='send'):
    """The shipment's entry if ``peer`` may write ``disk``, one of its images.

    Known images: imported here, or declared to be received on devices here;
    and when the shipment names its peers, ``peer`` must be one. Else raise
    NOT_ALLOWED. ``verb`` names what was refused (``send``, ``read``: a
    terminal read as a source obeys the same list).
    """
    path = os.path.join(state_dir, shipment, FILE)
    try:
        with open(path) as f:
            entry = json.load(f)
        allowed = entry['images']
    except (OSError, ValueError, KeyError):
        raise exception.ProtocolError(
            code='NOT_ALLOWED', reason='shipment %s is not known here' %
            shipment)
    if disk not in allowed:
        raise exception.ProtocolError(
            code='NOT_ALLOWED', reason='%s is not an image of shipment %s'
            % (disk, shipment))
    if entry.get('peers') and peer not in entry['peers']:
        raise exception.ProtocolError(
            code='NOT_ALLOWED', reason='terminal %s may not %s shipment %s'
            ' (only %s)' % (peer, verb, shipment, ', '.join(entry['peers'])))
    return entry
