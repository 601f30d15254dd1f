"""POST /v1/plans: the ship-or-WAN planner over HTTP (nothing is stored)."""

from lsrp.manager.api import handlers
from lsrp.manager.api import schemas
from lsrp.manager.api import util
from lsrp.manager import planner
from lsrp.manager.policies import planning as rules
from lsrp.manager import policy


def build(body):
    """VMProfiles and a Link from a plan body; units parsed, fields named."""
    vms = []
    for i, vm in enumerate(body['vms']):
        field = 'vms/%d/' % i
        size = planner.parse_size(vm['size'], field + 'size')
        vms.append(planner.VMProfile(
            size=size,
            allocated=planner.parse_size(vm.get('allocated', size),
                                         field + 'allocated'),
            write_rate=planner.parse_rate(vm.get('write_rate', 0),
                                          field + 'write_rate'),
            memory=planner.parse_size(vm.get('memory', 0), field + 'memory'),
            count=vm.get('count', 1)))
    link = {'wan_bandwidth': planner.parse_rate(body['wan_bandwidth'],
                                                'wan_bandwidth')}
    for key in ('device_write_rate', 'device_read_rate'):
        if key in body:
            link[key] = planner.parse_rate(body[key], key)
    if 'device_capacity' in body:
        link['device_capacity'] = planner.parse_size(body['device_capacity'],
                                                     'device_capacity')
    for key in ('transit_time', 'downtime_budget'):
        if key in body:
            link[key] = planner.parse_duration(body[key], key)
    for key in ('device_slots', 'parity', 'cost_per_shipment', 'cost_per_device',
                'wan_cost_per_gb'):
        if key in body:
            link[key] = body[key]
    return vms, planner.Link(**link)


def create(req):
    policy.authorize(handlers.context(req), rules.PLAN_CREATE)
    body = util.extract_json(req, schemas.PLAN_CREATE)
    vms, link = build(body)
    result = planner.plan(vms, link).as_dict()
    result['inputs'] = {'vms': [vars(v) for v in vms], 'link': vars(link)}
    if body.get('curve'):
        average = planner.average_vm(vms)
        result['curve'] = [{'vms': c, 'wan_seconds': w, 'fedex_seconds': f}
                           for c, w, f in planner.curve(average, link,
                                                        body['curve'])]
    return util.json_response(200, {'plan': result})
