"""Test doubles for the two things nova_fedex asks outside Nova."""

import os
import sys

from nova.tests.fixtures import libvirt as fakelibvirt

from lsrp import exception
from nova_fedex import manager_client


def api_paste_config():
    """The wheel installs Nova's paste file under <venv>/etc/nova."""
    return os.path.join(sys.prefix, 'etc', 'nova', 'api-paste.ini')


def plan_for(server_id, src_disks, monitors, state='cutting_over',
             volumes=None):
    """The manager's plan for the disks of a domain (rbd_xml.rbd_disks)."""
    volumes = volumes or {}
    disks = []
    for _dev, name, _hosts, _user, _secret in src_disks:
        volume_id = volumes.get(name)
        kind = 'volume' if volume_id else (
            'root' if name.endswith('_disk') else name.rsplit('.', 1)[-1])
        disks.append({'kind': kind, 'source': name,
                      'destination': 'vms-b/' + name.split('/', 1)[1]
                      if not volume_id else 'volumes-b/' +
                      name.split('/', 1)[1],
                      'volume_id': volume_id})
    return manager_client.CutoverPlan.from_dict({
        'id': 'f0e1d2c3-0000-4000-8000-%012d' % len(disks),
        'state': state, 'server_id': server_id, 'source_site': 'site-a',
        'destination_site': 'site-b', 'shipment_id': 'ship-1',
        'destination_cluster': {'fsid': 'fsid-b', 'monitors': [
            '%s:%s' % m for m in monitors]},
        'terminal': {'host': '127.0.0.1', 'port': 10301,
                     'server_name': 'terminal-site-b'},
        'disks': disks})


class FakeManager(manager_client.ManagerClient):

    def __init__(self):
        self.plans = {}
        self.events = []
        self.asked = []
        self.down = False

    def get_cutover(self, context, instance):
        self.asked.append(instance.uuid)
        if self.down:
            raise exception.ManagerUnavailable(
                request='GET the cutover plan', reason='connection refused')
        return self.plans.get(instance.uuid)

    def report(self, context, plan, event, host, **details):
        self.events.append((event, details))


class FakeDelta(object):
    """Records the final delta's steps and what the guest looked like."""

    def __init__(self, test, plan, failure):
        self.test = test
        self.plan = plan
        self.failure = failure
        self.calls = []
        self.seen = None
        self.changed = self.wire = 0
        self.seconds = 0.0
        self.timings = {}
        self.snapshot = 'fedex-final-%s' % plan.migration_id[:8]

    def open(self):
        self.calls.append('open')
        if self.failure and self.test.deltas_fail_at == 'open':
            raise self.failure
        return self

    def apply(self, timeout):
        self.calls.append('apply')
        dest = self.test.domain('dest')
        try:
            src_running = self.test.domain('src').isActive() == 1
        except fakelibvirt.libvirtError:
            src_running = False
        self.seen = (dest.info()[0], src_running)
        if self.failure and self.test.deltas_fail_at == 'apply':
            raise self.failure
        self.changed, self.wire, self.seconds = 1 << 20, 300000, 0.2
        return self

    def compare(self, timeout):
        """After the resume: A's digest against B's, per disk."""
        self.calls.append('compare')
        return [(d.source, 'a' * 64,
                 self.test.final_state_at_b.get(d.source, 'a' * 64))
                for d in self.plan.disks]

    def close(self):
        self.calls.append('close')
